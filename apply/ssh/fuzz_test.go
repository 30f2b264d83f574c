package ssh

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply/users"
	"github.com/seedinit/seedinit/internal/sshkey"

	"github.com/seedinit/seedinit/internal/testenv"
)

func FuzzOpenSSHKeyComment(f *testing.F) {
	for _, keyType := range []string{"ed25519", "ecdsa"} {
		k, err := GenerateHostKey(keyType, "root@seed", nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(k.Private)
	}
	f.Add([]byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte(""))
	// ssh-keygen's own files in each format sshkey reads.
	fixtures, _ := filepath.Glob("sshkey/testdata/*")
	for _, p := range fixtures {
		if data, err := os.ReadFile(p); err == nil && !strings.HasSuffix(p, ".l") {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		comment, ok := OpenSSHKeyComment(data)
		if !ok && comment != "" {
			t.Errorf("comment %q without ok", comment)
		}
		pub, err := DerivePublicKey(data)
		if err != nil {
			return
		}
		if !strings.HasSuffix(string(pub), " root@localhost\n") {
			t.Errorf("derived %q does not end like cloud-init's", pub)
		}
		// The derived line is a public key file OpenSSH would read, holding
		// the private key's own public half.
		fromLine, _, err := sshkey.ParseAuthorizedKey(pub)
		if err != nil {
			t.Fatalf("derived %q does not parse: %v", pub, err)
		}
		priv, err := sshkey.ParseRawPrivateKey(data)
		if err != nil {
			t.Fatalf("derived a public key from a key that does not parse: %v", err)
		}
		if want, err := sshkey.PublicKeyOf(priv); err != nil || !want.Equal(fromLine) {
			t.Errorf("derived %q is not the private key's public half (%v)", pub, err)
		}
	})
}

func FuzzParseSSHDConfig(f *testing.F) {
	f.Add("Port 22\n# comment\nHostCertificate /a\n", "HostCertificate", "/b")
	f.Add("  PasswordAuthentication=yes\r\nMatch\n\n", "passwordauthentication", "no")
	f.Add("", "X", "")
	f.Fuzz(func(t *testing.T, text, keyword, value string) {
		if keyword == "" || value == "" || strings.ContainsAny(keyword+value, "\r\n\v\f\x1c\x1d\x1e\u0085\u2028\u2029") || strings.IndexFunc(keyword, pySpace) >= 0 ||
			strings.ContainsAny(keyword, "=#") || strings.TrimFunc(value, pySpace) != value {
			testenv.SkipOptional(t, "an input the property is not about")
		}
		lines, _ := applySettings(parseSSHDConfig(text), []Setting{{keyword, value}})
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.String() + "\n")
		}
		// Applying the same setting to the result changes nothing: a
		// re-run converges.
		_, changed := applySettings(parseSSHDConfig(b.String()), []Setting{{keyword, value}})
		if len(changed) != 0 {
			t.Errorf("second pass changed %v in:\n%s", changed, b.String())
		}
	})
}

func FuzzGroupID(f *testing.F) {
	f.Add([]byte("root:x:0:\nssh_keys:x:998:\n"), "ssh_keys")
	f.Add([]byte("ssh_keys:x:-1:\nssh_keys::12"), "ssh_keys")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		if gid, ok := groupID(data, name); ok && gid < 0 {
			t.Errorf("negative gid %d", gid)
		}
	})
}

func FuzzParseAuthorizedKey(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKO6bxSEvvz5Ip9xqKeirkwop/wL0mm1AoCTCqT+TnVE a@x")
	f.Add(`no-pty,command="echo \"x y\"" ssh-rsa AAAA c`)
	f.Add(`"unterminated ssh-rsa AAAA`)
	f.Add("# comment")
	f.Fuzz(func(t *testing.T, line string) {
		k := ParseAuthorizedKey(line)
		if k.Source != line {
			t.Errorf("Source %q, want the line", k.Source)
		}
		if k.Valid() && !users.ValidKeyType(k.Type) {
			t.Errorf("type %q accepted", k.Type)
		}
		_ = FingerprintTable("u", "/f", []string{line}, "sha256")
	})
}

func FuzzPyB64Decode(f *testing.F) {
	f.Add("QUJD")
	f.Add("QQ==QUJD")
	f.Add("Q!Q=")
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := pyB64Decode(s)
		if ok && len(out) > len(s) {
			t.Errorf("decoded %d bytes from %d", len(out), len(s))
		}
	})
}
