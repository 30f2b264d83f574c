package sshkey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

var update = flag.Bool("update", false, "regenerate testdata/ with ssh-keygen")

// requireSSHKeygen skips when OpenSSH's ssh-keygen is not installed.
func requireSSHKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		testenv.Skip(t, "ssh-keygen not installed; the cross-check against OpenSSH needs it")
	}
	return p
}

func runKeygen(t *testing.T, keygen string, args ...string) string {
	t.Helper()
	out, err := exec.Command(keygen, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writePrivate(t *testing.T, path string, block *pem.Block) {
	t.Helper()
	// ssh-keygen refuses private keys others can read.
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}

// keygenListing is one `ssh-keygen -l` line split into its parts.
type keygenListing struct {
	Bits        int
	Fingerprint string
	Comment     string
	Label       string
}

func parseListing(t *testing.T, line string) keygenListing {
	t.Helper()
	line = strings.TrimSpace(line)
	bits, rest, _ := strings.Cut(line, " ")
	fp, rest, _ := strings.Cut(rest, " ")
	open := strings.LastIndex(rest, " (")
	if open < 0 || !strings.HasSuffix(rest, ")") {
		t.Fatalf("ssh-keygen -l printed %q", line)
	}
	n, err := strconv.Atoi(bits)
	if err != nil {
		t.Fatalf("ssh-keygen -l printed %q", line)
	}
	return keygenListing{Bits: n, Fingerprint: fp, Comment: rest[:open], Label: rest[open+2 : len(rest)-1]}
}

var keygenLabels = map[string]string{
	TypeRSA: "RSA", TypeDSA: "DSA", TypeED25519: "ED25519",
	TypeECDSA256: "ECDSA", TypeECDSA384: "ECDSA", TypeECDSA521: "ECDSA",
}

// Keys seedinit writes are read by OpenSSH as the same key, with the
// same comment, and OpenSSH computes the same fingerprint and size.
func TestOurKeysReadBySSHKeygen(t *testing.T) {
	keygen := requireSSHKeygen(t)
	generate := map[string]func() (crypto.Signer, error){
		"ed25519":    func() (crypto.Signer, error) { _, k, err := ed25519.GenerateKey(rand.Reader); return k, err },
		"ecdsa-p256": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) },
		"ecdsa-p384": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) },
		"ecdsa-p521": func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P521(), rand.Reader) },
		"rsa-2048":   func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) },
	}
	for name, gen := range generate {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			priv, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			const comment = "root@our key"
			block, err := MarshalPrivateKey(priv, comment)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := NewPublicKey(priv.Public())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "key")
			writePrivate(t, keyFile, block)
			pubLine := string(MarshalAuthorizedKey(pub, comment))
			if err := os.WriteFile(keyFile+".pub", []byte(pubLine), 0o644); err != nil {
				t.Fatal(err)
			}

			if got := runKeygen(t, keygen, "-y", "-f", keyFile); got != pubLine {
				t.Errorf("ssh-keygen -y gives %q, we wrote %q", got, pubLine)
			}
			want := keygenListing{Bits: pub.Bits(), Fingerprint: FingerprintSHA256(pub), Comment: comment, Label: keygenLabels[pub.Type()]}
			got := parseListing(t, runKeygen(t, keygen, "-l", "-f", keyFile+".pub"))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ssh-keygen -l (-ours +ssh-keygen):\n%s", diff)
			}
			// And our parser reads back what we wrote.
			again, err := ParseRawPrivateKey(pem.EncodeToMemory(block))
			if err != nil {
				t.Fatalf("parse our own key: %v", err)
			}
			if againPub, err := PublicKeyOf(again); err != nil || !againPub.Equal(pub) {
				t.Errorf("our key parses back as a different key (%v)", err)
			}
		})
	}
}

