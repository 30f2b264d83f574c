package trust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/sshkey"
)

func newKey(t *testing.T) (ed25519.PrivateKey, Keys) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseKeys(sshkey.MarshalAuthorizedKey(pub, "seed@build"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return priv, keys
}

func TestSignVerify(t *testing.T) {
	priv, keys := newKey(t)
	_, other := newKey(t)
	msg := []byte("#cloud-config\nhostname: waf-01\n")
	sig, err := Sign(priv, msg)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := keys.Verify(msg, sig); err != nil || !k.Equal(keys[0]) {
		t.Fatalf("Verify = %v, %v", k, err)
	}
	for _, tc := range []struct {
		name string
		keys Keys
		msg  []byte
		sig  []byte
		want string
	}{
		{"content changed", keys, append(bytes.Clone(msg), '#'), sig, "does not match"},
		{"key not trusted", other, msg, sig, "not trusted"},
		{"no keys", nil, msg, sig, "not trusted"},
		{"not a signature", keys, msg, []byte("hello"), "not an SSH signature"},
		{"truncated", keys, msg, sig[:len(sig)/2], "end line"},
		{"garbage inside", keys, msg, []byte(armorBegin + "\nAAAA\n" + armorEnd), "bad magic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.keys.Verify(tc.msg, tc.sig)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	_, keys := newKey(t)
	line := strings.TrimSpace(string(sshkey.MarshalAuthorizedKey(keys[0], "a")))
	got, err := ParseKeys([]byte("# build keys\n\n"+line+"\n"+line), "keys")
	if err != nil || len(got) != 2 {
		t.Errorf("two keys: %d, %v", len(got), err)
	}
	if _, err := ParseKeys([]byte(line+"\nnot a key\n"), "trusted"); err == nil || !strings.Contains(err.Error(), "trusted line 2") {
		t.Errorf("a bad line: %v", err)
	}
	ecdsa := "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBDRAXejdTlaovM/U8lBWXuW6h5rl5zDzoVsMdJ5HpYrYa0bedgUlzoUPqIx4H/DIx8D3UwtRmvd1ehVsEFbDJYQ= bob@ops"
	if _, err := ParseKeys([]byte(ecdsa), "trusted"); err == nil || !strings.Contains(err.Error(), "Ed25519") {
		t.Errorf("an ECDSA key: %v", err)
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"off": Off, "": Off, "warn": Warn, "REQUIRE": Require} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := ParsePolicy("strict"); err == nil {
		t.Error("an unknown policy was accepted")
	}
}

// ssh-keygen is the oracle: its signatures verify here, and ours verify
// with `ssh-keygen -Y verify`.
func TestSSHKeygenOracle(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "seed_key")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "seed@build", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pubLine, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParseKeys(pubLine, key+".pub")
	if err != nil {
		t.Fatal(err)
	}
	msg := filepath.Join(dir, "user-data")
	content := []byte("#cloud-config\nusers: [{name: admin}]\n")
	if err := os.WriteFile(msg, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(keygen, "-Y", "sign", "-f", key, "-n", Namespace, msg).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	theirs, err := os.ReadFile(msg + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(content, theirs); err != nil {
		t.Errorf("ssh-keygen's signature: %v", err)
	}

	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := sshkey.ParseRawPrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := Sign(priv.(ed25519.PrivateKey), content)
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(allowed, []byte("seed@build namespaces=\""+Namespace+"\" "+string(pubLine)), 0o644); err != nil {
		t.Fatal(err)
	}
	sigFile := filepath.Join(dir, "ours.sig")
	if err := os.WriteFile(sigFile, ours, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "seed@build", "-n", Namespace, "-s", sigFile)
	cmd.Stdin = bytes.NewReader(content)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ssh-keygen -Y verify of our signature: %v\n%s", err, out)
	}
	cmd = exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "seed@build", "-n", Namespace, "-s", sigFile)
	cmd.Stdin = bytes.NewReader(append(content, 'x'))
	if err := cmd.Run(); err == nil {
		t.Error("ssh-keygen accepted our signature over other content")
	}
}

func FuzzVerify(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	sig, _ := Sign(priv, []byte("x"))
	f.Add(sig)
	f.Add([]byte(armorBegin + "\nU1NIU0lH\n" + armorEnd))
	pub, _ := sshkey.NewPublicKey(priv.Public())
	keys := Keys{pub}
	f.Fuzz(func(t *testing.T, armored []byte) {
		keys.Verify([]byte("x"), armored)
	})
}
