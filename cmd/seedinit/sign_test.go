package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply/ssh/sshkey"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
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
	for name, content := range map[string]string{"meta-data": "instance-id: i-1\n", "user-data": "#cloud-config\n", "other": "x"} {
		os.WriteFile(filepath.Join(seedDir, name), []byte(content), 0o644)
	}
	code, out, stderr := run(t, "seed", "sign", "--key", key, seedDir)
	if code != exitOK || strings.Count(out, ".sig") != 2 {
		t.Fatalf("seed sign: %d\n%s%s", code, out, stderr)
	}
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"meta-data", "user-data"} {
		content, _ := os.ReadFile(filepath.Join(seedDir, part))
		sig, err := os.ReadFile(filepath.Join(seedDir, part+".sig"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := keys.Verify(content, sig); err != nil {
			t.Errorf("%s.sig: %v", part, err)
		}
	}
	if _, err := os.Stat(filepath.Join(seedDir, "other.sig")); err == nil {
		t.Error("a file that is no seed part was signed")
	}
	if code, _, stderr := run(t, "seed", "sign", "--key", pubFile, seedDir); code == exitOK || !strings.Contains(stderr, "seed sign") {
		t.Errorf("a public key as the signing key: %d %s", code, stderr)
	}
	if code, _, _ := run(t, "seed", "sign", "--key", key, t.TempDir()); code == exitOK {
		t.Error("an empty directory was signed")
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

// seed build --sign-key: the image's parts carry signatures that the
// NoCloud reader finds beside them and the trusted key verifies, on ISO
// and FAT images.
func TestSeedBuildSigned(t *testing.T) {
	dir := t.TempDir()
	key, pubFile := writeSigningKey(t, dir)
	pubLine, _ := os.ReadFile(pubFile)
	keys, err := trust.ParseKeys(pubLine, pubFile)
	if err != nil {
		t.Fatal(err)
	}
	md, ud := filepath.Join(dir, "meta-data"), filepath.Join(dir, "user-data")
	os.WriteFile(md, []byte("instance-id: i-signed\n"), 0o644)
	os.WriteFile(ud, []byte("#cloud-config\nhostname: signed\n"), 0o644)
	for _, format := range []string{"iso", "vfat"} {
		img := filepath.Join(dir, "seed."+format)
		if code, out, stderr := run(t, "seed", "build", "--format", format, "--meta-data", md, "--user-data", ud, "--sign-key", key, "-o", img); code != exitOK {
			t.Fatalf("seed build %s: %d %s%s", format, code, out, stderr)
		}
		env := &ds.Env{Devices: ds.FileDevices{"/dev/vdb": img}}
		// Local sources only: nothing may be asked of the network here.
		s, err := ds.DetectStage(context.Background(), env, 0, ds.StageLocal)
		if err != nil || s.Seed == nil {
			t.Fatalf("%s: read the seed back: %v", format, err)
		}
		findings := trust.Check(s.Seed, keys, trust.Require)
		if len(findings) != 2 {
			t.Errorf("%s: findings %v", format, findings)
		}
		for _, f := range findings {
			if !f.Trusted {
				t.Errorf("%s: %v", format, f)
			}
		}
	}
}

// apply --trust require --trust-keys: a signed seed is applied; with its
// user-data changed after signing, the user-data is left out and the
// report says why.
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
	root = newTargetRoot(t)
	_, out, stderr = run(t, "apply", "--root", root, "--seed", seedDir, "--trust", "require", "--trust-keys", pubFile, "--stage", "network", "--json")
	if _, err := os.Stat(filepath.Join(root, "etc/tampered")); err == nil {
		t.Error("the tampered user-data was applied")
	}
	if !strings.Contains(out, "user-data not applied: the signature does not match the content") {
		t.Errorf("the report does not say why:\n%s%s", out, stderr)
	}
	if code, _, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--trust", "require"); code == exitOK || !strings.Contains(stderr, "needs --trust-keys") {
		t.Errorf("require without keys: %d %s", code, stderr)
	}
}
