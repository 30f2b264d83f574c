package sshkey

import (
	"bytes"
	//lint:ignore SA1019 DSA keys are read, so the fuzz target sees them
	"crypto/dsa"
	"os"
	"path/filepath"
	"testing"
)

// addFixtures seeds a fuzz target with the files under testdata/ that
// end in suffix.
func addFixtures(f *testing.F, suffix string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*"+suffix))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

func FuzzParsePublicKey(f *testing.F) {
	_, pub := testEd25519(f)
	f.Add(pub.Marshal())
	f.Add([]byte{0, 0, 0, 7, 's', 's', 'h', '-', 'r', 's', 'a', 0, 0, 0, 1, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, wire []byte) {
		k, err := ParsePublicKey(wire)
		if err != nil {
			return
		}
		// What parses is canonical: encoding it again and parsing that
		// gives the same key.
		again, err := ParsePublicKey(k.Marshal())
		if err != nil || !again.Equal(k) {
			t.Fatalf("re-encoded %s key does not parse back: %v", k.Type(), err)
		}
		_ = FingerprintSHA256(k)
		line := MarshalAuthorizedKey(k, "c")
		if fromLine, comment, err := ParseAuthorizedKey(line); err != nil || !fromLine.Equal(k) || comment != "c" {
			t.Fatalf("authorized line %q does not parse back: %v", line, err)
		}
	})
}

func FuzzParseAuthorizedKey(f *testing.F) {
	addFixtures(f, ".pub")
	f.Add([]byte(`no-pty,command="a \"b\" c" ssh-ed25519 AAAA x`))
	f.Add([]byte("# c\n\nssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQ"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, _, err := ParseAuthorizedKey(data)
		if err == nil && k.Bits() == 0 {
			t.Errorf("%s key without a size", k.Type())
		}
	})
}

func FuzzParseRawPrivateKey(f *testing.F) {
	addFixtures(f, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		priv, err := ParseRawPrivateKey(data)
		if err != nil {
			return
		}
		pub, err := PublicKeyOf(priv)
		if err != nil {
			t.Fatalf("parsed a %T without a public key: %v", priv, err)
		}
		if _, isDSA := priv.(*dsa.PrivateKey); isDSA {
			return // we read DSA keys but never write them
		}
		block, err := MarshalPrivateKey(priv, "c")
		if err != nil {
			t.Fatalf("parsed a %T we cannot write: %v", priv, err)
		}
		again, err := parseOpenSSHPrivateKey(block.Bytes)
		if err != nil {
			t.Fatalf("re-encoded %s key does not parse: %v", pub.Type(), err)
		}
		if againPub, _ := PublicKeyOf(again); !againPub.Equal(pub) || !bytes.Equal(againPub.Marshal(), pub.Marshal()) {
			t.Fatalf("re-encoded %s key is another key", pub.Type())
		}
	})
}
