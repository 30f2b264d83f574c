package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"

	"github.com/seedinit/seedinit/internal/testenv"
)

// writeSigningKey writes an unencrypted OpenSSH Ed25519 key and its
// public line.
func writeSigningKey(t *testing.T, dir string) (string, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := sshkey.MarshalPrivateKey(priv, "seed@build")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "seed_key")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubFile := key + ".pub"
	if err := os.WriteFile(pubFile, sshkey.MarshalAuthorizedKey(pub, "seed@build"), 0o644); err != nil {
		t.Fatal(err)
	}
	return key, pubFile
}

func TestSeedSign(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	seedDir := filepath.Join(dir, "seed")
	os.Mkdir(seedDir, 0o755)
	files := map[string]string{"meta-data": "instance-id: i-1\n", "user-data": "#cloud-config\n", "other": "x"}
	for name, content := range files {
		os.WriteFile(filepath.Join(seedDir, name), []byte(content), 0o644)
	}
	code, out, stderr := run(t, "seed", "sign", "--key", key, "--system-uuid", "4C4C4544-0042-3510-8052-B3C04F4D4E32",
		"--mac", "52-54-00-12-34-56", "--instance-id", "i-1", "--valid-for", "30d", seedDir)
	if code != exitOK || !strings.Contains(out, "seed-manifest: meta-data user-data") {
		t.Fatalf("seed sign: %d\n%s%s", code, out, stderr)
	}
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(filepath.Join(seedDir, "seed-manifest"))
	sig, _ := os.ReadFile(filepath.Join(seedDir, "seed-manifest.sig"))
	if _, err := keys.Verify(body, sig); err != nil {
		t.Fatalf("the manifest's signature: %v", err)
	}
	m, err := trust.ParseManifest(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Parts) != 2 || m.Parts["user-data"] != trust.Digest([]byte(files["user-data"])) || m.Parts["meta-data"] != trust.Digest([]byte(files["meta-data"])) {
		t.Errorf("parts %x", m.Parts)
	}
	if m.SystemUUIDs[0] != "4c4c4544-0042-3510-8052-b3c04f4d4e32" || m.MACs[0] != "52:54:00:12:34:56" || m.InstanceIDs[0] != "i-1" ||
		m.NotAfter.Sub(m.SignedAt) != 30*24*time.Hour || time.Since(m.SignedAt) > time.Minute {
		t.Errorf("bindings %+v", m)
	}
	for _, args := range [][]string{
		{"--key", pubFile, seedDir},               // a public key
		{"--key", key, t.TempDir()},               // nothing to sign
		{"--key", key, "--mac", "52:54", seedDir}, // a bad binding
		{"--key", key, "--valid-for", "1d", "--not-after", "2027-01-01T00:00:00Z", seedDir}, // two ends
	} {
		if code, _, stderr := run(t, append([]string{"seed", "sign"}, args...)...); code == exitOK || !strings.Contains(stderr, "seed sign") {
			t.Errorf("seed sign %q: %d %s", args, code, stderr)
		}
	}
}

