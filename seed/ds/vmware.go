package ds

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/vmware"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() { Register(vmwareDatasource{}) }

// vmwareDatasource is cloud-init's DataSourceVMware over the guestinfo
// transport: guestinfo.metadata, .userdata and .vendordata, each with its
// .encoding (base64, b64, gzip+base64, gz+b64), the network config in the
// metadata (network, network.encoding), the instance-id falling back to
// the SMBIOS system UUID; read through VMware's backdoor (seed/vmware)
// rather than vmware-rpctool, which an appliance does not have. The
// backdoor is opened only behind its gate (CPUID and DMI both saying
// VMware); anywhere else the source is not found, the port untouched.
type vmwareDatasource struct{}

func (vmwareDatasource) Name() string       { return "VMware" }
func (vmwareDatasource) NeedsNetwork() bool { return false }

// The seams to the machine: CPUID, and the port behind the gate. Tests
// give an emulated VMX (vmwaretest) behind a CPU that says VMware; the
// gate is the same.
var (
	vmwareCPU     = vmware.ReadCPU
	vmwarePortFor = vmware.Open
)

// EmulateVMwareForTest is for tests only, this package's and those above
// it that run a seed through the stages: until restore is called, the
// VMware and OVF datasources find port (an emulated VMX,
// seed/vmware/vmwaretest) behind a CPU that says VMware. The gate is the
// same: the Env's DMI must say VMware too. It sets package state, so the
// tests that call it must not run in parallel.
func EmulateVMwareForTest(port vmware.Port) (restore func()) {
	oldCPU, oldPort := vmwareCPU, vmwarePortFor
	vmwareCPU = func() vmware.CPU { return vmware.CPU{Hypervisor: true, Vendor: "VMwareVMware"} }
	vmwarePortFor = func(cpu vmware.CPU, dmi vmware.DMI) (vmware.Port, error) {
		if err := vmware.Gate(cpu, dmi); err != nil {
			return nil, err
		}
		return port, nil
	}
	return func() { vmwareCPU, vmwarePortFor = oldCPU, oldPort }
}

// backdoor is the machine's VMware backdoor, or why it stays shut.
func backdoor(env *Env) (vmware.Port, error) {
	return vmwarePortFor(vmwareCPU(), vmware.DMI{SysVendor: env.DMIField("sys_vendor"), ProductName: env.DMIField("product_name")})
}

// The guestinfo keys that carry a signed seed's manifest and its
// signature (base64 each, as the OVF properties).
const (
	GuestinfoManifestKey          = "seedinit.seed-manifest"
	GuestinfoManifestSignatureKey = "seedinit.seed-manifest.sig"
)

// guestinfoEmpty is what cloud-init's redact leaves in a key.
const guestinfoEmpty = "---"

func (vmwareDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	port, err := backdoor(env)
	if err != nil {
		return Evidence{Reason: "VMware backdoor left shut: " + err.Error()}, nil
	}
	for _, key := range []string{"metadata", "userdata", "vendordata"} {
		v, err := guestinfoRaw(port, key)
		if err != nil {
			return Evidence{Reason: "VMware, guestinfo unreadable"}, err
		}
		if v != nil {
			return Evidence{Verdict: Found, Reason: "guestinfo." + key + " in VMware's guestinfo (backdoor RPC)"}, nil
		}
	}
	return Evidence{Reason: "VMware, but no guestinfo.metadata, .userdata or .vendordata"}, nil
}

