package sshkey

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustPublicKey(t testing.TB, pub any) *PublicKey {
	t.Helper()
	k, err := NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testEd25519(t testing.TB) (ed25519.PrivateKey, *PublicKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	return priv, mustPublicKey(t, priv.Public())
}

func blob(build func(w *wireWriter)) []byte {
	w := wireWriter{}
	build(&w)
	return w.buf
}

func TestMPIntEncoding(t *testing.T) {
	// RFC 4251 §5's examples, the non-negative ones.
	tests := []struct {
		value string
		want  []byte
	}{
		{"0", []byte{0, 0, 0, 0}},
		{"9a378f9b2e332a7", []byte{0, 0, 0, 8, 0x09, 0xa3, 0x78, 0xf9, 0xb2, 0xe3, 0x32, 0xa7}},
		{"80", []byte{0, 0, 0, 2, 0x00, 0x80}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			n, _ := new(big.Int).SetString(tt.value, 16)
			w := wireWriter{}
			w.mpint(n)
			if diff := cmp.Diff(tt.want, w.buf); diff != "" {
				t.Errorf("encoding (-want +got):\n%s", diff)
			}
			r := wireReader{rest: w.buf}
			if got := r.mpint(); r.finish() != nil || got.Cmp(n) != 0 {
				t.Errorf("read back %v (%v)", got, r.finish())
			}
		})
	}
}

func TestParsePublicKeyRejects(t *testing.T) {
	_, edPub := testEd25519(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	point, _ := ecKey.PublicKey.Bytes()
	offCurve := bytes.Clone(point)
	offCurve[len(offCurve)-1] ^= 1
	tests := map[string][]byte{
		"empty":           nil,
		"short length":    {0, 0, 0},
		"length too long": {0xff, 0xff, 0xff, 0xff, 's'},
		"unknown type":    blob(func(w *wireWriter) { w.text("ssh-foo"); w.bytes([]byte("x")) }),
		"trailing data":   append(edPub.Marshal(), 0),
		"ed25519 short": blob(func(w *wireWriter) {
			w.text(TypeED25519)
			w.bytes(make([]byte, 31))
		}),
		"rsa negative modulus": blob(func(w *wireWriter) {
			w.text(TypeRSA)
			w.mpint(big.NewInt(65537))
			w.bytes(append([]byte{0x80}, make([]byte, 128)...))
		}),
		"rsa even exponent": blob(func(w *wireWriter) {
			w.text(TypeRSA)
			w.mpint(big.NewInt(65536))
			w.mpint(rsaKey.N)
		}),
		"rsa huge exponent": blob(func(w *wireWriter) {
			w.text(TypeRSA)
			w.mpint(new(big.Int).Lsh(big.NewInt(1), 64))
			w.mpint(rsaKey.N)
		}),
		"rsa 512-bit modulus": blob(func(w *wireWriter) {
			w.text(TypeRSA)
			w.mpint(big.NewInt(65537))
			w.mpint(new(big.Int).Rsh(rsaKey.N, 512))
		}),
		"rsa oversized integer": blob(func(w *wireWriter) {
			w.text(TypeRSA)
			w.mpint(big.NewInt(65537))
			w.bytes(make([]byte, maxMPIntBytes+1))
		}),
		"ecdsa wrong curve name": blob(func(w *wireWriter) {
			w.text(TypeECDSA256)
			w.text("nistp384")
			w.bytes(point)
		}),
		"ecdsa point off the curve": blob(func(w *wireWriter) {
			w.text(TypeECDSA256)
			w.text("nistp256")
			w.bytes(offCurve)
		}),
		"sk-ed25519 without application": blob(func(w *wireWriter) {
			w.text(TypeSKED25519)
			w.bytes(make([]byte, 32))
		}),
	}
	for name, wire := range tests {
		t.Run(name, func(t *testing.T) {
			if k, err := ParsePublicKey(wire); err == nil {
				t.Errorf("parsed as %s", k.Type())
			}
		})
	}
}

func TestPublicKeyRoundTrip(t *testing.T) {
	_, edPub := testEd25519(t)
	ecKey, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]byte{
		"ed25519": edPub.Marshal(),
		"ecdsa":   mustPublicKey(t, &ecKey.PublicKey).Marshal(),
		"sk-ecdsa": blob(func(w *wireWriter) {
			w.text(TypeSKECDSA256)
			w.text("nistp256")
			w.bytes(mustP256Point(t))
			w.text("ssh:")
		}),
		"sk-ed25519": blob(func(w *wireWriter) {
			w.text(TypeSKED25519)
			w.bytes(edPub.key.(ed25519.PublicKey))
			w.text("ssh:")
		}),
	}
	for name, wire := range keys {
		t.Run(name, func(t *testing.T) {
			k, err := ParsePublicKey(wire)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(k.Marshal(), wire) {
				t.Errorf("re-encoded differently:\n%x\n%x", k.Marshal(), wire)
			}
			if k.Bits() == 0 {
				t.Errorf("no size for %s", k.Type())
			}
		})
	}
}