// ssh-keygen and sha256sum are the oracles: the manifest seed sign writes
// verifies with `ssh-keygen -Y verify -n seedinit-seed-manifest`, its
// digests are sha256sum's, and a manifest ssh-keygen signs is trusted.
func TestSeedSignOracles(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		testenv.Skip(t, "ssh-keygen is not installed (scripts/install-deps installs openssh-client)")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "seed@build", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	seedDir := filepath.Join(dir, "seed")
	os.Mkdir(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: i-1\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nhostname: h\n"), 0o644)
	if code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir); code != exitOK {
		t.Fatalf("seed sign: %s%s", out, stderr)
	}
	pub, _ := os.ReadFile(key + ".pub")
	allowed := filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte("seed@build namespaces=\""+trust.Namespace+"\" "+string(pub)), 0o644)
	manifest := filepath.Join(seedDir, "seed-manifest")
	verify := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "seed@build", "-n", "seedinit-seed-manifest", "-s", manifest+".sig")
	body, _ := os.ReadFile(manifest)
	verify.Stdin = bytes.NewReader(body)
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("ssh-keygen -Y verify: %v\n%s", err, out)
	}
	if sum, err := exec.LookPath("sha256sum"); err == nil {
		out, err := exec.Command(sum, filepath.Join(seedDir, "meta-data"), filepath.Join(seedDir, "user-data")).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			hex, file, _ := strings.Cut(line, "  ")
			if !strings.Contains(string(body), "part "+filepath.Base(file)+" sha256:"+hex+"\n") {
				t.Errorf("sha256sum says %s, the manifest:\n%s", line, body)
			}
		}
	}
	// A manifest signed by ssh-keygen itself is as good.
	os.Remove(manifest + ".sig")
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", key, "-n", "seedinit-seed-manifest", manifest).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	keys, _ := trust.ParseKeys(pub, "pub")
	theirs, _ := os.ReadFile(manifest + ".sig")
	if _, err := keys.Verify(body, theirs); err != nil {
		t.Errorf("ssh-keygen's signature: %v", err)
	}
	// One made the old way, over a part in the namespace seedinit-seed,
	// is no manifest signature.
	os.Remove(manifest + ".sig")
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", key, "-n", "seedinit-seed", manifest).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	old, _ := os.ReadFile(manifest + ".sig")
	if _, err := keys.Verify(body, old); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("a signature in the old namespace: %v", err)
	}
}

// A config drive's tree gets a manifest in each openstack/VERSION/.
func TestSeedSignConfigDrive(t *testing.T) {
	dir := t.TempDir()
	key, _ := writeSigningKey(t, dir)
	for _, v := range []string{"2012-08-10", "latest"} {
		d := filepath.Join(dir, "cd", "openstack", v)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "meta_data.json"), []byte(`{"uuid": "u-1"}`), 0o644)
		os.WriteFile(filepath.Join(d, "user_data"), []byte("#cloud-config\n"), 0o644)
	}
	code, out, stderr := run(t, "seed", "sign", "--key", key, filepath.Join(dir, "cd"))
	if code != exitOK || strings.Count(out, "seed-manifest: meta-data user-data") != 2 {
		t.Fatalf("seed sign: %d\n%s%s", code, out, stderr)
	}
	for _, v := range []string{"2012-08-10", "latest"} {
		body, _ := os.ReadFile(filepath.Join(dir, "cd", "openstack", v, "seed-manifest"))
		m, err := trust.ParseManifest(body)
		if err != nil || m.Parts["meta-data"] != trust.Digest([]byte(`{"uuid": "u-1"}`)) || len(m.Parts) != 2 {
			t.Errorf("%s: %+v, %v", v, m, err)
		}
	}
}

func TestTrustExtras(t *testing.T) {
	dir := t.TempDir()
	_, pubFile := writeSigningKey(t, dir)
	extras, err := trustExtras([]string{pubFile}, "REQUIRE")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range extras {
		got[e.Dst] = string(e.Data)
	}
	if !strings.HasPrefix(got["/etc/seedinit/trusted-seed-keys"], "ssh-ed25519 ") || got["/etc/seedinit/trust-policy"] != "require\n" {
		t.Errorf("baked files: %q", got)
	}
	bad := filepath.Join(dir, "bad.pub")
	os.WriteFile(bad, []byte("ssh-rsa AAAA nope\n"), 0o644)
	if _, err := trustExtras([]string{bad}, ""); err == nil || !strings.Contains(err.Error(), "bad.pub line 1") {
		t.Errorf("a bad key file: %v", err)
	}
	if _, err := trustExtras(nil, "maybe"); err == nil {
		t.Error("an unknown policy was accepted")
	}
}

