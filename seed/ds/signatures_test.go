package ds

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
	"github.com/seedinit/seedinit/seed/trust"
)

// The sources hand the trust decision every part as served and the
// manifest beside them: seed directories (and disks, read the same way),
// seedfrom URLs, SMBIOS credentials, fw_cfg, MMDS documents, config
// drives and VendorHTTP.
func TestSeedDocumentsAndManifestsAreKept(t *testing.T) {
	const md, ud = "instance-id: iid-sig\nlocal-hostname: h\n", "#cloud-config\n"
	const manifest, sig = "MANIFEST\n", "SIG\n"
	check := func(t *testing.T, s *seed.Seed, where string, parts ...string) {
		t.Helper()
		var got []string
		for _, d := range s.Documents {
			got = append(got, d.Part)
			if d.Part == "meta-data" && (d.Meta == nil || d.Meta.InstanceID != "iid-sig" || d.Meta.LocalHostname != "h") {
				t.Errorf("meta-data document read as %+v (%s)", d.Meta, d.MetaErr)
			}
		}
		if !slices.Equal(got, parts) {
			t.Errorf("documents %q, want %q", got, parts)
		}
		if len(s.Manifests) != 1 || string(s.Manifests[0].Manifest) != manifest || string(s.Manifests[0].Signature) != sig ||
			!strings.Contains(s.Manifests[0].Where, where) {
			t.Errorf("manifests %+v", s.Manifests)
		}
	}
	fetch := func(t *testing.T, env *Env, d Datasource) *seed.Seed {
		t.Helper()
		s, err := d.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("seed directory", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "")
		writeTarget(t, env, map[string]string{
			"/var/lib/cloud/seed/nocloud/meta-data": md, "/var/lib/cloud/seed/nocloud/user-data": ud,
			"/var/lib/cloud/seed/nocloud/seed-manifest": manifest, "/var/lib/cloud/seed/nocloud/seed-manifest.sig": sig,
		})
		check(t, fetch(t, env, noCloud{}), "/var/lib/cloud/seed/nocloud/seed-manifest", "meta-data", "user-data")
	})
	t.Run("seedfrom URL", func(t *testing.T) {
		srv := noCloudServer(t, map[string]string{"/s/meta-data": md, "/s/user-data": ud, "/s/vendor-data": ud, "/s/seed-manifest": manifest, "/s/seed-manifest.sig": sig})
		check(t, fetch(t, newTestEnv(t, nil, nil, "ds=nocloud-net;s="+srv.URL+"/s/"), noCloud{}), "/s/seed-manifest", "meta-data", "user-data", "vendor-data")
	})
	t.Run("SMBIOS credentials", func(t *testing.T) {
		b64 := base64.StdEncoding.EncodeToString
		env := &Env{DMI: oemDMI{strs: []string{
			"io.systemd.credential:cloud-init.meta-data=" + md,
			"io.systemd.credential:cloud-init.user-data=" + ud,
			"io.systemd.credential.binary:cloud-init.seed-manifest=" + b64([]byte(manifest)),
			"io.systemd.credential.binary:cloud-init.seed-manifest.sig=" + b64([]byte(sig)),
		}}, Log: testLogger(t)}
		check(t, fetch(t, env, noCloud{}), "SMBIOS credentials/seed-manifest", "meta-data", "user-data")
	})
	t.Run("fw_cfg", func(t *testing.T) {
		env := &Env{FwCfgDir: fwCfg(t, map[string]string{
			"opt/io.cloud-init/cloud-init/meta-data": md, "opt/io.cloud-init/cloud-init/user-data": ud,
			"opt/io.cloud-init/cloud-init/seed-manifest": manifest, "opt/io.cloud-init/cloud-init/seed-manifest.sig": sig,
		}), Log: testLogger(t)}
		check(t, fetch(t, env, qemuFwCfg{}), "seed-manifest", "meta-data", "user-data")
	})
	t.Run("MMDS document", func(t *testing.T) {
		doc, _ := json.Marshal(map[string]any{"meta-data": md, "user-data": ud, "seed-manifest": manifest, "seed-manifest.sig": sig})
		srv := httptest.NewServer(newFakeMMDS(t, string(doc)))
		t.Cleanup(srv.Close)
		check(t, fetch(t, testEnv(srv.URL, nil, nil), firecrackerMMDS{}), "MMDS/seed-manifest", "meta-data", "user-data")
	})
	t.Run("config drive", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "")
		dir := configDriveSeedDir + "/openstack/latest/"
		meta := fixture(t, "openstack/meta_data.json")
		writeTarget(t, env, map[string]string{
			dir + "meta_data.json": meta, dir + "user_data": ud,
			dir + "network_data.json": fixture(t, "openstack/network_data.json"),
			dir + "vendor_data.json":  `{"cloud-init": "#cloud-config\n"}`,
			dir + "seed-manifest":     manifest, dir + "seed-manifest.sig": sig,
		})
		s := fetch(t, env, configDrive{})
		var parts []string
		for _, d := range s.Documents {
			parts = append(parts, d.Part)
			if d.Part == "meta-data" && (d.Meta == nil || d.Meta.InstanceID != s.InstanceID || string(d.Content) != meta) {
				t.Errorf("meta_data.json read as %+v", d.Meta)
			}
			if d.Part == "network-config" && d.Format != "network_data.json" {
				t.Errorf("network_data.json's format %q", d.Format)
			}
		}
		// The vendor data is converted and joined: no manifest lists it.
		if !slices.Equal(parts, []string{"meta-data", "user-data", "network-config"}) || len(s.Manifests) != 1 ||
			!strings.HasSuffix(s.Manifests[0].Where, "openstack/latest/seed-manifest") {
			t.Errorf("documents %q, manifests %+v", parts, s.Manifests)
		}
	})
	t.Run("VendorHTTP", func(t *testing.T) {
		files := map[string]string{
			"/v/meta_data.json": `{"uuid": "iid-sig", "hostname": "h"}`, "/v/user_data": ud,
			"/v/signed/manifest": manifest, "/v/signed/manifest.sig": sig,
		}
		srv := noCloudServer(t, files)
		for _, keys := range [][]any{nil, {"license"}} {
			env := newTestEnv(t, nil, nil, "")
			settings := map[string]any{"base_url": srv.URL + "/v/", "seed_manifest": "signed/manifest"}
			if keys != nil {
				settings["meta_data_keys"] = keys
			}
			env.Config.Datasource = map[string]map[string]any{"VendorHTTP": settings}
			s := fetch(t, env, vendorHTTP{})
			want := []string{"meta-data", "user-data"}
			if keys != nil {
				// Meta-data made from many URLs is no one document.
				want = want[1:]
			}
			var got []string
			for _, d := range s.Documents {
				got = append(got, d.Part)
			}
			if !slices.Equal(got, want) || len(s.Manifests) != 1 || !strings.HasSuffix(s.Manifests[0].Where, "/v/signed/manifest") {
				t.Errorf("keys %v: documents %q, manifests %+v", keys, got, s.Manifests)
			}
		}
	})
}

