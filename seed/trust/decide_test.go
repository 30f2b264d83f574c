package trust

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
)

// The attacks these tests make are those a seed's route allows: adding a
// source (a second disk, SMBIOS, fw_cfg, the command line, a seedfrom
// URL), swapping parts, replaying a seed captured elsewhere or long ago.
// The signer is honest and its key is safe.

var now = time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)

const attackerKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttackerAttackerAttackerAttackerAttacker attacker"

// signedParts is what a publisher signs: its parts by role, and the
// manifest's bindings.
type signedParts struct {
	parts map[string]string
	// files are injected files, by path.
	files map[string]string
	bind  Manifest
}

// manifestFor signs a manifest over sp's parts with priv.
func manifestFor(t *testing.T, priv ed25519.PrivateKey, sp signedParts, where string) seed.SignedManifest {
	t.Helper()
	m := sp.bind
	if m.SignedAt.IsZero() {
		m.SignedAt = now.Add(-time.Hour)
	}
	m.Parts = map[string][sha256.Size]byte{}
	for role, content := range sp.parts {
		m.Parts[role] = Digest([]byte(content))
	}
	if len(sp.files) > 0 {
		m.Files = map[string][sha256.Size]byte{}
		for p, content := range sp.files {
			m.Files[p] = Digest([]byte(content))
		}
	}
	body := m.Marshal()
	sig, err := Sign(priv, body)
	if err != nil {
		t.Fatal(err)
	}
	return seed.SignedManifest{Where: where, Manifest: body, Signature: sig}
}

// noCloudSource adds a NoCloud-layout source's parts to s as its
// datasource would: documents, and the merged fields (meta-data found
// earlier wins, user-data found later replaces).
func noCloudSource(t *testing.T, s *seed.Seed, where string, parts map[string]string) {
	t.Helper()
	raw := map[string][]byte{}
	for k, v := range parts {
		raw[k] = []byte(v)
	}
	s.Documents = append(s.Documents, seed.NoCloudDocuments(raw, func(f string) string { return where + "/" + f }, "nocloud")...)
	if md, ok := parts["meta-data"]; ok {
		m, err := seed.ReadNoCloudMeta([]byte(md), "nocloud")
		if err != nil {
			t.Fatal(err)
		}
		if s.Metadata == nil {
			s.SetMeta(m)
			s.MetaRaw = []byte(md)
		} else {
			for k, v := range m.Metadata {
				if _, ok := s.Metadata[k]; !ok {
					s.Metadata[k] = v
				}
			}
			s.PublicKeys = append(s.PublicKeys, m.PublicKeys...)
			if s.LocalHostname == "" {
				s.LocalHostname = m.LocalHostname
			}
			s.MetaRaw = nil
		}
	}
	if ud, ok := parts["user-data"]; ok {
		s.UserData = []byte(ud)
	}
	if vd, ok := parts["vendor-data"]; ok {
		s.VendorData = []byte(vd)
	}
	if nc, ok := parts["network-config"]; ok {
		s.NetworkConfig, s.NetworkFormat = []byte(nc), "v2"
	}
}

func newSeed() *seed.Seed {
	return &seed.Seed{Datasource: "NoCloud", Platform: "nocloud", CloudName: "unknown", Subplatform: "seed-dir (/seed)"}
}

var operator = map[string]string{
	"meta-data":      "instance-id: iid-waf-01\nlocal-hostname: waf-01\npublic-keys: [\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperator ops\"]\n",
	"user-data":      "#cloud-config\nusers: [{name: admin}]\n",
	"network-config": "version: 2\nethernets: {eth0: {dhcp4: true}}\n",
}

var facts = Facts{SystemUUID: "4c4c4544-0042-3510-8052-b3c04f4d4e32", MACs: []string{"52:54:00:12:34:56"}, Now: now}

func verdicts(d *Decision) map[string]string {
	out := map[string]string{}
	for _, f := range d.Parts {
		out[f.Part] = f.Verdict + ": " + f.Detail
	}
	return out
}