// seed build --sign-key: the image holds a manifest over its parts that
// the readers find beside them and a trusted key lets through whole, on
// ISO and FAT images, NoCloud and config drives.
func TestSeedBuildSigned(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	md, ud := filepath.Join(dir, "meta-data"), filepath.Join(dir, "user-data")
	os.WriteFile(md, []byte("instance-id: i-signed\nlocal-hostname: signed\n"), 0o644)
	os.WriteFile(ud, []byte("#cloud-config\nhostname: signed\n"), 0o644)
	for _, kind := range []string{"nocloud", "configdrive"} {
		for _, format := range []string{"iso", "vfat"} {
			img := filepath.Join(dir, kind+"."+format)
			if code, out, stderr := run(t, "seed", "build", "--kind", kind, "--format", format, "--meta-data", md, "--user-data", ud, "--sign-key", key, "--valid-for", "1h", "-o", img); code != exitOK {
				t.Fatalf("seed build %s %s: %d %s%s", kind, format, code, out, stderr)
			}
			env := &ds.Env{Devices: ds.FileDevices{"/dev/vdb": img}}
			// Local sources only: nothing may be asked of the network here.
			res, err := ds.DetectStage(context.Background(), env, 0, ds.StageLocal)
			if err != nil || res.Seed == nil {
				t.Fatalf("%s %s: read the seed back: %v", kind, format, err)
			}
			got, d := trust.Decide(res.Seed, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
			if d.Refused() || got.LocalHostname != "signed" || string(got.UserData) != "#cloud-config\nhostname: signed\n" {
				t.Errorf("%s %s: %+v", kind, format, d)
			}
		}
	}
	if code, _, stderr := run(t, "seed", "build", "--meta-data", md, "--mac", "52:54:00:12:34:56", "-o", filepath.Join(dir, "x.iso")); code == exitOK || !strings.Contains(stderr, "for --sign-key") {
		t.Errorf("bindings without --sign-key: %d %s", code, stderr)
	}
}

// apply decides as PID 1 does: by the target's own /etc/seedinit unless
// --trust and --trust-keys say otherwise. A signed seed is applied; with
// its user-data changed after signing, the user-data is left out and
// the report and status.json say why.
func TestApplyTrust(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	seedDir := filepath.Join(dir, "seed")
	os.Mkdir(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: i-trust\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nwrite_files: [{path: /etc/signed-ok, content: yes}]\n"), 0o644)
	if code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir); code != exitOK {
		t.Fatalf("seed sign: %s%s", out, stderr)
	}
	root := newTargetRoot(t)
	code, out, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--trust", "require", "--trust-keys", pubFile, "--stage", "network")
	if code != exitOK && code != exitRecoverable {
		t.Fatalf("apply of a signed seed: %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/signed-ok")); err != nil {
		t.Errorf("the signed user-data was not applied: %v", err)
	}
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nwrite_files: [{path: /etc/tampered, content: yes}]\n"), 0o644)
	// No flags: the target's own anchor.
	root = rootWithAnchor(t, pubFile, "require")
	_, out, stderr = run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network", "--json")
	if _, err := os.Stat(filepath.Join(root, "etc/tampered")); err == nil {
		t.Error("the tampered user-data was applied")
	}
	why := "user-data not applied: the user-data served (" + filepath.Join(seedDir, "user-data") + ") is not the signed one"
	if !strings.Contains(out, "seed trust (require): "+why) {
		t.Errorf("the report does not say why:\n%s%s", out, stderr)
	}
	var status struct {
		V1 map[string]json.RawMessage `json:"v1"`
	}
	b, _ := os.ReadFile(filepath.Join(root, "var/lib/cloud/data/status.json"))
	if err := json.Unmarshal(b, &status); err != nil {
		t.Fatal(err)
	}
	var decision trust.Decision
	json.Unmarshal(status.V1["seedinit_trust"], &decision)
	if decision.Policy != "require" || !strings.Contains(string(status.V1["init-local"])+string(status.V1["init"]), why) ||
		len(decision.Parts) != 2 || decision.Parts[1].Verdict != trust.NotApplied {
		t.Errorf("status.json:\n%s", b)
	}
	// --trust off overrides the target's require.
	root = rootWithAnchor(t, pubFile, "require")
	run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network", "--trust", "off")
	if _, err := os.Stat(filepath.Join(root, "etc/tampered")); err != nil {
		t.Errorf("--trust off: %v", err)
	}
	if code, _, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--trust", "maybe"); code == exitOK || !strings.Contains(stderr, "--trust") {
		t.Errorf("a bad --trust: %d %s", code, stderr)
	}
}

