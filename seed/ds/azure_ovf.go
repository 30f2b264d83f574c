package ds

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/seedinit/seedinit/seed/shacrypt"
)

// Where cloud-init 22.4 looks for ovf-env.xml, after its seed directory:
// the provisioning CD, any other ISO9660 disc, and the copy the agent keeps
// (the CD is ejected after the first boot; the copy has the password
// redacted).
const (
	azureSeedDir          = "/var/lib/cloud/seed/azure"
	azureProvisioningISO  = "/dev/sr0"
	azureAgentDir         = "/var/lib/waagent"
	azureOvfEnvFile       = "ovf-env.xml"
	azurePasswordRedacted = "REDACTED"
)

// azureNamespace is the wa: of ovf-env.xml's Azure elements.
const azureNamespace = "http://schemas.microsoft.com/windowsazure"

// errNotAzureOvf is cloud-init's NonAzureDataSource: no ovf-env.xml, or
// one without Azure's provisioning section. The search goes on.
var errNotAzureOvf = errors.New("not Azure's ovf-env.xml")

// ovfEnv is what Azure's ovf-env.xml says, read as cloud-init's OvfEnvXml
// reads it. Absent values are nil, as Python's None.
type ovfEnv struct {
	// source is the file as read, for the copy kept in the target.
	source                       []byte
	username, password, hostname *string
	customData                   []byte
	disableSSHPasswordAuth       *bool
	publicKeys                   []map[string]any
	preprovisionedVM             bool
	preprovisionedVMType         *string
}

// xmlNode is the part of an XML element that OvfEnvXml looks at:
// ElementTree's tag and text (the character data before the first child).
type xmlNode struct {
	name     xml.Name
	text     string
	hasText  bool
	children []*xmlNode
}