func TestDecideSignedSeedIsApplied(t *testing.T) {
	priv, keys := newKey(t)
	s := newSeed()
	noCloudSource(t, s, "/seed", operator)
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "/seed/seed-manifest")}
	got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
	for _, part := range []string{"meta-data", "user-data", "network-config"} {
		if !strings.HasPrefix(verdicts(d)[part], Trusted) {
			t.Errorf("%s: %s", part, verdicts(d)[part])
		}
	}
	if d.Refused() || d.Manifest != "/seed/seed-manifest" || !strings.HasPrefix(d.SignedBy, "SHA256:") {
		t.Errorf("decision %+v", d)
	}
	if got.InstanceID != "iid-waf-01" || got.LocalHostname != "waf-01" || len(got.PublicKeys) != 1 ||
		string(got.UserData) != operator["user-data"] || string(got.NetworkConfig) != operator["network-config"] ||
		got.NetworkFormat != "v2" || string(got.MetaRaw) != operator["meta-data"] || got.Datasource != "NoCloud" {
		t.Errorf("applied %+v", got)
	}
	if errs, _ := d.Report(); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	// Bound to this machine by each kind of binding, among others.
	bound := Manifest{
		SystemUUIDs: []string{"00000000-0000-0000-0000-000000000001", facts.SystemUUID},
		MACs:        []string{"52:54:00:00:00:01", "52:54:00:12:34:56"},
		InstanceIDs: []string{"iid-waf-01"},
		NotBefore:   now.Add(-time.Minute), NotAfter: now.Add(time.Minute),
	}
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator, bind: bound}, "m")}
	if got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts); d.Refused() || got.LocalHostname != "waf-01" {
		t.Errorf("a seed bound to this machine: %+v", d)
	}
}