// Keys ssh-keygen makes, in each format it writes, parse to the public key
// ssh-keygen -y derives; re-encoding an OpenSSH-format key gives
// ssh-keygen's bytes but for the random check numbers.
func TestSSHKeygenKeysParse(t *testing.T) {
	keygen := requireSSHKeygen(t)
	types := []struct {
		name string
		args []string
		// PEM block type ssh-keygen writes with -m PEM and -m PKCS8;
		// Ed25519 has no PEM form and stays in OpenSSH's format.
		pemType, pkcs8Type string
	}{
		{"ed25519", []string{"-t", "ed25519"}, openSSHPEMType, openSSHPEMType},
		{"ecdsa-p256", []string{"-t", "ecdsa", "-b", "256"}, "EC PRIVATE KEY", "PRIVATE KEY"},
		{"ecdsa-p384", []string{"-t", "ecdsa", "-b", "384"}, "EC PRIVATE KEY", "PRIVATE KEY"},
		{"ecdsa-p521", []string{"-t", "ecdsa", "-b", "521"}, "EC PRIVATE KEY", "PRIVATE KEY"},
		{"rsa-2048", []string{"-t", "rsa", "-b", "2048"}, "RSA PRIVATE KEY", "PRIVATE KEY"},
		// Go reads no PKCS#8 DSA keys, nor did x/crypto/ssh.
		{"dsa", []string{"-t", "dsa"}, "DSA PRIVATE KEY", ""},
	}
	formats := []struct {
		name string
		args []string
	}{
		{"openssh", nil},
		{"pem", []string{"-m", "PEM"}},
		{"pkcs8", []string{"-m", "PKCS8"}},
	}
	for _, kt := range types {
		for _, format := range formats {
			wantType := map[string]string{"openssh": openSSHPEMType, "pem": kt.pemType, "pkcs8": kt.pkcs8Type}[format.name]
			if wantType == "" {
				continue
			}
			t.Run(kt.name+"/"+format.name, func(t *testing.T) {
				t.Parallel()
				keyFile := filepath.Join(t.TempDir(), "key")
				args := append([]string{"-q", "-N", "", "-C", "made@ssh-keygen", "-f", keyFile}, kt.args...)
				runKeygen(t, keygen, append(args, format.args...)...)
				data, err := os.ReadFile(keyFile)
				if err != nil {
					t.Fatal(err)
				}
				block, _ := pem.Decode(data)
				if block == nil || block.Type != wantType {
					t.Fatalf("ssh-keygen wrote %.40q, want a %s block", data, wantType)
				}
				priv, err := ParseRawPrivateKey(data)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				pub, err := PublicKeyOf(priv)
				if err != nil {
					t.Fatal(err)
				}
				// -y adds the comment only when the file carries one.
				derived := strings.Fields(runKeygen(t, keygen, "-y", "-f", keyFile))
				if got := strings.Fields(string(MarshalAuthorizedKey(pub, ""))); !cmp.Equal(got, derived[:2]) {
					t.Errorf("our public key %q, ssh-keygen -y %q", got, derived[:2])
				}
				listing := parseListing(t, runKeygen(t, keygen, "-l", "-f", keyFile))
				if listing.Fingerprint != FingerprintSHA256(pub) || listing.Bits != pub.Bits() {
					t.Errorf("ours %d %s, ssh-keygen -l %d %s", pub.Bits(), FingerprintSHA256(pub), listing.Bits, listing.Fingerprint)
				}
				if block.Type == openSSHPEMType && pub.Type() != TypeDSA {
					ours, err := MarshalPrivateKey(priv, "made@ssh-keygen")
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(withoutCheckNumbers(t, block.Bytes), withoutCheckNumbers(t, ours.Bytes)); diff != "" {
						t.Errorf("re-encoded key differs from ssh-keygen's (-ssh-keygen +ours):\n%s", diff)
					}
				}
			})
		}
	}
}

// withoutCheckNumbers zeroes the two random check numbers at the start of
// an openssh-key-v1 private section, the only bytes that differ between
// two encodings of the same key.
func withoutCheckNumbers(t *testing.T, body []byte) []byte {
	t.Helper()
	r := wireReader{rest: body[len(openSSHMagic):]}
	r.text()
	r.text()
	r.bytes()
	r.uint32()
	r.bytes()
	r.uint32() // length of the private section
	if r.err != nil || len(r.rest) < 8 {
		t.Fatalf("malformed openssh-key-v1 body")
	}
	out := []byte(strings.Clone(string(body)))
	at := len(body) - len(r.rest)
	copy(out[at:at+8], make([]byte, 8))
	return out
}