func (d vmwareDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	port, err := backdoor(env)
	if err != nil {
		return nil, fmt.Errorf("read VMware guestinfo: the backdoor stays shut: %w", err)
	}
	var parts [3][]byte
	for i, key := range []string{"metadata", "userdata", "vendordata"} {
		if parts[i], err = guestinfoValue(port, key); err != nil {
			return nil, fmt.Errorf("read VMware guestinfo: %w", err)
		}
	}
	md, ud, vd := parts[0], parts[1], parts[2]
	if md == nil && ud == nil && vd == nil {
		return nil, errors.New("read VMware guestinfo: no guestinfo.metadata, .userdata or .vendordata")
	}
	uuid := env.DMIField("product_uuid")
	m, err := vmwareMeta(md, uuid)
	if err != nil {
		return nil, fmt.Errorf("read VMware guestinfo.metadata: %w", err)
	}
	s := &seed.Seed{
		Datasource: "VMware", Platform: "vmware", CloudName: "vmware",
		Subplatform: "guestinfo (guestinfo.metadata)",
		UserData:    ud, VendorData: vd, MetaRaw: md,
		NetworkConfig: m.NetworkConfig, NetworkFormat: m.NetworkFormat,
	}
	s.SetMeta(m)
	where := func(key string) string { return "guestinfo." + key }
	if md != nil {
		doc := seed.Document{Part: "meta-data", Where: where("metadata"), Content: md}
		if mm, err := vmwareMeta(md, uuid); err != nil {
			doc.MetaErr = err.Error()
		} else {
			doc.Meta = &mm
		}
		s.AddDocument(doc)
	}
	if ud != nil {
		s.AddDocument(seed.Document{Part: "user-data", Where: where("userdata"), Content: ud})
	}
	if vd != nil {
		s.AddDocument(seed.Document{Part: "vendor-data", Where: where("vendordata"), Content: vd})
	}
	manifest, _, err := vmware.GuestInfo(port, GuestinfoManifestKey)
	if err != nil {
		return nil, fmt.Errorf("read VMware guestinfo: %w", err)
	}
	sig, _, err := vmware.GuestInfo(port, GuestinfoManifestSignatureKey)
	if err != nil {
		return nil, fmt.Errorf("read VMware guestinfo: %w", err)
	}
	if manifest != nil || sig != nil {
		s.Manifests = append(s.Manifests, seed.SignedManifest{Where: where(GuestinfoManifestKey), Manifest: base64OrRaw(manifest), Signature: base64OrRaw(sig)})
	}
	return s, nil
}

// base64OrRaw decodes a manifest value; one that is not base64 is kept
// as it is, for the check to refuse and say why.
func base64OrRaw(b []byte) []byte {
	if b == nil {
		return nil
	}
	if d, err := seed.DecodeBase64(b); err == nil {
		return d
	}
	return b
}

// vmwareMeta reads guestinfo.metadata as cloud-init's DataSourceVMware
// does: JSON, else YAML, a mapping; its network (a mapping, or text in
// network.encoding) is the network config; the instance-id is its own or
// the SMBIOS system UUID in lower case; the keys public-keys-data,
// public_keys_data, public-keys, public_keys, the first there.
func vmwareMeta(raw []byte, systemUUID string) (seed.Meta, error) {
	md := map[string]any{}
	if len(raw) > 0 {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			if v, err = yaml11.Load(raw); err != nil {
				return seed.Meta{}, fmt.Errorf("parse: %w", err)
			}
		} else {
			v = normalizeJSON(v)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return seed.Meta{}, fmt.Errorf("want a mapping, got %T", v)
		}
		if m != nil {
			md = m
		}
	}
	m := seed.Meta{Metadata: md}
	if network, ok := md["network"]; ok && network != nil {
		enc, _ := md["network.encoding"].(string)
		cfg, err := vmwareNetwork(network, enc)
		if err != nil {
			return seed.Meta{}, err
		}
		if cfg != nil {
			b, _ := json.Marshal(cfg)
			format, err := seed.NetworkConfigFormat(b)
			if err != nil {
				return seed.Meta{}, fmt.Errorf("network: %w", err)
			}
			m.NetworkConfig, m.NetworkFormat = b, format
		}
	}
	if id := scalar(md["instance-id"]); id != "" {
		m.InstanceID = id
	} else if systemUUID != "" {
		m.InstanceID = strings.ToLower(systemUUID)
		md["instance-id"] = m.InstanceID
	} else {
		return seed.Meta{}, errors.New("no instance-id, and no SMBIOS system UUID to take for one")
	}
	m.LocalHostname = scalar(md["local-hostname"])
	for _, k := range []string{"public-keys-data", "public_keys_data", "public-keys", "public_keys"} {
		if v, ok := md[k]; ok {
			m.PublicKeys = seed.NormalizePublicKeys(v)
			break
		}
	}
	return m, nil
}