// Each attack adds or changes what the sources serve around an honest,
// signed seed; under require nothing of the attacker's is applied, and
// the report says what was left out.
func TestDecideAttacks(t *testing.T) {
	priv, keys := newKey(t)
	otherPriv, _ := newKey(t)
	attackerMeta := "instance-id: iid-evil\nlocal-hostname: evil\npublic-keys: [\"" + attackerKey + "\"]\n"
	for _, tc := range []struct {
		name string
		// build makes the seed the datasource hands over.
		build func(t *testing.T) *seed.Seed
		// refused: parts that must not be applied; the rest of the
		// operator's must be.
		refused []string
		detail  string // in the report
	}{{
		name: "signed meta-data holds only seedfrom; the URL serves the attacker's meta-data, unsigned",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			disk := map[string]string{"meta-data": "seedfrom: http://10.0.0.1/\n", "user-data": operator["user-data"]}
			noCloudSource(t, s, "/dev/sr0", disk)
			noCloudSource(t, s, "http://10.0.0.1", map[string]string{"meta-data": attackerMeta, "user-data": operator["user-data"]})
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: disk}, "/dev/sr0/seed-manifest")}
			return s
		},
		detail: "left out: meta-data keys local-hostname, public-keys",
	}, {
		name: "empty signed meta-data; SMBIOS credentials add keys",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			disk := map[string]string{"meta-data": "", "user-data": operator["user-data"]}
			noCloudSource(t, s, "/var/lib/cloud/seed/nocloud", disk)
			noCloudSource(t, s, "SMBIOS credentials", map[string]string{"meta-data": attackerMeta, "user-data": operator["user-data"]})
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: disk}, "seed-dir")}
			return s
		},
		detail: "left out: meta-data keys",
	}, {
		name: "the command line's ds=nocloud;h=;i= keys win over the signed meta-data",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			s.Metadata = map[string]any{"local-hostname": "evil", "instance-id": "iid-evil"}
			s.LocalHostname, s.InstanceID = "evil", "iid-evil"
			noCloudSource(t, s, "/dev/sr0", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
			return s
		},
		detail: "left out: meta-data keys instance-id, local-hostname",
	}, {
		name: "a second disk's unsigned user-data replaces the signed one",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/dev/vdb", operator)
			noCloudSource(t, s, "/dev/vdc", map[string]string{"meta-data": "instance-id: x\n", "user-data": "#cloud-config\nruncmd: [evil]\n"})
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "/dev/vdb/seed-manifest")}
			return s
		},
		detail: "left out: the user-data the datasource chose is another",
	}, {
		name: "user-data changed after signing",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			p := maps(operator, "user-data", operator["user-data"]+"runcmd: [evil]\n")
			noCloudSource(t, s, "/seed", p)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
			return s
		},
		refused: []string{"user-data"},
		detail:  "user-data not applied: the user-data served (/seed/user-data) is not the signed one: the manifest lists sha256:",
	}, {
		name: "bytes signed as user-data served as vendor-data",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			p := maps(operator, "vendor-data", operator["user-data"])
			noCloudSource(t, s, "/seed", p)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
			return s
		},
		refused: []string{"vendor-data"},
		detail:  "vendor-data not applied: not in the manifest",
	}, {
		name: "an unsigned network-config beside a manifest without one",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			signed := maps(operator, "network-config", "")
			delete(signed, "network-config")
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: signed}, "m")}
			return s
		},
		refused: []string{"network-config"},
		detail:  "network-config not applied: not in the manifest",
	}, {
		name: "a seed signed by another key",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, otherPriv, signedParts{parts: operator}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "manifest m not taken: signed by a key that is not trusted",
	}, {
		name: "a manifest without its signature",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			m := manifestFor(t, priv, signedParts{parts: operator}, "m")
			m.Signature = nil
			s.Manifests = []seed.SignedManifest{m}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "unsigned",
	}, {
		name: "a signed manifest whose signature covers other bytes (a line added)",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			m := manifestFor(t, priv, signedParts{parts: operator}, "m")
			m.Manifest = append(m.Manifest, []byte("part vendor-data sha256:"+strings.Repeat("00", 32)+"\n")...)
			s.Manifests = []seed.SignedManifest{m}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "does not match the content",
	}, {
		name: "a seed captured from another appliance (system-uuid)",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator, bind: Manifest{SystemUUIDs: []string{"00000000-0000-0000-0000-000000000001"}}}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "for system-uuid 00000000-0000-0000-0000-000000000001, not this machine's (4c4c4544-",
	}, {
		name: "a seed captured from another appliance (mac)",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator, bind: Manifest{MACs: []string{"52:54:00:00:00:99"}}}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "for mac 52:54:00:00:00:99",
	}, {
		name: "a user-data signed for one instance, on another (unsigned meta-data names it)",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", map[string]string{"meta-data": "instance-id: i-other\n", "user-data": operator["user-data"]})
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: map[string]string{"user-data": operator["user-data"]}, bind: Manifest{InstanceIDs: []string{"i-0abc"}}}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data"},
		detail:  "for instance-id i-0abc, not this instance (i-other)",
	}, {
		name: "an expired seed",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator, bind: Manifest{SignedAt: now.AddDate(-1, 0, 0), NotAfter: now.AddDate(0, -1, 0)}}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "expired at 2026-10-28 07:00:00 UTC",
	}, {
		name: "a seed not valid yet",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			noCloudSource(t, s, "/seed", operator)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator, bind: Manifest{NotBefore: now.Add(time.Hour)}}, "m")}
			return s
		},
		refused: []string{"meta-data", "user-data", "network-config"},
		detail:  "not valid before",
	}, {
		name: "an older signed seed beside the newer one (a replayed disk)",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			old := maps(operator, "user-data", "#cloud-config\nusers: [{name: admin, plain_text_passwd: old}]\n")
			noCloudSource(t, s, "/dev/vdb", operator)
			noCloudSource(t, s, "/dev/vdc", old)
			s.Manifests = []seed.SignedManifest{
				manifestFor(t, priv, signedParts{parts: operator, bind: Manifest{SignedAt: now.Add(-time.Hour)}}, "new"),
				manifestFor(t, priv, signedParts{parts: old, bind: Manifest{SignedAt: now.AddDate(0, -6, 0)}}, "old"),
			}
			return s
		},
		detail: "manifest old not taken: new is newer or more complete",
	}, {
		name: "the signed parts hidden: the manifest lists a user-data no source served",
		build: func(t *testing.T) *seed.Seed {
			s := newSeed()
			p := maps(operator, "user-data", "")
			delete(p, "user-data")
			noCloudSource(t, s, "/seed", p)
			s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
			return s
		},
		refused: []string{"user-data"},
		detail:  "user-data not applied: the manifest lists user-data",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.build(t)
			got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
			v := verdicts(d)
			for _, part := range []string{"meta-data", "user-data", "network-config", "vendor-data"} {
				refused := slices.Contains(tc.refused, part)
				if refused && !strings.HasPrefix(v[part], NotApplied) || !refused && strings.HasPrefix(v[part], NotApplied) {
					t.Errorf("%s: %q, want refused %v", part, v[part], refused)
				}
			}
			errs, warns := d.Report()
			if all := strings.Join(append(errs, warns...), "\n") + "\n" + strings.Join(slices.Collect(mapValues(v)), "\n"); !strings.Contains(all, tc.detail) {
				t.Errorf("the report does not say %q:\n%s", tc.detail, all)
			}
			// Whatever was refused, nothing of the attacker's is applied.
			if got.LocalHostname == "evil" || slices.Contains(got.PublicKeys, attackerKey) || got.InstanceID == "iid-evil" ||
				strings.Contains(string(got.UserData), "evil") || strings.Contains(string(got.UserData), "old") ||
				got.VendorData != nil && !strings.Contains(v["vendor-data"], Trusted) {
				t.Errorf("applied %+v", got)
			}
			if len(tc.refused) == 0 && (got.LocalHostname != "waf-01" || string(got.UserData) != operator["user-data"]) &&
				!strings.Contains(tc.name, "seedfrom") && !strings.Contains(tc.name, "empty signed") {
				t.Errorf("the operator's seed was not applied: %+v", got)
			}
		})
	}
}