func signingKey(t *testing.T) (ed25519.PrivateKey, trust.Keys) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return priv, trust.Keys{pub}
}

// signedManifest signs a manifest over parts (by role).
func signedManifest(t *testing.T, priv ed25519.PrivateKey, parts map[string]string) (string, string) {
	t.Helper()
	m := &trust.Manifest{SignedAt: time.Now().Add(-time.Minute), Parts: map[string][32]byte{}}
	for role, c := range parts {
		m.Parts[role] = trust.Digest([]byte(c))
	}
	body := m.Marshal()
	sig, err := trust.Sign(priv, body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body), string(sig)
}

const attackerKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttackerAttackerAttackerAttackerAttacker attacker"

// The attacks of the review that found the per-part signatures wanting,
// through the real NoCloud reader and the one decision: a signed seed
// directory whose meta-data only points seedfrom at a server, or is
// empty beside SMBIOS credentials, or whose bytes were signed as another
// part. Each failed on the code before the manifest: the attacker's key,
// hostname or part was applied under require.
func TestNoCloudAttacksUnderRequire(t *testing.T) {
	priv, keys := signingKey(t)
	attackerMeta := "instance-id: iid-evil\nlocal-hostname: evil\npublic-keys: [\"" + attackerKey + "\"]\n"
	const ud = "#cloud-config\n"
	decide := func(t *testing.T, env *Env) (*seed.Seed, *trust.Decision) {
		t.Helper()
		s, err := noCloud{}.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		return trust.Decide(s, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
	}
	noAttacker := func(t *testing.T, s *seed.Seed) {
		t.Helper()
		if slices.Contains(s.PublicKeys, attackerKey) || s.LocalHostname == "evil" || s.InstanceID == "iid-evil" {
			t.Errorf("the attacker's meta-data applied under require: keys %q, hostname %q, instance %q", s.PublicKeys, s.LocalHostname, s.InstanceID)
		}
	}
	t.Run("seedfrom-only signed meta-data", func(t *testing.T) {
		srv := noCloudServer(t, map[string]string{"/s/meta-data": attackerMeta, "/s/user-data": ud})
		md := "seedfrom: " + srv.URL + "/s/\n"
		m, sig := signedManifest(t, priv, map[string]string{"meta-data": md, "user-data": ud})
		env := newTestEnv(t, nil, nil, "")
		writeTarget(t, env, map[string]string{
			"/var/lib/cloud/seed/nocloud/meta-data": md, "/var/lib/cloud/seed/nocloud/user-data": ud,
			"/var/lib/cloud/seed/nocloud/seed-manifest": m, "/var/lib/cloud/seed/nocloud/seed-manifest.sig": sig,
		})
		s, d := decide(t, env)
		noAttacker(t, s)
		if !strings.Contains(strings.Join(slices.Collect(findingTexts(d)), "\n"), "left out: meta-data keys") {
			t.Errorf("the report does not say what was left out: %+v", d.Parts)
		}
	})
	t.Run("empty signed meta-data and SMBIOS credentials", func(t *testing.T) {
		m, sig := signedManifest(t, priv, map[string]string{"meta-data": "", "user-data": ud})
		env := newTestEnv(t, nil, nil, "")
		env.DMI = oemDMI{strs: []string{
			"io.systemd.credential:cloud-init.meta-data=" + "local-hostname: evil",
			"io.systemd.credential.binary:cloud-init.meta-data=" + base64.StdEncoding.EncodeToString([]byte(attackerMeta)),
			"io.systemd.credential:cloud-init.user-data=#cloud-config",
		}}
		writeTarget(t, env, map[string]string{
			"/var/lib/cloud/seed/nocloud/meta-data": "", "/var/lib/cloud/seed/nocloud/user-data": ud,
			"/var/lib/cloud/seed/nocloud/seed-manifest": m, "/var/lib/cloud/seed/nocloud/seed-manifest.sig": sig,
		})
		s, _ := decide(t, env)
		noAttacker(t, s)
	})
	t.Run("bytes signed as user-data, served as vendor-data", func(t *testing.T) {
		signedUD := "#cloud-config\nhostname: signed-as-user-data\n"
		m, sig := signedManifest(t, priv, map[string]string{"meta-data": "instance-id: i-1\n", "user-data": signedUD})
		env := newTestEnv(t, nil, nil, "")
		writeTarget(t, env, map[string]string{
			"/var/lib/cloud/seed/nocloud/meta-data": "instance-id: i-1\n", "/var/lib/cloud/seed/nocloud/user-data": ud,
			"/var/lib/cloud/seed/nocloud/vendor-data":   signedUD,
			"/var/lib/cloud/seed/nocloud/seed-manifest": m, "/var/lib/cloud/seed/nocloud/seed-manifest.sig": sig,
		})
		s, d := decide(t, env)
		if s.VendorData != nil {
			t.Errorf("bytes signed as user-data applied as vendor-data: %+v", d.Parts)
		}
	})
}

func findingTexts(d *trust.Decision) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, f := range d.Parts {
			if !yield(f.String()) {
				return
			}
		}
	}
}