func parseXMLTree(data []byte) (*xmlNode, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: t.Name}
			if len(stack) == 0 {
				if root != nil {
					return nil, errors.New("more than one root element")
				}
				root = n
			} else {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				if n := stack[len(stack)-1]; len(n.children) == 0 {
					n.text += string(t)
					n.hasText = n.hasText || len(t) > 0
				}
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// azureChildren are node's children named wa:NAME.
func azureChildren(node *xmlNode, name string) []*xmlNode {
	var out []*xmlNode
	for _, c := range node.children {
		if c.name.Space == azureNamespace && c.name.Local == name {
			out = append(out, c)
		}
	}
	return out
}

// ovfFind is OvfEnvXml._find: one child at most, required or not.
func ovfFind(node *xmlNode, name string, required bool) (*xmlNode, error) {
	switch m := azureChildren(node, name); len(m) {
	case 0:
		if required {
			return nil, fmt.Errorf("ovf-env.xml has no %s", name)
		}
		return nil, nil
	case 1:
		return m[0], nil
	default:
		return nil, fmt.Errorf("ovf-env.xml has %d %s, want one", len(m), name)
	}
}

// ovfText is OvfEnvXml._parse_property's text: nil when the element is
// absent or empty.
func ovfText(node *xmlNode, name string, required bool) (*string, error) {
	n, err := ovfFind(node, name, required)
	if err != nil || n == nil || !n.hasText {
		return nil, err
	}
	return &n.text, nil
}

// pyTruth is cloud-init's translate_bool on a string: "true", "1", "on"
// and "yes" in any case, spaces around allowed.
func pyTruth(s *string) bool {
	if s == nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(*s)) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

// parseOvfEnv reads ovf-env.xml. errNotAzureOvf means it is not Azure's
// (there is no ProvisioningSection with content); other errors mean it is
// broken, which fails the datasource as in cloud-init.
func parseOvfEnv(data []byte) (*ovfEnv, error) {
	root, err := parseXMLTree(data)
	if err != nil {
		// Only the line: a syntax error can quote the file, password
		// included.
		var syntax *xml.SyntaxError
		if errors.As(err, &syntax) {
			return nil, fmt.Errorf("invalid ovf-env.xml: XML syntax error on line %d", syntax.Line)
		}
		return nil, fmt.Errorf("invalid ovf-env.xml: %w", err)
	}
	// ElementTree's find() result is false when it has no children.
	if sections := azureChildren(root, "ProvisioningSection"); len(sections) == 0 || len(sections[0].children) == 0 {
		return nil, fmt.Errorf("%w: no ProvisioningSection", errNotAzureOvf)
	}
	provisioning, err := ovfFind(root, "ProvisioningSection", true)
	if err != nil {
		return nil, err
	}
	set, err := ovfFind(provisioning, "LinuxProvisioningConfigurationSet", true)
	if err != nil {
		return nil, err
	}
	o := &ovfEnv{source: data}
	custom, err := ovfText(set, "CustomData", false)
	if err != nil {
		return nil, err
	}
	if custom != nil {
		if o.customData, err = decodePythonBase64(*custom); err != nil {
			return nil, fmt.Errorf("ovf-env.xml: decode base64 CustomData: %w", err)
		}
	}
	if o.username, err = ovfText(set, "UserName", true); err != nil {
		return nil, err
	}
	if o.password, err = ovfText(set, "UserPassword", false); err != nil {
		return nil, err
	}
	if o.hostname, err = ovfText(set, "HostName", true); err != nil {
		return nil, err
	}
	if n, err := ovfFind(set, "DisableSshPasswordAuthentication", false); err != nil {
		return nil, err
	} else if n != nil {
		disable := n.hasText && pyTruth(&n.text)
		o.disableSSHPasswordAuth = &disable
	}
	if o.publicKeys, err = ovfPublicKeys(set); err != nil {
		return nil, err
	}
	platform, err := ovfFind(root, "PlatformSettingsSection", true)
	if err != nil {
		return nil, err
	}
	settings, err := ovfFind(platform, "PlatformSettings", true)
	if err != nil {
		return nil, err
	}
	pps, err := ovfText(settings, "PreprovisionedVm", false)
	if err != nil {
		return nil, err
	}
	o.preprovisionedVM = pyTruth(pps)
	if o.preprovisionedVMType, err = ovfText(settings, "PreprovisionedVMType", false); err != nil {
		return nil, err
	}
	return o, nil
}

// ovfPublicKeys reads SSH/PublicKeys/PublicKey items as cloud-init keeps
// them: fingerprint and path (nil when absent) and value ("" when absent).
func ovfPublicKeys(set *xmlNode) ([]map[string]any, error) {
	ssh, err := ovfFind(set, "SSH", false)
	if err != nil || ssh == nil {
		return nil, err
	}
	keys, err := ovfFind(ssh, "PublicKeys", false)
	if err != nil || keys == nil {
		return nil, err
	}
	var out []map[string]any
	for _, k := range azureChildren(keys, "PublicKey") {
		entry := map[string]any{}
		for _, field := range []string{"Fingerprint", "Path", "Value"} {
			v, err := ovfText(k, field, false)
			if err != nil {
				return nil, err
			}
			key := strings.ToLower(field)
			switch {
			case v != nil:
				entry[key] = *v
			case field == "Value":
				entry[key] = ""
			default:
				entry[key] = nil
			}
		}
		out = append(out, entry)
	}
	return out, nil
}

// decodePythonBase64 decodes as Python's base64.b64decode does by default:
// characters outside the alphabet are dropped, padding is required.
func decodePythonBase64(s string) ([]byte, error) {
	var b strings.Builder
	for _, r := range s {
		if r == '=' || r == '+' || r == '/' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return base64.StdEncoding.DecodeString(b.String())
}

// config is cloud-init's read_azure_ovf: the metadata's local-hostname,
// the user-data and the datasource config (default user, password hash,
// ssh_pwauth). The password itself is hashed here, with random as the
// salt's source, and kept nowhere else.
func (o *ovfEnv) config(random io.Reader) (hostname string, userData []byte, cfg map[string]any, err error) {
	cfg = map[string]any{}
	if o.hostname != nil {
		hostname = *o.hostname
	}
	if len(o.publicKeys) > 0 {
		keys := make([]any, len(o.publicKeys))
		for i, k := range o.publicKeys {
			keys[i] = k
		}
		cfg["_pubkeys"] = keys
	}
	password := ""
	if o.password != nil {
		password = *o.password
	}
	switch {
	case o.disableSSHPasswordAuth != nil:
		cfg["ssh_pwauth"] = !*o.disableSSHPasswordAuth
	case password != "":
		cfg["ssh_pwauth"] = true
	}
	user := map[string]any{}
	if o.username != nil && *o.username != "" {
		user["name"] = *o.username
	}
	if password != "" {
		user["lock_passwd"] = false
		if password != azurePasswordRedacted {
			hash, err := shacrypt.HashPassword(password, random)
			if err != nil {
				return "", nil, nil, fmt.Errorf("hash the ovf-env.xml password: %w", err)
			}
			user["hashed_passwd"] = hash
		}
	}
	if len(user) > 0 {
		cfg["system_info"] = map[string]any{"default_user": user}
	}
	cfg["PreprovisionedVm"] = o.preprovisionedVM
	if o.preprovisionedVMType != nil {
		cfg["PreprovisionedVMType"] = *o.preprovisionedVMType
	} else {
		cfg["PreprovisionedVMType"] = nil
	}
	return hostname, o.customData, cfg, nil
}

// redactOvfPassword sets the text of every UserPassword element to
// REDACTED, as cloud-init does before it keeps ovf-env.xml (an empty one
// too), and leaves every other byte as it was.
func redactOvfPassword(data []byte) ([]byte, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	type edit struct {
		start, end int64
		with       string
	}
	var edits []edit
	var open []bool // per element: is it a UserPassword
	var tagStart, start int64
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errors.New("redact ovf-env.xml: not well-formed XML")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			isPassword := strings.Contains(t.Name.Local, "UserPassword")
			open = append(open, isPassword)
			if isPassword {
				tagStart, start = before, dec.InputOffset()
			}
		case xml.EndElement:
			if !open[len(open)-1] {
				open = open[:len(open)-1]
				continue
			}
			open = open[:len(open)-1]
			switch {
			case before > start: // <P>text</P>
				edits = append(edits, edit{start, before, azurePasswordRedacted})
			case bytes.HasSuffix(data[tagStart:start], []byte("/>")): // <P/>
				name := strings.FieldsFunc(string(data[tagStart+1:start-2]), func(r rune) bool {
					return r == ' ' || r == '\t' || r == '\n' || r == '\r'
				})[0]
				edits = append(edits, edit{start - 2, start, ">" + azurePasswordRedacted + "</" + name + ">"})
			default: // <P></P>
				edits = append(edits, edit{start, start, azurePasswordRedacted})
			}
		}
	}
	var out bytes.Buffer
	last := int64(0)
	for _, e := range edits {
		out.Write(data[last:e.start])
		out.WriteString(e.with)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes(), nil
}

// readOvfEnv looks for ovf-env.xml where cloud-init does and returns the
// first one that is Azure's, with where it was found; nil when there is
// none. A broken one is an error, as in cloud-init.
func readOvfEnv(ctx context.Context, env *Env) (*ovfEnv, string, error) {
	log := env.Logger()
	tryFile := func(dir string) (*ovfEnv, string, error) {
		if env.Root == nil {
			return nil, "", errNotAzureOvf
		}
		p := dir + "/" + azureOvfEnvFile
		data, err := env.Root.ReadFile(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				log.Warn("read Azure provisioning data", "file", p, "err", err)
			}
			return nil, "", errNotAzureOvf
		}
		o, err := parseOvfEnv(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
		return o, "seed-dir (" + dir + ")", nil
	}
	tryDevice := func(dev string) (*ovfEnv, string, error) {
		fsys, done, err := openDevice(env, dev)
		if err != nil {
			// cloud-init's MountFailedError: go on. Azure's own discs
			// are ISO9660; a UDF one is not readable here.
			log.Debug("no Azure provisioning data", "device", dev, "err", err)
			return nil, "", errNotAzureOvf
		}
		defer done()
		data, err := fsys.ReadFile(azureOvfEnvFile)
		if err != nil {
			return nil, "", errNotAzureOvf
		}
		o, err := parseOvfEnv(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s on %s: %w", azureOvfEnvFile, dev, err)
		}
		return o, "config-disk (" + dev + ")", nil
	}
	candidates := []func() (*ovfEnv, string, error){
		func() (*ovfEnv, string, error) { return tryFile(azureSeedDir) },
		func() (*ovfEnv, string, error) { return tryDevice(azureProvisioningISO) },
	}
	if env.Devices != nil {
		devs, err := env.Devices.List(ctx)
		if err != nil {
			log.Warn("list block devices for Azure provisioning data", "err", err)
		}
		for _, d := range devs {
			if d.FSType == "iso9660" && d.Path != azureProvisioningISO {
				candidates = append(candidates, func() (*ovfEnv, string, error) { return tryDevice(d.Path) })
			}
		}
	}
	candidates = append(candidates, func() (*ovfEnv, string, error) { return tryFile(azureAgentDir) })
	for _, try := range candidates {
		o, where, err := try()
		if errors.Is(err, errNotAzureOvf) {
			continue
		}
		return o, where, err
	}
	return nil, "", nil
}