func maps(m map[string]string, k, v string) map[string]string {
	c := map[string]string{}
	for a, b := range m {
		c[a] = b
	}
	c[k] = v
	return c
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// The seed require applies is built from the signed documents alone:
// every field of a seed that no manifest covers is empty in it, whatever
// a datasource put there, but for those that name the source and the
// instance-id the run needs. A field added to seed.Seed later is empty
// too until the decision is taught to let it through.
func TestDecideRequireKeepsNothingUncovered(t *testing.T) {
	_, keys := newKey(t)
	s := &seed.Seed{}
	fill(reflect.ValueOf(s).Elem())
	s.InstanceID = "iid-1"
	got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
	kept := map[string]bool{"Datasource": true, "Subplatform": true, "Platform": true, "CloudName": true, "InstanceID": true, "Metadata": true}
	v := reflect.ValueOf(got).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if kept[name] {
			if v.Field(i).IsZero() {
				t.Errorf("%s was not kept", name)
			}
			continue
		}
		if !v.Field(i).IsZero() {
			t.Errorf("%s passed without a manifest: %v", name, v.Field(i))
		}
	}
	if !reflect.DeepEqual(got.Metadata, map[string]any{"instance-id": "iid-1"}) {
		t.Errorf("metadata %v", got.Metadata)
	}
	for _, part := range []string{"meta-data", "user-data", "vendor-data", "network-config", "datasource config", "datasource files", "file x"} {
		if !strings.HasPrefix(verdicts(d)[part], NotApplied) {
			t.Errorf("%s: %q", part, verdicts(d)[part])
		}
	}
}

// fill sets every field to something not zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Uint32, reflect.Uint8, reflect.Uint64:
		v.SetUint(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf("x"))
		} else {
			fill(e)
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	}
}

// The datasource's own config and files (Azure's, CloudStack's) are no
// part of a manifest: under require they never pass, even beside a
// signed seed.
func TestDecideDatasourceConfigNeverPasses(t *testing.T) {
	priv, keys := newKey(t)
	s := newSeed()
	noCloudSource(t, s, "/seed", operator)
	s.Config = map[string]any{"password": "x"}
	s.Keep = []seed.KeptFile{{Path: "/var/lib/waagent/ovf-env.xml", Data: []byte("x")}}
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
	got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
	if got.Config != nil || got.Keep != nil {
		t.Errorf("config %v, kept files %v", got.Config, got.Keep)
	}
	if !strings.HasPrefix(verdicts(d)["datasource config"], NotApplied) || !strings.HasPrefix(verdicts(d)["datasource files"], NotApplied) {
		t.Errorf("%v", verdicts(d))
	}
}

// NoCloud's network-interfaces in signed meta-data is covered by it.
func TestDecideNetworkFromSignedMeta(t *testing.T) {
	priv, keys := newKey(t)
	s := newSeed()
	md := "instance-id: i-1\nnetwork-interfaces: |\n  auto eth0\n  iface eth0 inet dhcp\n"
	noCloudSource(t, s, "/seed", map[string]string{"meta-data": md, "user-data": ""})
	s.NetworkConfig, s.NetworkFormat = []byte("auto eth0\niface eth0 inet dhcp\n"), "eni"
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: map[string]string{"meta-data": md, "user-data": ""}}, "m")}
	got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
	if got.NetworkFormat != "eni" || !strings.Contains(string(got.NetworkConfig), "iface eth0") || !strings.HasPrefix(verdicts(d)["network-config"], Trusted) {
		t.Errorf("network %q %q: %v", got.NetworkConfig, got.NetworkFormat, verdicts(d))
	}
}