func mustP256Point(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := k.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseAuthorizedKey(t *testing.T) {
	_, pub := testEd25519(t)
	b64 := base64.StdEncoding.EncodeToString(pub.Marshal())
	key := TypeED25519 + " " + b64
	tests := []struct {
		name, data  string
		wantComment string
		wantErr     bool
	}{
		{name: "bare", data: key, wantComment: ""},
		{name: "comment", data: key + " root@host\n", wantComment: "root@host"},
		{name: "comment with spaces and CRLF", data: key + "\t a b \r\n", wantComment: "a b"},
		{name: "after comment and blank lines", data: "# keys\n\n" + key + " c", wantComment: "c"},
		{name: "after a bad line", data: "ssh-ed25519 AAAA\n" + key + " second", wantComment: "second"},
		{name: "options", data: `no-pty,command="echo \"a b\" c" ` + key + " opt", wantComment: "opt"},
		{name: "type word mismatch", data: TypeRSA + " " + b64, wantErr: true},
		{name: "bad base64", data: TypeED25519 + " !!!!", wantErr: true},
		{name: "unterminated quote", data: `command="x ` + key, wantErr: true},
		{name: "only comments", data: "# nothing\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, comment, err := ParseAuthorizedKey([]byte(tt.data))
			if tt.wantErr {
				if err == nil {
					t.Errorf("parsed %s %q", got.Type(), comment)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(pub) || comment != tt.wantComment {
				t.Errorf("got %q comment %q, want comment %q", MarshalAuthorizedKey(got, ""), comment, tt.wantComment)
			}
		})
	}
}

func TestMarshalPrivateKeyLayout(t *testing.T) {
	priv, pub := testEd25519(t)
	for _, comment := range []string{"", "a", "root@a-longer-host-name"} {
		block, err := MarshalPrivateKey(priv, comment)
		if err != nil {
			t.Fatal(err)
		}
		r := wireReader{rest: block.Bytes[len(openSSHMagic):]}
		header := []string{r.text(), r.text(), r.text()}
		count := r.uint32()
		publicBlob := r.bytes()
		section := r.bytes()
		if err := r.finish(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"none", "none", ""}, header); diff != "" || count != 1 || !bytes.Equal(publicBlob, pub.Marshal()) {
			t.Errorf("envelope: header %q, %d keys, public %x", header, count, publicBlob)
		}
		if len(section)%8 != 0 {
			t.Errorf("comment %q: private section of %d bytes", comment, len(section))
		}
		p := wireReader{rest: section}
		p.uint32()
		p.uint32()
		p.text()
		p.bytes()
		p.bytes()
		if got := p.text(); got != comment {
			t.Errorf("comment %q, want %q", got, comment)
		}
		for i, b := range p.rest {
			if b != byte(i+1) {
				t.Errorf("comment %q: padding %x", comment, p.rest)
				break
			}
		}
	}
}

// openSSHBody builds an openssh-key-v1 body for the hostile-input tests.
func openSSHBody(cipher, kdf string, count uint32, public, section []byte) []byte {
	w := wireWriter{buf: []byte(openSSHMagic)}
	w.text(cipher)
	w.text(kdf)
	w.text("")
	w.uint32(count)
	w.bytes(public)
	w.bytes(section)
	return w.buf
}

func ed25519Section(check1, check2 uint32, priv ed25519.PrivateKey, comment string, pad []byte) []byte {
	w := wireWriter{}
	w.uint32(check1)
	w.uint32(check2)
	w.text(TypeED25519)
	w.bytes(priv[32:])
	w.bytes(priv)
	w.text(comment)
	w.buf = append(w.buf, pad...)
	return w.buf
}

func TestParseRawPrivateKeyRejects(t *testing.T) {
	priv, pub := testEd25519(t)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	// 132 bytes of fields, padded to 136.
	good := ed25519Section(1, 1, priv, "c", []byte{1, 2, 3, 4})
	if _, err := parseOpenSSHPrivateKey(openSSHBody("none", "none", 1, pub.Marshal(), good)); err != nil {
		t.Fatalf("the well-formed base case fails: %v", err)
	}
	tests := map[string][]byte{
		"bad magic":          []byte("openssh-key-v2\x00"),
		"truncated":          openSSHBody("none", "none", 1, pub.Marshal(), good)[:60],
		"two keys":           openSSHBody("none", "none", 2, pub.Marshal(), good),
		"kdf without cipher": openSSHBody("none", "bcrypt", 1, pub.Marshal(), good),
		"check numbers differ": openSSHBody("none", "none", 1, pub.Marshal(),
			ed25519Section(1, 2, priv, "c", []byte{1, 2, 3, 4})),
		"bad padding": openSSHBody("none", "none", 1, pub.Marshal(),
			ed25519Section(1, 1, priv, "c", []byte{1, 2, 3, 5})),
		"unpadded": openSSHBody("none", "none", 1, pub.Marshal(),
			ed25519Section(1, 1, priv, "c", []byte{1, 2, 3})),
		"other public key": openSSHBody("none", "none", 1, mustPublicKey(t, other.Public()).Marshal(), good),
		"mixed halves": openSSHBody("none", "none", 1, pub.Marshal(),
			ed25519Section(1, 1, append(bytes.Clone(other[:32]), priv[32:]...), "c", []byte{1, 2, 3, 4})),
		"garbage public key": openSSHBody("none", "none", 1, []byte("x"), good),
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			data := pem.EncodeToMemory(&pem.Block{Type: openSSHPEMType, Bytes: body})
			if _, err := ParseRawPrivateKey(data); err == nil || errors.Is(err, ErrPassphraseMissing) {
				t.Errorf("got %v, want a parse error", err)
			}
		})
	}
}