// rootWithAnchor is a target whose /etc/seedinit trusts pubFile's keys
// under policy.
func rootWithAnchor(t *testing.T, pubFile, policy string) string {
	t.Helper()
	root := newTargetRoot(t)
	pub, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "etc/seedinit"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/seedinit/trusted-seed-keys"), pub, 0o644)
	os.WriteFile(filepath.Join(root, "etc/seedinit/trust-policy"), []byte(policy+"\n"), 0o644)
	return root
}

// seedinit run on a root whose own policy is require (an init system's
// service, u-root's uinit) applies nothing of an unsigned seed. Before
// the one decision, run never looked at the policy: the unsigned seed's
// write_files and hostname landed.
func TestRunGoesByTheRootsPolicy(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	root := rootWithAnchor(t, pubFile, "require")
	seedDir := filepath.Join(root, "var/lib/cloud/seed/nocloud")
	os.MkdirAll(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: i-unsigned\nlocal-hostname: evil\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nwrite_files: [{path: /etc/pwned, content: x}]\n"), 0o644)
	code, out, stderr := run(t, "run", "--root", root, "--seed", seedDir, "--stage", "all")
	if _, err := os.Stat(filepath.Join(root, "etc/pwned")); err == nil {
		t.Errorf("run applied an unsigned seed on a root whose policy is require (exit %d)\n%s%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/hostname")); strings.Contains(string(b), "evil") {
		t.Errorf("hostname from an unsigned seed: %q", b)
	}
	if code != exitRecoverable || !strings.Contains(stderr, "seed trust (require): user-data not applied: no seed manifest") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	// Signed, the same seed is applied.
	if code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir); code != exitOK {
		t.Fatalf("seed sign: %s%s", out, stderr)
	}
	if code, out, stderr := run(t, "run", "--root", root, "--seed", seedDir, "--stage", "all"); code != exitOK && code != exitRecoverable {
		t.Fatalf("run of a signed seed: %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/pwned")); err != nil {
		t.Errorf("the signed seed was not applied: %v", err)
	}
}