// Warn applies the seed as it came and reports what require would leave
// out; off decides nothing.
func TestDecideWarnAndOff(t *testing.T) {
	priv, keys := newKey(t)
	s := newSeed()
	noCloudSource(t, s, "/seed", maps(operator, "user-data", "#cloud-config\nchanged: true\n"))
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
	got, d := Decide(s, Anchor{Policy: Warn, Keys: keys}, facts)
	if got != s || d.Refused() {
		t.Fatal("warn changed the seed or refused a part")
	}
	v := verdicts(d)
	if !strings.HasPrefix(v["user-data"], Unverified) || !strings.HasPrefix(v["meta-data"], Trusted) {
		t.Errorf("%v", v)
	}
	if errs, warns := d.Report(); len(errs) != 0 || len(warns) != 1 || !strings.Contains(warns[0], "seed trust (warn): user-data applied unverified") {
		t.Errorf("errors %q, warnings %q", errs, warns)
	}
	got, d = Decide(s, Anchor{Policy: Off}, facts)
	if got != s || len(d.Parts) != 0 || d.Policy != "off" {
		t.Errorf("off: %+v", d)
	}
}

// Under require without trusted keys nothing can be trusted, and the
// report says why.
func TestDecideWithoutKeys(t *testing.T) {
	priv, _ := newKey(t)
	s := newSeed()
	noCloudSource(t, s, "/seed", operator)
	s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signedParts{parts: operator}, "m")}
	got, d := Decide(s, Anchor{Policy: Require, Where: "/etc/seedinit in the initramfs"}, facts)
	if got.UserData != nil || !d.Refused() {
		t.Errorf("applied %+v", got)
	}
	_, warns := d.Report()
	if !strings.Contains(strings.Join(warns, "\n"), "no trusted keys (/etc/seedinit/trusted-seed-keys, in /etc/seedinit in the initramfs)") {
		t.Errorf("warnings %q", warns)
	}
}

func TestReadAnchor(t *testing.T) {
	_, keys := newKey(t)
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := string(keysLine(keys))
	t.Run("policy and keys", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "etc/seedinit/trust-policy", "require\n")
		write(t, dir, "etc/seedinit/trusted-seed-keys", line)
		a := ReadAnchor(dir, "here")
		if a.Policy != Require || len(a.Keys) != 1 || len(a.Problems) != 0 || a.Where != "here" {
			t.Errorf("%+v", a)
		}
		a.Raise("warn", "cmdline")
		if a.Policy != Require {
			t.Error("the command line lowered the policy")
		}
	})
	t.Run("nothing there is off", func(t *testing.T) {
		a := ReadAnchor(t.TempDir(), "here")
		if a.Policy != Off || len(a.Problems) != 0 {
			t.Errorf("%+v", a)
		}
		a.Raise("require", "cmdline")
		if a.Policy != Require {
			t.Error("the command line did not raise the policy")
		}
		a = ReadAnchor(t.TempDir(), "here")
		if a.Raise("maybe", "seedinit.trust="); a.Policy != Require || len(a.Problems) != 1 {
			t.Errorf("an unreadable command-line policy: %+v", a)
		}
	})
	t.Run("a policy that does not parse is require", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "etc/seedinit/trust-policy", "requier\n")
		if a := ReadAnchor(dir, "here"); a.Policy != Require || len(a.Problems) != 1 {
			t.Errorf("%+v", a)
		}
	})
	t.Run("a link out of the system is not followed", func(t *testing.T) {
		dir, outside := t.TempDir(), t.TempDir()
		write(t, outside, "policy", "off\n")
		write(t, outside, "keys", line)
		os.MkdirAll(filepath.Join(dir, "etc/seedinit"), 0o755)
		os.Symlink(filepath.Join(outside, "policy"), filepath.Join(dir, "etc/seedinit/trust-policy"))
		os.Symlink(filepath.Join(outside, "keys"), filepath.Join(dir, "etc/seedinit/trusted-seed-keys"))
		a := ReadAnchor(dir, "here")
		if a.Policy != Require || len(a.Keys) != 0 || len(a.Problems) != 2 {
			t.Errorf("%+v", a)
		}
	})
	t.Run("a FIFO in the policy's place does not block", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "etc/seedinit"), 0o755)
		if err := syscall.Mkfifo(filepath.Join(dir, "etc/seedinit/trust-policy"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		done := make(chan Anchor, 1)
		go func() { done <- ReadAnchor(dir, "here") }()
		select {
		case a := <-done:
			if a.Policy != Require {
				t.Errorf("%+v", a)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("ReadAnchor blocked on a FIFO")
		}
	})
}