func TestParseRawPrivateKeyEncrypted(t *testing.T) {
	_, pub := testEd25519(t)
	tests := map[string]*pem.Block{
		"openssh aes256-ctr": {Type: openSSHPEMType, Bytes: openSSHBody("aes256-ctr", "bcrypt", 1, pub.Marshal(), make([]byte, 16))},
		"pem proc-type": {Type: "RSA PRIVATE KEY", Headers: map[string]string{
			"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00000000000000000000000000000000"}, Bytes: []byte{1}},
		"pkcs8": {Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}},
	}
	for name, block := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseRawPrivateKey(pem.EncodeToMemory(block)); !errors.Is(err, ErrPassphraseMissing) {
				t.Errorf("got %v, want ErrPassphraseMissing", err)
			}
		})
	}
}

func TestParseRawPrivateKeyErrorsHideKeyMaterial(t *testing.T) {
	data, err := os.ReadFile("testdata/ed25519")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	// Damage the last padding byte: the error must not echo the key.
	block.Bytes[len(block.Bytes)-1] ^= 0xff
	_, err = ParseRawPrivateKey(pem.EncodeToMemory(block))
	if err == nil {
		t.Fatal("damaged key parsed")
	}
	if msg := err.Error(); strings.Contains(msg, base64.StdEncoding.EncodeToString(block.Bytes[100:120])) || len(msg) > 200 {
		t.Errorf("error says too much: %s", msg)
	}
}
