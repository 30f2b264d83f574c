package seedimg

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// ovfLabel is the OVF environment disc's volume label: one ds-identify
// knows (it finds the disc by content anyway).
const ovfLabel = "OVFENV"

// ovfMetaKeys are the meta-data keys an OVF environment carries, as the
// properties cloud-init's OVF datasource reads.
var ovfMetaKeys = []struct{ meta, property string }{
	{"instance-id", "instance-id"},
	{"local-hostname", "hostname"},
	{"hostname", "hostname"},
	{"public-keys", "public-keys"},
	{"seedfrom", "seedfrom"},
}

// ovfLayout is an OVF environment (ovf-env.xml) holding the seed as the
// vApp properties cloud-init's OVF datasource reads: instance-id,
// hostname, public-keys (one a line), seedfrom, user-data (base64) and
// network-config (base64 of YAML under a network key); signed, with
// the manifest and its signature as the seedinit.seed-manifest
// properties, over the parts as the datasource reads them back.
func ovfLayout(o Options) (map[string][]byte, error) {
	if o.VendorData != nil {
		return nil, errors.New("lay out OVF environment: an OVF environment has no vendor-data")
	}
	if len(o.Files) > 0 {
		return nil, errors.New("lay out OVF environment: injected files are a config drive's (--kind configdrive)")
	}
	md, err := parseMetaData(o.MetaData)
	if err != nil {
		return nil, err
	}
	var props [][2]string
	done := map[string]bool{}
	for _, k := range ovfMetaKeys {
		v, ok := md[k.meta]
		if !ok || done[k.property] {
			continue
		}
		s, err := ovfPropertyValue(k.meta, v)
		if err != nil {
			return nil, err
		}
		props = append(props, [2]string{k.property, s})
		done[k.property] = true
	}
	var other []string
	for k := range md {
		if !done[k] && k != "local-hostname" && k != "hostname" {
			other = append(other, k)
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		return nil, fmt.Errorf("lay out OVF environment: meta-data keys %s have no OVF property (cloud-init reads instance-id, hostname, public-keys, seedfrom)", strings.Join(other, ", "))
	}
	if o.UserData != nil {
		props = append(props, [2]string{"user-data", base64.StdEncoding.EncodeToString(o.UserData)})
	}
	if o.NetworkConfig != nil {
		nc, err := ovfNetworkConfig(o.NetworkConfig)
		if err != nil {
			return nil, err
		}
		props = append(props, [2]string{"network-config", base64.StdEncoding.EncodeToString(nc)})
	}
	doc := ovfEnvironmentXML(props)
	if o.Sign != nil {
		parts, err := ds.OVFParts(doc)
		if err != nil {
			return nil, fmt.Errorf("lay out OVF environment: %w", err)
		}
		manifest, sig, err := o.Sign(SignInput{Parts: parts})
		if err != nil {
			return nil, fmt.Errorf("sign the OVF environment: %w", err)
		}
		props = append(props, [2]string{ds.OVFManifestProperty, base64.StdEncoding.EncodeToString(manifest)},
			[2]string{ds.OVFManifestSignatureProperty, base64.StdEncoding.EncodeToString(sig)})
		doc = ovfEnvironmentXML(props)
	}
	return map[string][]byte{"ovf-env.xml": doc}, nil
}

// ovfPropertyValue is a meta-data value as a property's text: scalars as
// they are, a list of public keys one a line.
func ovfPropertyValue(key string, v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case int, int64, float64, bool:
		return fmt.Sprint(t), nil
	case []any:
		if key == "public-keys" {
			keys := seed.NormalizePublicKeys(t)
			return strings.Join(keys, "\n"), nil
		}
	}
	return "", fmt.Errorf("lay out OVF environment: meta-data %s: want a string, got %T", key, v)
}

// ovfNetworkConfig is the network config under a network key, as the
// property wants it: as given when it has one, else wrapped (as JSON,
// which is YAML).
func ovfNetworkConfig(nc []byte) ([]byte, error) {
	v, err := yaml11.Load(nc)
	if err != nil {
		return nil, fmt.Errorf("lay out OVF environment: parse network-config: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("lay out OVF environment: network-config: want a mapping, got %T", v)
	}
	if _, ok := m["network"].(map[string]any); ok {
		return nc, nil
	}
	b, err := json.Marshal(map[string]any{"network": m})
	if err != nil {
		return nil, fmt.Errorf("lay out OVF environment: network-config: %w", err)
	}
	return append(b, '\n'), nil
}

// ovfEnvironmentXML writes the environment document with props in order.
func ovfEnvironmentXML(props [][2]string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:oe="http://schemas.dmtf.org/ovf/environment/1" oe:id="">
  <PlatformSection>
    <Kind>seedinit seed build</Kind>
  </PlatformSection>
  <PropertySection>
`)
	for _, p := range props {
		fmt.Fprintf(&b, "    <Property oe:key=\"%s\" oe:value=\"%s\"/>\n", attrEscape(p[0]), attrEscape(p[1]))
	}
	b.WriteString("  </PropertySection>\n</Environment>\n")
	return b.Bytes()
}

// attrEscape escapes an attribute value so that it reads back as it is:
// a line break or tab as a character reference, which attribute-value
// normalization keeps.
func attrEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\n':
			b.WriteString("&#10;")
		case '\r':
			b.WriteString("&#13;")
		case '\t':
			b.WriteString("&#9;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