// Under require, a signed user-data's #include is not fetched: the
// included content would be no part of the signed seed.
func TestApplyRequireFetchesNoInclude(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("#cloud-config\nwrite_files: [{path: /etc/included, content: x}]\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	seedDir := filepath.Join(dir, "seed")
	os.Mkdir(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: i-inc\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#include "+srv.URL+"/cc\n"), 0o644)
	if code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir); code != exitOK {
		t.Fatalf("seed sign: %s%s", out, stderr)
	}
	root := rootWithAnchor(t, pubFile, "require")
	_, out, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network")
	if hits.Load() != 0 {
		t.Errorf("the include was fetched %d times", hits.Load())
	}
	if _, err := os.Stat(filepath.Join(root, "etc/included")); err == nil {
		t.Error("the included config was applied")
	}
	if !strings.Contains(out+stderr, "not applied: seed trust is require") {
		t.Errorf("the report does not say why:\n%s%s", out, stderr)
	}
	// Off, the same seed includes.
	root = rootWithAnchor(t, pubFile, "off")
	run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network")
	if _, err := os.Stat(filepath.Join(root, "etc/included")); err != nil || hits.Load() != 1 {
		t.Errorf("off: %v, %d fetches", err, hits.Load())
	}
}

// A config drive that injects a license file, built and signed with
// seed build --file --sign-key, reads back with the file covered: under
// require it is written. seed sign over the drive's tree lists the same
// file; with its content changed after signing, require leaves it out.
func TestSeedBuildInjectedFilesSigned(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	md, lic := filepath.Join(dir, "meta-data"), filepath.Join(dir, "license.lic")
	os.WriteFile(md, []byte("instance-id: i-lic\n"), 0o644)
	os.WriteFile(lic, []byte("-----BEGIN FGT VM LICENSE-----\n"), 0o600)
	decide := func(t *testing.T, env *ds.Env) (*seed.Seed, *trust.Decision) {
		t.Helper()
		res, err := ds.DetectStage(context.Background(), env, 0, ds.StageLocal)
		if err != nil || res.Seed == nil {
			t.Fatalf("read the seed back: %v", err)
		}
		return trust.Decide(res.Seed, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
	}
	for _, format := range []string{"iso", "vfat"} {
		img := filepath.Join(dir, "cd."+format)
		if code, out, stderr := run(t, "seed", "build", "--kind", "configdrive", "--format", format, "--meta-data", md,
			"--file", lic+":/etc/fortinet/license.lic", "--sign-key", key, "-o", img); code != exitOK {
			t.Fatalf("seed build: %d %s%s", code, out, stderr)
		}
		got, d := decide(t, &ds.Env{Devices: ds.FileDevices{"/dev/sr0": img}})
		if d.Refused() || len(got.Files) != 1 || got.Files[0].Path != "/etc/fortinet/license.lic" {
			t.Errorf("%s: files %v; %+v", format, got.Files, d.Parts)
		}
	}
	if code, _, stderr := run(t, "seed", "build", "--kind", "configdrive", "--meta-data", md, "--file", lic, "-o", filepath.Join(dir, "x.iso")); code == exitOK || !strings.Contains(stderr, "SRC:/PATH") {
		t.Errorf("--file without a path: %d %s", code, stderr)
	}

	// seed sign over a config drive's tree, then the content changed.
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "openstack/latest"), 0o755)
	os.MkdirAll(filepath.Join(tree, "openstack/content"), 0o755)
	os.WriteFile(filepath.Join(tree, "openstack/latest/meta_data.json"), []byte(`{"uuid": "i-tree", "files": [{"path": "/etc/lic", "content_path": "/content/0000"}]}`), 0o644)
	os.WriteFile(filepath.Join(tree, "openstack/content/0000"), []byte("L"), 0o644)
	code, out, stderr := run(t, "seed", "sign", "--key", key, tree)
	if code != exitOK || !strings.Contains(out, "meta-data file /etc/lic") {
		t.Fatalf("seed sign: %d %s%s", code, out, stderr)
	}
	readTree := func() (*seed.Seed, *trust.Decision) {
		img := filepath.Join(dir, "tree.iso")
		if err := exec.Command("genisoimage", "-quiet", "-o", img, "-V", "config-2", "-J", "-r", tree).Run(); err != nil {
			t.Skipf("genisoimage: %v", err)
		}
		return decide(t, &ds.Env{Devices: ds.FileDevices{"/dev/sr0": img}})
	}
	if got, d := readTree(); d.Refused() || len(got.Files) != 1 {
		t.Errorf("signed tree: %v %+v", got.Files, d.Parts)
	}
	os.WriteFile(filepath.Join(tree, "openstack/content/0000"), []byte("L, changed"), 0o644)
	if got, d := readTree(); !d.Refused() || len(got.Files) != 0 {
		t.Errorf("changed after signing: %v %+v", got.Files, d.Parts)
	}
}