// Encrypted keys in each format give ErrPassphraseMissing, not a parse
// failure.
func TestSSHKeygenEncryptedKeys(t *testing.T) {
	keygen := requireSSHKeygen(t)
	for _, format := range []string{"", "PEM", "PKCS8"} {
		t.Run("format="+format, func(t *testing.T) {
			t.Parallel()
			keyFile := filepath.Join(t.TempDir(), "key")
			args := []string{"-q", "-t", "ecdsa", "-N", "secret", "-f", keyFile}
			if format != "" {
				args = append(args, "-m", format)
			}
			runKeygen(t, keygen, args...)
			data, err := os.ReadFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseRawPrivateKey(data); !errors.Is(err, ErrPassphraseMissing) {
				t.Errorf("got %v, want ErrPassphraseMissing", err)
			}
		})
	}
}

// The fixtures in testdata/ let the comparison with ssh-keygen run where
// it is not installed. -update makes them again.
func TestFixturesFromSSHKeygen(t *testing.T) {
	fixtures := []struct {
		name      string
		args      []string
		encrypted bool
	}{
		{"ed25519", []string{"-t", "ed25519"}, false},
		{"ecdsa-p256.pem", []string{"-t", "ecdsa", "-m", "PEM"}, false},
		{"rsa-2048.pkcs8", []string{"-t", "rsa", "-b", "2048", "-m", "PKCS8"}, false},
		{"dsa.pem", []string{"-t", "dsa", "-m", "PEM"}, false},
		{"ed25519-encrypted", []string{"-t", "ed25519", "-N", "secret"}, true},
	}
	if *update {
		keygen := requireSSHKeygen(t)
		for _, f := range fixtures {
			keyFile := filepath.Join("testdata", f.name)
			os.Remove(keyFile)
			args := append([]string{"-q", "-C", "fixture@seedinit", "-f", keyFile}, f.args...)
			if !f.encrypted {
				args = append(args, "-N", "")
			}
			runKeygen(t, keygen, args...)
			listing := runKeygen(t, keygen, "-l", "-f", keyFile+".pub")
			if err := os.WriteFile(keyFile+".l", []byte(listing), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			keyFile := filepath.Join("testdata", f.name)
			data, err := os.ReadFile(keyFile)
			if err != nil {
				t.Fatal(err)
			}
			pubData, err := os.ReadFile(keyFile + ".pub")
			if err != nil {
				t.Fatal(err)
			}
			listingData, err := os.ReadFile(keyFile + ".l")
			if err != nil {
				t.Fatal(err)
			}
			wantPub, comment, err := ParseAuthorizedKey(pubData)
			if err != nil {
				t.Fatalf("parse %s.pub: %v", keyFile, err)
			}
			if got := string(MarshalAuthorizedKey(wantPub, comment)); got != string(pubData) {
				t.Errorf("re-encoded .pub %q, ssh-keygen wrote %q", got, pubData)
			}
			want := parseListing(t, string(listingData))
			got := keygenListing{Bits: wantPub.Bits(), Fingerprint: FingerprintSHA256(wantPub), Comment: comment, Label: keygenLabels[wantPub.Type()]}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ssh-keygen -l (-ssh-keygen +ours):\n%s", diff)
			}

			priv, err := ParseRawPrivateKey(data)
			if f.encrypted {
				if !errors.Is(err, ErrPassphraseMissing) {
					t.Errorf("got %v, want ErrPassphraseMissing", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse %s: %v", keyFile, err)
			}
			pub, err := PublicKeyOf(priv)
			if err != nil {
				t.Fatal(err)
			}
			if !pub.Equal(wantPub) {
				t.Errorf("private key gives %q, .pub holds %q", MarshalAuthorizedKey(pub, ""), pubData)
			}
		})
	}
}