// A seed disk or directory whose meta-data points seedfrom at an http URL
// is read once the network is up, as cloud-init's NoCloudNet reads it:
// the local search leaves it for the network stage rather than failing
// on the URL.
func TestNoCloudHTTPSeedFromWaitsForTheNetwork(t *testing.T) {
	md := "seedfrom: http://10.98.0.1:8000/\n"
	t.Run("disk", func(t *testing.T) {
		iso := dstest.ISO(t, "cidata", map[string]string{"meta-data": md, "user-data": "#cloud-config\n"}, "-joliet", "-rock")
		env := &Env{Devices: FileDevices{"/dev/sr0": iso}, Log: testLogger(t)}
		ev, err := noCloud{}.Probe(context.Background(), env)
		if err != nil || ev.Verdict != Found || !ev.Network {
			t.Errorf("probe: %+v, %v", ev, err)
		}
	})
	t.Run("seed directory", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "")
		writeTarget(t, env, map[string]string{"/var/lib/cloud/seed/nocloud/meta-data": md, "/var/lib/cloud/seed/nocloud/user-data": ""})
		ev, err := noCloud{}.Probe(context.Background(), env)
		if err != nil || ev.Verdict != Found || !ev.Network {
			t.Errorf("probe: %+v, %v", ev, err)
		}
		writeTarget(t, env, map[string]string{"/var/lib/cloud/seed/nocloud/meta-data": "instance-id: i\n"})
		if ev, _ := (noCloud{}).Probe(context.Background(), env); ev.Network {
			t.Errorf("a seed without seedfrom waits for the network: %+v", ev)
		}
	})
}