// seed build --kind ovf --sign-key: an OVF environment disc whose
// properties carry the manifest; found on the CD-ROM by its content and
// let through whole under require. The XML alone (--format xml) reads
// back as a seed directory.
func TestSeedBuildOVFSigned(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	md, ud, nc := filepath.Join(dir, "meta-data"), filepath.Join(dir, "user-data"), filepath.Join(dir, "network-config")
	os.WriteFile(md, []byte("instance-id: i-ovf\nlocal-hostname: ovf-signed\npublic-keys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOvf admin]\n"), 0o644)
	os.WriteFile(ud, []byte("#cloud-config\nruncmd: [true]\n"), 0o644)
	os.WriteFile(nc, []byte("version: 2\nethernets: {ens192: {dhcp4: true}}\n"), 0o644)
	img := filepath.Join(dir, "ovf.iso")
	if code, out, stderr := run(t, "seed", "build", "--kind", "ovf", "--meta-data", md, "--user-data", ud, "--network-config", nc, "--sign-key", key, "--valid-for", "1h", "-o", img); code != exitOK {
		t.Fatalf("seed build: %d %s%s", code, out, stderr)
	}
	res, err := ds.DetectStage(context.Background(), &ds.Env{Devices: ds.FileDevices{"/dev/sr0": img}}, 0, ds.StageLocal)
	if err != nil || res.Seed == nil || res.Datasource != "OVF" {
		t.Fatalf("read the seed back: %v %+v", err, res)
	}
	got, d := trust.Decide(res.Seed, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
	if d.Refused() || got.LocalHostname != "ovf-signed" || string(got.UserData) != "#cloud-config\nruncmd: [true]\n" || got.NetworkFormat != "v2" || len(got.PublicKeys) != 1 {
		t.Errorf("%+v\n%+v", got, d.Parts)
	}
	xmlOut := filepath.Join(dir, "ovf-env.xml")
	if code, out, stderr := run(t, "seed", "build", "--kind", "ovf", "--format", "xml", "--meta-data", md, "-o", xmlOut); code != exitOK {
		t.Fatalf("seed build --format xml: %d %s%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(xmlOut); !bytes.Contains(b, []byte(`oe:key="hostname" oe:value="ovf-signed"`)) {
		t.Errorf("ovf-env.xml:\n%s", b)
	}
}

// seed build --bootstrap --sign-key: the tree lands on the disk with its
// modes (and owners, built as root), the manifest lists each file with
// them, and under require the tree reads back whole; seed sign over a
// directory with a bootstrap/ lists it too.
func TestSeedBuildBootstrapSigned(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "config"), 0o750)
	os.MkdirAll(filepath.Join(tree, "license"), 0o700)
	os.WriteFile(filepath.Join(tree, "config/init-cfg.txt"), []byte("type=dhcp-client\n"), 0o640)
	os.WriteFile(filepath.Join(tree, "license/authcodes"), []byte("I1234567"), 0o600)
	if os.Geteuid() == 0 {
		os.Chown(filepath.Join(tree, "config/init-cfg.txt"), 0, 993)
	}
	md := filepath.Join(dir, "meta-data")
	os.WriteFile(md, []byte("instance-id: i-boot\n"), 0o644)
	for _, kind := range []string{"nocloud", "configdrive"} {
		img := filepath.Join(dir, kind+".iso")
		if code, out, stderr := run(t, "seed", "build", "--kind", kind, "--meta-data", md, "--bootstrap", tree, "--sign-key", key, "-o", img); code != exitOK {
			t.Fatalf("seed build: %d %s%s", code, out, stderr)
		}
		res, err := ds.DetectStage(context.Background(), &ds.Env{Devices: ds.FileDevices{"/dev/vdb": img}}, 0, ds.StageLocal)
		if err != nil || res.Seed == nil {
			t.Fatalf("%s: read back: %v", kind, err)
		}
		got, d := trust.Decide(res.Seed, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
		byPath := map[string]seed.BootstrapFile{}
		for _, f := range got.Bootstrap {
			byPath[f.Path] = f
		}
		cfg := byPath["config/init-cfg.txt"]
		if d.Refused() || len(got.Bootstrap) != 2 || cfg.Mode != 0o640 || os.Geteuid() == 0 && cfg.GID != 993 || string(byPath["license/authcodes"].Content) != "I1234567" {
			t.Errorf("%s: %+v\n%+v", kind, got.Bootstrap, d.Parts)
		}
		// Off: the medium's own modes and owners.
		for _, f := range res.Seed.Bootstrap {
			if f.Path == "config/init-cfg.txt" && (f.Mode != 0o640 || os.Geteuid() == 0 && f.GID != 993) {
				t.Errorf("%s: on the disk %o %d:%d", kind, f.Mode, f.UID, f.GID)
			}
		}
	}
	seedDir := filepath.Join(dir, "seed")
	os.MkdirAll(seedDir, 0o755)
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: i\n"), 0o644)
	if err := exec.Command("cp", "-a", tree, filepath.Join(seedDir, "bootstrap")).Run(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir)
	if code != exitOK || !strings.Contains(out, "bootstrap (2 files)") {
		t.Fatalf("seed sign: %d %s%s", code, out, stderr)
	}
	body, _ := os.ReadFile(filepath.Join(seedDir, "seed-manifest"))
	if !strings.Contains(string(body), "bootstrap license/authcodes 0600 ") {
		t.Errorf("manifest:\n%s", body)
	}
}