// vmwareNetwork is process_metadata's network config: a mapping as it
// is, or text decoded by its encoding, then JSON or YAML.
func vmwareNetwork(network any, enc string) (any, error) {
	if m, ok := network.(map[string]any); ok {
		return m, nil
	}
	text, ok := network.(string)
	if !ok {
		return nil, fmt.Errorf("network: want a mapping or encoded text, got %T", network)
	}
	b, err := guestinfoDecode("metadata.network", enc, []byte(text))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		if v, err = yaml11.Load(b); err != nil {
			return nil, fmt.Errorf("network: parse: %w", err)
		}
	} else {
		v = normalizeJSON(v)
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil // a network key in it stays, read as it is everywhere
	}
	return nil, fmt.Errorf("network: want a mapping, got %T", v)
}

// guestinfoRaw is a key's value as cloud-init takes it: nil when it is
// missing, empty once its trailing spaces are off, or cloud-init's
// redacted "---".
func guestinfoRaw(port vmware.Port, key string) ([]byte, error) {
	v, found, err := vmware.GuestInfo(port, key)
	if err != nil || !found {
		return nil, err
	}
	v = bytes.TrimRight(v, " \t\r\n\v\f")
	if len(v) == 0 || string(v) == guestinfoEmpty {
		return nil, nil
	}
	return v, nil
}

// guestinfoValue is a key's value decoded as its .encoding says.
func guestinfoValue(port vmware.Port, key string) ([]byte, error) {
	v, err := guestinfoRaw(port, key)
	if err != nil || v == nil {
		return nil, err
	}
	enc, err := guestinfoRaw(port, key+".encoding")
	if err != nil {
		return nil, err
	}
	return guestinfoDecode("guestinfo."+key, string(enc), v)
}

// maxGuestinfoDecoded bounds a gzip'd value once decompressed: user-data's
// own bound.
const maxGuestinfoDecoded = 16 << 20

// guestinfoDecode is cloud-init's decode: gzip+base64 (gz+b64) and
// base64 (b64) decoded, anything else plain text. gzip+base64 that is not
// gzip is taken as the base64 alone, as cloud-init's decomp_gzip does.
func guestinfoDecode(what, enc string, v []byte) ([]byte, error) {
	switch enc {
	case "gzip+base64", "gz+b64":
		b, err := seed.DecodeBase64(v)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", what, enc, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return b, nil
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxGuestinfoDecoded+1))
		if err != nil {
			return b, nil
		}
		if len(out) > maxGuestinfoDecoded {
			return nil, fmt.Errorf("%s (%s): more than %d bytes decompressed", what, enc, maxGuestinfoDecoded)
		}
		return out, nil
	case "base64", "b64":
		b, err := seed.DecodeBase64(v)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", what, enc, err)
		}
		return b, nil
	}
	return v, nil
}

// guestinfoOvfEnv is guestinfo.ovfEnv, the OVF environment as vSphere's
// "VMware Tools" transport gives it; nil when the backdoor stays shut or
// the key is not there.
func guestinfoOvfEnv(env *Env) []byte {
	port, err := backdoor(env)
	if err != nil {
		return nil
	}
	v, err := guestinfoRaw(port, "ovfEnv")
	if err != nil {
		env.Logger().Warn("read guestinfo.ovfEnv", "error", err.Error())
		return nil
	}
	return v
}

// ReportReady clears the guestinfo keys the metadata's redact (or its
// older name, cleanup-guestinfo) lists, as cloud-init does once it has
// read them: guestinfo stays readable by any process of the guest, and
// these hold secrets. Each is set to "---" and its .encoding emptied. It
// runs once PID 1's stages are over.
func (vmwareDatasource) ReportReady(ctx context.Context, env *Env, s *seed.Seed) error {
	var keys []string
	for _, k := range []string{"redact", "cleanup-guestinfo"} {
		switch v := s.Metadata[k].(type) {
		case string:
			keys = []string{v}
		case []any:
			for _, e := range v {
				if str, ok := e.(string); ok {
					keys = append(keys, str)
				}
			}
		}
		if keys != nil {
			break
		}
	}
	if len(keys) == 0 {
		return nil
	}
	port, err := backdoor(env)
	if err != nil {
		return fmt.Errorf("redact guestinfo: %w", err)
	}
	var errs []error
	for _, k := range keys {
		if err := vmware.SetGuestInfo(port, k, guestinfoEmpty); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := vmware.SetGuestInfo(port, k+".encoding", " "); err != nil {
			errs = append(errs, err)
		}
		env.Logger().Info("guestinfo key redacted", "key", "guestinfo."+k)
	}
	return errors.Join(errs...)
}

var _ ReadyReporter = vmwareDatasource{}
