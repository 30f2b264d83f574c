package ds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// ovfEnvXML is an OVF environment as vSphere writes it for a vApp's
// properties, each key with its value.
const ovfUserData = "#cloud-config\nhostname: fgt-ovf\n"

var ovfNetwork = "network:\n  version: 2\n  ethernets:\n    ens192:\n      addresses: [10.0.0.5/24]\n"

// cloud-init's read_ovf_environment as the oracle: the same documents,
// broken and odd ones included, give the same meta-data, user-data and
// config (the password aside, which seedinit hashes), or fail alike.
func TestOVFEnvironmentOracle(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceOVF").Run(); err != nil {
		t.Skip("cloud-init oracle unavailable: cannot import cloudinit.sources.DataSourceOVF (install Debian's cloud-init package)")
	}
	docs := map[string]string{
		"full": dstest.OVFEnv([2]string{"instance-id", "iid-fgt-01"}, [2]string{"hostname", "fgt-01"}, [2]string{"public-keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvf admin"},
			[2]string{"user-data", dstest.B64(ovfUserData)}, [2]string{"network-config", dstest.B64(ovfNetwork)}, [2]string{"password", "Passw0rd!"}, [2]string{"seedfrom", ""},
			[2]string{"fgt.license", "ignored"}),
		"raw user-data":            dstest.OVFEnv([2]string{"user-data", "#cloud-config\n"}),
		"user-data wrapped":        dstest.OVFEnv([2]string{"user-data", dstest.B64(ovfUserData)[:8] + "&#10;" + dstest.B64(ovfUserData)[8:]}),
		"user-data with newline":   dstest.OVFEnv([2]string{"user-data", dstest.B64(ovfUserData)[:8] + "\n   " + dstest.B64(ovfUserData)[8:]}),
		"hostname then local":      dstest.OVFEnv([2]string{"hostname", "a"}, [2]string{"local-hostname", "b"}),
		"local then hostname":      dstest.OVFEnv([2]string{"local-hostname", "b"}, [2]string{"hostname", "a"}),
		"key twice":                dstest.OVFEnv([2]string{"instance-id", "one"}, [2]string{"instance-id", "two"}),
		"network without key":      dstest.OVFEnv([2]string{"network-config", dstest.B64("version: 2\n")}),
		"network not base64":       dstest.OVFEnv([2]string{"network-config", "!!"}),
		"network not yaml":         dstest.OVFEnv([2]string{"network-config", dstest.B64("a: [")}),
		"entities":                 dstest.OVFEnv([2]string{"hostname", "a&amp;b&lt;c&quot;"}),
		"no property section":      `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1"><PlatformSection/></Environment>`,
		"empty environment":        `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1"/>`,
		"other root":               `<Envelope xmlns="http://schemas.dmtf.org/ovf/environment/1"><PropertySection/></Envelope>`,
		"key without namespace":    `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><Property key="instance-id" oe:value="x"/></PropertySection></Environment>`,
		"no value":                 `<Environment xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><Property oe:key="instance-id"/></PropertySection></Environment>`,
		"prefixed elements":        `<oe:Environment xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><oe:PropertySection><oe:Property oe:key="instance-id" oe:value="p"/></oe:PropertySection></oe:Environment>`,
		"two property sections":    `<Environment xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><Property oe:key="instance-id" oe:value="first"/></PropertySection><PropertySection><Property oe:key="hostname" oe:value="second"/></PropertySection></Environment>`,
		"nested property":          `<Environment xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><X><Property oe:key="instance-id" oe:value="deep"/></X><Property oe:key="hostname" oe:value="h"/></PropertySection></Environment>`,
		"not xml":                  `instance-id: x`,
		"azure":                    `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:wa="http://schemas.microsoft.com/windowsazure"><wa:ProvisioningSection><wa:Version>1.0</wa:Version></wa:ProvisioningSection></Environment>`,
		"crlf in value":            dstest.OVFEnv([2]string{"hostname", "a\r\nb\tc"}),
		"user-data padding inside": dstest.OVFEnv([2]string{"user-data", "YQ==YQ=="}),
	}
	dir := t.TempDir()
	var names []string
	for name, doc := range docs {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	script := `
import base64, json, sys
from cloudinit.sources import DataSourceOVF as ovf
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        data = f.read().decode()
    try:
        md, ud, cfg = ovf.read_ovf_environment(data, True)
    except Exception as e:
        print(json.dumps({"error": type(e).__name__})); continue
    print(json.dumps({"md": md, "ud": None if ud is None else base64.b64encode(ud).decode(), "cfg": cfg}))
`
	args := []string{"-c", script}
	for _, n := range names {
		args = append(args, filepath.Join(dir, strings.ReplaceAll(n, " ", "_")))
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		t.Fatalf("cloud-init: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	type answer struct {
		Error string         `json:"error"`
		MD    map[string]any `json:"md"`
		UD    *string        `json:"ud"`
		Cfg   map[string]any `json:"cfg"`
	}
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			var want answer
			if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
				t.Fatal(err)
			}
			r, err := readOVFEnvironment([]byte(docs[name]), true)
			if want.Error != "" {
				if err == nil {
					t.Fatalf("cloud-init fails (%s); seedinit read %+v", want.Error, r)
				}
				return
			}
			if err != nil {
				t.Fatalf("cloud-init reads it; seedinit: %v", err)
			}
			got := answer{MD: r.meta, Cfg: map[string]any{}}
			if r.userData != nil {
				s := base64.StdEncoding.EncodeToString(r.userData)
				got.UD = &s
			}
			if r.password != nil {
				got.Cfg["password"] = *r.password
			}
			// cloud-init keeps the network config's inner mapping in md;
			// seedinit keeps the document as served, which holds it.
			if nc, ok := want.MD["network-config"]; ok {
				if nc != nil {
					var inner any
					if err := json.Unmarshal(mustJSON(t, r.network), &inner); err != nil || !cmp.Equal(inner.(map[string]any)["network"], nc) {
						t.Errorf("network config %q, cloud-init's %v", r.network, nc)
					}
				} else if r.network != nil {
					t.Errorf("network config %q; cloud-init has none", r.network)
				}
				delete(want.MD, "network-config")
			} else if r.network != nil {
				t.Errorf("network config %q; cloud-init has none", r.network)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

// mustJSON turns a YAML document into JSON through seed's YAML reader.
func mustJSON(t *testing.T, yamlDoc []byte) []byte {
	t.Helper()
	v, err := yaml11.Load(yamlDoc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An OVF environment on the VM's CD-ROM, found by its content as
// cloud-init finds it (whatever the disc's label), read whole: the
// metadata, the user-data decoded, the network config, the password
// hashed in the datasource's config and nowhere else.
func TestOVFOnISO(t *testing.T) {
	env := dstest.OVFEnv([2]string{"instance-id", "iid-fgt-01"}, [2]string{"hostname", "fgt-01"},
		[2]string{"public-keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvf admin"},
		[2]string{"user-data", dstest.B64(ovfUserData)}, [2]string{"network-config", dstest.B64(ovfNetwork)}, [2]string{"password", "Passw0rd!"})
	for _, label := range []string{"OVF ENV", "CDROM", ""} {
		t.Run("label "+label, func(t *testing.T) {
			img := dstest.ISO(t, label, map[string]string{"ovf-env.xml": env}, "-J", "-r")
			e := newTestEnv(t, FileDevices{"/dev/sr0": img}, MapDMI{"product_name": "VMware Virtual Platform"}, "")
			ev, err := ovfDatasource{}.Probe(context.Background(), e)
			if err != nil || ev.Verdict != Found || !strings.Contains(ev.Reason, "/dev/sr0") {
				t.Fatalf("Probe = %+v, %v", ev, err)
			}
			s, err := ovfDatasource{}.Fetch(context.Background(), e)
			if err != nil {
				t.Fatal(err)
			}
			if s.Datasource != "OVF" || s.InstanceID != "iid-fgt-01" || s.LocalHostname != "fgt-01" || len(s.PublicKeys) != 1 ||
				string(s.UserData) != ovfUserData || string(s.NetworkConfig) != ovfNetwork || s.NetworkFormat != "v2" ||
				s.Subplatform != "ovf (/dev/sr0)" || s.Platform != "ovf" {
				t.Errorf("seed %+v", s)
			}
			pw, _ := s.Config["password"].(string)
			if !strings.HasPrefix(pw, "$6$") {
				t.Errorf("password in the config: %q, want a SHA-512 crypt hash", pw)
			}
			if b, _ := json.Marshal(s); strings.Contains(string(b), "Passw0rd!") {
				t.Errorf("the password is in the seed in clear")
			}
		})
	}
	// The plain ISO9660 name (OVF_ENV.XML;1) serves as well.
	t.Run("plain ISO9660 upper-case name", func(t *testing.T) {
		img := dstest.ISO(t, "OVFENV", map[string]string{"OVF_ENV.XML": env})
		s, err := ovfDatasource{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err != nil || s.InstanceID != "iid-fgt-01" {
			t.Fatalf("Fetch: %v %+v", err, s)
		}
	})
}

// Discs that are not an OVF transport are passed over, as cloud-init
// passes them over: another datasource's seed disk, Azure's provisioning
// disc, an ovf-env.xml without properties, a disk that is no CD-ROM.
func TestOVFNotFound(t *testing.T) {
	env := dstest.OVFEnv([2]string{"instance-id", "iid-x"})
	azure := `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:wa="http://schemas.microsoft.com/windowsazure"><wa:ProvisioningSection><wa:Version>1.0</wa:Version></wa:ProvisioningSection></Environment>`
	for _, tc := range []struct {
		name string
		dev  string
		dmi  MapDMI
		img  func(t *testing.T) string
	}{
		{"a cidata disk", "/dev/sr0", nil, func(t *testing.T) string {
			return dstest.ISO(t, "cidata", map[string]string{"ovf-env.xml": env, "meta-data": "", "user-data": ""}, "-J", "-r")
		}},
		{"a virtio disk", "/dev/vdb", nil, func(t *testing.T) string {
			return dstest.ISO(t, "OVF ENV", map[string]string{"ovf-env.xml": env}, "-J", "-r")
		}},
		{"Azure's disc", "/dev/sr0", nil, func(t *testing.T) string {
			return dstest.ISO(t, "rd_rdfe", map[string]string{"ovf-env.xml": azure}, "-J", "-r")
		}},
		{"on Azure", "/dev/sr0", MapDMI{"chassis_asset_tag": azureChassisAssetTag}, func(t *testing.T) string {
			return dstest.ISO(t, "OVF ENV", map[string]string{"ovf-env.xml": env}, "-J", "-r")
		}},
		{"a disc without it", "/dev/sr0", nil, func(t *testing.T) string { return dstest.ISO(t, "DATA", map[string]string{"readme": "x"}, "-J", "-r") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, FileDevices{tc.dev: tc.img(t)}, tc.dmi, "")
			ev, err := ovfDatasource{}.Probe(context.Background(), e)
			if err != nil || ev.Verdict != NotFound {
				t.Errorf("Probe = %+v, %v", ev, err)
			}
		})
	}
}

// The seed directory, as cloud-init reads it: its network-config is not
// read (cloud-init reads it from the transports only).
func TestOVFSeedDir(t *testing.T) {
	e := newTestEnv(t, nil, nil, "")
	writeTarget(t, e, map[string]string{ovfSeedDir + "/ovf-env.xml": dstest.OVFEnv([2]string{"hostname", "seeded"}, [2]string{"network-config", dstest.B64(ovfNetwork)})})
	ev, err := ovfDatasource{}.Probe(context.Background(), e)
	if err != nil || ev.Verdict != Found {
		t.Fatalf("Probe = %+v, %v", ev, err)
	}
	s, err := ovfDatasource{}.Fetch(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "iid-dsovf" || s.LocalHostname != "seeded" || s.NetworkConfig != nil || s.Subplatform != "ovf ("+ovfSeedDir+"/ovf-env.xml)" {
		t.Errorf("seed %+v", s)
	}
}

// seedfrom in the properties: a directory in the target (cloud-init's
// OVF) whose meta-data the properties win over and whose user-data
// replaces theirs.
func TestOVFSeedFrom(t *testing.T) {
	e := newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "OVF ENV", map[string]string{
		"ovf-env.xml": dstest.OVFEnv([2]string{"hostname", "from-ovf"}, [2]string{"seedfrom", "file:///srv/seed/"}, [2]string{"user-data", dstest.B64("#cloud-config\n")}),
	}, "-J", "-r")}, nil, "")
	writeTarget(t, e, map[string]string{"/srv/seed/meta-data": "instance-id: i-seeded\nlocal-hostname: from-seed\n", "/srv/seed/user-data": "#cloud-config\nseeded: true\n"})
	s, err := ovfDatasource{}.Fetch(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "i-seeded" || s.LocalHostname != "from-ovf" || string(s.UserData) != "#cloud-config\nseeded: true\n" || !strings.Contains(s.Subplatform, "file:///srv/seed/") {
		t.Errorf("seed %+v", s)
	}
}

// A signed OVF seed: the manifest and its signature travel as the
// properties seedinit.seed-manifest and seedinit.seed-manifest.sig
// (base64), over the meta-data the properties give (their canonical
// JSON), the user-data and the network config as decoded. Under require
// it is applied; unsigned, or with a property changed after signing, it
// is not, and an attacker's property added beside the signed ones is
// left out.
func TestOVFSigned(t *testing.T) {
	priv, keys := signingKey(t)
	meta := map[string]any{"instance-id": "iid-fgt-01", "local-hostname": "fgt-01", "public-keys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvf admin"}
	canonical, err := OVFMetaDocument(meta)
	if err != nil {
		t.Fatal(err)
	}
	m, sig := signedManifest(t, priv, map[string]string{"meta-data": string(canonical), "user-data": ovfUserData, "network-config": ovfNetwork})
	signedProps := [][2]string{{"instance-id", "iid-fgt-01"}, {"hostname", "fgt-01"}, {"public-keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvf admin"},
		{"user-data", dstest.B64(ovfUserData)}, {"network-config", dstest.B64(ovfNetwork)}, {OVFManifestProperty, dstest.B64(m)}, {OVFManifestSignatureProperty, dstest.B64(sig)}}
	decide := func(t *testing.T, props [][2]string) (*seed.Seed, *trust.Decision) {
		t.Helper()
		img := dstest.ISO(t, "OVF ENV", map[string]string{"ovf-env.xml": dstest.OVFEnv(props...)}, "-J", "-r")
		s, err := ovfDatasource{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err != nil {
			t.Fatal(err)
		}
		return trust.Decide(s, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
	}
	t.Run("signed", func(t *testing.T) {
		s, d := decide(t, signedProps)
		if d.Refused() || s.LocalHostname != "fgt-01" || string(s.UserData) != ovfUserData || string(s.NetworkConfig) != ovfNetwork || len(s.PublicKeys) != 1 {
			t.Errorf("%+v\n%+v", s, d.Parts)
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		s, d := decide(t, signedProps[:5])
		if !d.Refused() || s.UserData != nil || s.LocalHostname != "" {
			t.Errorf("%+v\n%+v", s, d.Parts)
		}
	})
	t.Run("an attacker's key added", func(t *testing.T) {
		p := slices.Clone(signedProps)
		p[2][1] += "\n" + attackerKey
		s, d := decide(t, p)
		if slices.Contains(s.PublicKeys, attackerKey) || !d.Refused() {
			t.Errorf("%+v\n%+v", s, d.Parts)
		}
	})
	t.Run("user-data changed", func(t *testing.T) {
		p := slices.Clone(signedProps)
		p[3][1] = dstest.B64(ovfUserData + "runcmd: [evil]\n")
		s, d := decide(t, p)
		if s.UserData != nil || !d.Refused() {
			t.Errorf("%+v\n%+v", s, d.Parts)
		}
	})
}

func FuzzOVFEnvironment(f *testing.F) {
	f.Add([]byte(dstest.OVFEnv([2]string{"instance-id", "x"}, [2]string{"user-data", dstest.B64("#cloud-config\n")}, [2]string{"network-config", dstest.B64(ovfNetwork)})))
	f.Add([]byte(`<Environment xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><Property oe:key="a" oe:value="b"/></PropertySection></Environment>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := readOVFEnvironment(data, true)
		if err != nil {
			return
		}
		// What reads has a meta-data document that reads back alike.
		doc, err := OVFMetaDocument(r.meta)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := seed.ReadNoCloudMeta(doc, "iid-dsovf"); err != nil && r.meta["instance-id"] != "" {
			t.Fatalf("the meta-data document %q does not read: %v", doc, err)
		}
	})
}