// The sources that are datasources of their own (fw_cfg) or add keys
// (the command line) beside a signed seed: nothing of theirs is applied
// under require, whichever is chosen.
func TestAddedSourcesUnderRequire(t *testing.T) {
	priv, keys := signingKey(t)
	const md, ud = "instance-id: iid-op\nlocal-hostname: op\n", "#cloud-config\n"
	m, sig := signedManifest(t, priv, map[string]string{"meta-data": md, "user-data": ud})
	seedDir := map[string]string{
		"/var/lib/cloud/seed/nocloud/meta-data": md, "/var/lib/cloud/seed/nocloud/user-data": ud,
		"/var/lib/cloud/seed/nocloud/seed-manifest": m, "/var/lib/cloud/seed/nocloud/seed-manifest.sig": sig,
	}
	anchor := trust.Anchor{Policy: trust.Require, Keys: keys}
	t.Run("the command line's ds=nocloud;h=;i=", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "ds=nocloud;h=evil;i=iid-evil")
		writeTarget(t, env, seedDir)
		s, err := noCloud{}.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if s.LocalHostname != "evil" {
			t.Fatalf("the command line's keys were not merged first, as cloud-init merges them: %q", s.LocalHostname)
		}
		got, d := trust.Decide(s, anchor, trust.Facts{Now: time.Now()})
		if got.LocalHostname != "op" || got.InstanceID != "iid-op" || d.Refused() {
			t.Errorf("applied %q/%q: %+v", got.LocalHostname, got.InstanceID, d.Parts)
		}
	})
	t.Run("an attacker's fw_cfg seed, chosen", func(t *testing.T) {
		env := &Env{FwCfgDir: fwCfg(t, map[string]string{
			"opt/io.cloud-init/cloud-init/meta-data": "local-hostname: evil\npublic-keys: [\"" + attackerKey + "\"]\n",
			"opt/io.cloud-init/cloud-init/user-data": "#cloud-config\nruncmd: [evil]\n",
		}), Log: testLogger(t)}
		s, err := qemuFwCfg{}.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		got, d := trust.Decide(s, anchor, trust.Facts{Now: time.Now()})
		if got.UserData != nil || got.LocalHostname != "" || got.PublicKeys != nil || !d.Refused() {
			t.Errorf("applied %+v", got)
		}
	})
}