func keysLine(keys Keys) []byte {
	var b []byte
	for _, k := range keys {
		b = append(b, sshkey.MarshalAuthorizedKey(k, "k")...)
	}
	return b
}

func TestReadFacts(t *testing.T) {
	sys := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(sys, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	write("class/dmi/id/product_uuid", "4C4C4544-0042-3510-8052-B3C04F4D4E32\n")
	write("class/net/lo/address", "00:00:00:00:00:00\n")
	write("class/net/eth1/address", "52:54:00:12:34:57\n")
	write("class/net/eth0/address", "52:54:00:12:34:56\n")
	f := ReadFacts(sys)
	if f.SystemUUID != "4c4c4544-0042-3510-8052-b3c04f4d4e32" || !slices.Equal(f.MACs, []string{"52:54:00:12:34:56", "52:54:00:12:34:57"}) || f.Now.IsZero() {
		t.Errorf("%+v", f)
	}
}

// Injected files (OpenStack's "files") are content of the seed: under
// require a file is written only when the manifest lists its path with
// the digest of what was served; a file added beside the signed ones, a
// signed file's content changed or moved to another path, is not.
func TestDecideInjectedFiles(t *testing.T) {
	priv, keys := newKey(t)
	license := "-----BEGIN FGT VM LICENSE-----\nsigned\n"
	served := func(files ...seed.InjectedFile) *seed.Seed {
		s := newSeed()
		noCloudSource(t, s, "/seed", operator)
		s.Files = files
		return s
	}
	signed := signedParts{parts: operator, files: map[string]string{"/etc/fortinet/license.lic": license, "/etc/missing": "m"}}
	for _, tc := range []struct {
		name    string
		s       *seed.Seed
		policy  Policy
		applied []string // paths
		want    map[string]string
	}{{
		name:    "signed file applied, unsigned one beside it not",
		s:       served(seed.InjectedFile{Path: "/etc/fortinet/license.lic", Content: []byte(license), Where: "/dev/sr0/openstack/content/0000"}, seed.InjectedFile{Path: "/root/.ssh/authorized_keys", Content: []byte(attackerKey), Where: "/dev/sr0/openstack/content/0001"}),
		policy:  Require,
		applied: []string{"/etc/fortinet/license.lic"},
		want: map[string]string{
			"file /etc/fortinet/license.lic":  "trusted: signed by",
			"file /root/.ssh/authorized_keys": "not applied: not in the manifest",
			"file /etc/missing":               "not applied: the manifest lists it, and no source served it",
		},
	}, {
		name:   "content changed after signing",
		s:      served(seed.InjectedFile{Path: "/etc/fortinet/license.lic", Content: []byte(license + "x"), Where: "/dev/sr0/openstack/content/0000"}),
		policy: Require,
		want:   map[string]string{"file /etc/fortinet/license.lic": "not applied: the file served (/dev/sr0/openstack/content/0000) is not the signed one: the manifest lists sha256:"},
	}, {
		name:   "signed content moved to another path",
		s:      served(seed.InjectedFile{Path: "/etc/cron.d/evil", Content: []byte(license), Where: "c"}),
		policy: Require,
		want:   map[string]string{"file /etc/cron.d/evil": "not applied: not in the manifest"},
	}, {
		name:    "warn applies everything and says what require would leave out",
		s:       served(seed.InjectedFile{Path: "/etc/fortinet/license.lic", Content: []byte(license), Where: "a"}, seed.InjectedFile{Path: "/etc/other", Content: []byte("o"), Where: "b"}),
		policy:  Warn,
		applied: []string{"/etc/fortinet/license.lic", "/etc/other"},
		want: map[string]string{
			"file /etc/fortinet/license.lic": "trusted: signed by",
			"file /etc/other":                "applied unverified: not in the manifest",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Manifests = []seed.SignedManifest{manifestFor(t, priv, signed, "m")}
			got, d := Decide(tc.s, Anchor{Policy: tc.policy, Keys: keys}, facts)
			var paths []string
			for _, f := range got.Files {
				paths = append(paths, f.Path)
			}
			if !slices.Equal(paths, tc.applied) {
				t.Errorf("applied %q, want %q", paths, tc.applied)
			}
			v := verdicts(d)
			for part, want := range tc.want {
				if !strings.HasPrefix(v[part], want) {
					t.Errorf("%s: %q, want %q", part, v[part], want)
				}
			}
			if strings.Contains(fmt.Sprint(d), "signed\n") || strings.Contains(fmt.Sprint(d), "ssh-ed25519") {
				t.Errorf("the decision quotes a file's content: %+v", d)
			}
		})
	}
	t.Run("no manifest", func(t *testing.T) {
		s := served(seed.InjectedFile{Path: "/etc/fortinet/license.lic", Content: []byte(license), Where: "a"})
		got, d := Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
		if len(got.Files) != 0 || !strings.HasPrefix(verdicts(d)["file /etc/fortinet/license.lic"], NotApplied+": no seed manifest") {
			t.Errorf("applied %v; %v", got.Files, verdicts(d))
		}
	})
}

// A bootstrap tree is content of the seed: under require a file of it is
// copied only when the manifest lists its path with the digest of what
// was served, and then with the mode and owner the manifest gives, not
// the medium's (an attacker who rewrites the disk could make a signed
// file world-writable, or another user's).
func TestDecideBootstrapTree(t *testing.T) {
	priv, keys := newKey(t)
	m := Manifest{Bootstrap: map[string]BootstrapFile{
		"config/init-cfg.txt": {Digest: Digest([]byte("cfg")), Mode: 0o640, UID: 0, GID: 993},
		"license/authcodes":   {Digest: Digest([]byte("lic")), Mode: 0o600},
	}}
	sp := signedParts{parts: operator, bind: m}
	tree := func(extra ...seed.BootstrapFile) *seed.Seed {
		s := newSeed()
		noCloudSource(t, s, "/seed", operator)
		s.Bootstrap = append([]seed.BootstrapFile{
			{Path: "config", Dir: true, Mode: 0o755, UID: -1, GID: -1},
			{Path: "config/init-cfg.txt", Content: []byte("cfg"), Mode: 0o666, UID: 1000, GID: 1000, Where: "/dev/sr0/bootstrap/config/init-cfg.txt"},
			{Path: "license/authcodes", Content: []byte("lic"), Mode: 0o644, UID: -1, GID: -1},
		}, extra...)
		s.Manifests = []seed.SignedManifest{manifestFor(t, priv, sp, "m")}
		return s
	}
	got, d := Decide(tree(), Anchor{Policy: Require, Keys: keys}, facts)
	v := verdicts(d)["bootstrap tree"]
	if !strings.HasPrefix(v, "trusted: 2 files, signed by") || len(got.Bootstrap) != 2 {
		t.Fatalf("%q; applied %+v", v, got.Bootstrap)
	}
	for _, f := range got.Bootstrap {
		want := m.Bootstrap[f.Path]
		if f.Mode != want.Mode || f.UID != want.UID || f.GID != want.GID {
			t.Errorf("%s applied %o %d:%d, want the manifest's %o %d:%d", f.Path, f.Mode, f.UID, f.GID, want.Mode, want.UID, want.GID)
		}
	}
	// An added file, a changed one: left out, and said.
	s := tree(seed.BootstrapFile{Path: "config/bootstrap.xml", Content: []byte("<evil/>"), Mode: 0o644, UID: -1, GID: -1})
	s.Bootstrap[1].Content = []byte("cfg, changed")
	got, d = Decide(s, Anchor{Policy: Require, Keys: keys}, facts)
	v = verdicts(d)["bootstrap tree"]
	if !strings.HasPrefix(v, NotApplied) || !strings.Contains(v, "config/bootstrap.xml") || !strings.Contains(v, "config/init-cfg.txt") || len(got.Bootstrap) != 1 || got.Bootstrap[0].Path != "license/authcodes" {
		t.Errorf("%q; applied %+v", v, got.Bootstrap)
	}
	// Under warn everything is copied as the medium has it, and require's
	// refusal is a warning.
	got, d = Decide(s, Anchor{Policy: Warn, Keys: keys}, facts)
	if v := verdicts(d)["bootstrap tree"]; !strings.HasPrefix(v, Unverified) || len(got.Bootstrap) != 4 || got.Bootstrap[1].Mode != 0o666 {
		t.Errorf("warn: %q; %+v", v, got.Bootstrap)
	}
}
