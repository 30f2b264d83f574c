package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// makeCert returns a self-signed CA certificate in PEM whose subject is
// rawSubject (DER) or, when nil, CN=cn.
func makeCert(t testing.TB, cn string, rawSubject []byte) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, RawSubject: rawSubject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// rawName builds a DER name from RDNs of (OID, tag, value) triples.
func rawName(t testing.TB, rdns ...[]atv) []byte {
	t.Helper()
	var seq []byte
	for _, rdn := range rdns {
		var set []byte
		for _, a := range rdn {
			oid, err := asn1.Marshal(a.oid)
			if err != nil {
				t.Fatal(err)
			}
			set = append(set, derTLV(0x30, append(oid, derTLV(a.tag, a.value)...))...)
		}
		seq = append(seq, derTLV(0x31, set)...)
	}
	return derTLV(0x30, seq)
}

type atv struct {
	oid   asn1.ObjectIdentifier
	tag   int
	value []byte
}

var (
	oidCN = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO  = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidC  = asn1.ObjectIdentifier{2, 5, 4, 6}
)

func bmp(s string) []byte {
	var out []byte
	for _, r := range s {
		out = append(out, byte(r>>8), byte(r))
	}
	return out
}

func TestSubjectHashMatchesOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		testenv.Skip(t, "openssl is not installed; it is the reference for subject hashes")
	}
	cases := map[string][]byte{
		"plain":            rawName(t, []atv{{oidC, tagPrintable, []byte("DE")}}, []atv{{oidCN, tagUTF8, []byte("Example Root CA")}}),
		"case and spaces":  rawName(t, []atv{{oidCN, tagUTF8, []byte("  Mixed\t CASE   Name  ")}}),
		"multi-valued rdn": rawName(t, []atv{{oidO, tagUTF8, []byte("Org")}, {oidCN, tagPrintable, []byte("A B")}}),
		"bmp":              rawName(t, []atv{{oidCN, tagBMP, bmp("Wide Ümlaut NAME")}}),
		"t61":              rawName(t, []atv{{oidCN, tagT61, []byte("Caf\xe9 Root")}}),
		"ia5":              rawName(t, []atv{{oidCN, tagIA5, []byte("MAIL@EXAMPLE.ORG")}}),
		"non-ascii upper":  rawName(t, []atv{{oidCN, tagUTF8, []byte("ÄÖÜ root")}}),
	}
	for name, subject := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.pem")
			if err := os.WriteFile(p, []byte(makeCert(t, "", subject)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(openssl, "x509", "-noout", "-subject_hash", "-in", p).Output()
			if err != nil {
				t.Fatal(err)
			}
			h, err := SubjectHash(subject)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(hex8(h)); got != want {
				t.Errorf("openssl says %s, we say %s", got, want)
			}
		})
	}
}

func hex8(h uint32) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[h&0xf]
		h >>= 4
	}
	return string(b)
}

func config(t *testing.T, text string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return apply.Config(v.(map[string]any))
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// storeTree lays out a Debian store with two default certificates (one
// deselected) and one local certificate.
func storeTree(t *testing.T, dir string, certs map[string]string) {
	writeFile(t, dir, "usr/share/ca-certificates/mozilla/Alpha_Root.crt", certs["alpha"])
	writeFile(t, dir, "usr/share/ca-certificates/mozilla/Beta (Old), Root.crt", strings.TrimSuffix(certs["beta"], "\n"))
	writeFile(t, dir, "usr/share/ca-certificates/mozilla/Gamma.crt", certs["gamma"])
	writeFile(t, dir, "usr/local/share/ca-certificates/corp/zeta.crt", certs["zeta"])
	writeFile(t, dir, "usr/local/share/ca-certificates/local.crt", certs["local"])
	writeFile(t, dir, "etc/ca-certificates.conf", "# comment\nmozilla/Gamma.crt\nmozilla/Alpha_Root.crt\n!mozilla/Gone.crt\nmozilla/Beta (Old), Root.crt\nmozilla/Missing.crt\n")
	if err := os.MkdirAll(filepath.Join(dir, "etc/ssl/certs"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// listing describes the system directory: each entry with its link
// target, prefix removed so that host and target paths compare.
func listing(t *testing.T, dir, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if dest, err := os.Readlink(p); err == nil {
			out = append(out, e.Name()+" -> "+strings.TrimPrefix(dest, prefix))
			continue
		}
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestUpdateMatchesUpdateCACertificates runs Debian's
// update-ca-certificates over one copy of a store and Update over another
// and compares the links and the bundle.
func TestUpdateMatchesUpdateCACertificates(t *testing.T) {
	tool := "/usr/sbin/update-ca-certificates"
	if _, err := os.Stat(tool); err != nil {
		testenv.Skip(t, "update-ca-certificates is not installed (Debian's ca-certificates package); it is the reference")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		testenv.Skip(t, "openssl is not installed; update-ca-certificates needs it")
	}
	certs := map[string]string{}
	for _, n := range []string{"alpha", "beta", "gamma", "zeta", "local"} {
		certs[n] = makeCert(t, "Root "+n, nil)
	}
	// Two certificates with the same subject hash get .0 and .1.
	certs["gamma"] = makeCert(t, "Root alpha", nil)

	ref := t.TempDir()
	storeTree(t, ref, certs)
	cmd := exec.Command(tool, "--certsconf", filepath.Join(ref, "etc/ca-certificates.conf"),
		"--certsdir", filepath.Join(ref, "usr/share/ca-certificates"),
		"--localcertsdir", filepath.Join(ref, "usr/local/share/ca-certificates"),
		"--etccertsdir", filepath.Join(ref, "etc/ssl/certs"),
		"--hooksdir", filepath.Join(ref, "no-hooks"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("update-ca-certificates: %v\n%s", err, out)
	}

	ours := t.TempDir()
	storeTree(t, ours, certs)
	root, err := rootfs.Open(ours)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := Update(root, DebianStore); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(listing(t, filepath.Join(ref, "etc/ssl/certs"), ref), listing(t, filepath.Join(ours, "etc/ssl/certs"), "")); diff != "" {
		t.Errorf("/etc/ssl/certs (-update-ca-certificates +seedinit):\n%s", diff)
	}
	want, _ := os.ReadFile(filepath.Join(ref, "etc/ssl/certs/ca-certificates.crt"))
	got, _ := os.ReadFile(filepath.Join(ours, "etc/ssl/certs/ca-certificates.crt"))
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("bundle (-update-ca-certificates +seedinit):\n%s", diff)
	}
	// A second run changes nothing.
	res, err := Update(root, DebianStore)
	if err != nil || len(res.Added)+len(res.Removed) > 0 {
		t.Errorf("second Update: %+v, %v; want no changes", res, err)
	}
}

func TestModule(t *testing.T) {
	certA, certB := makeCert(t, "Corp A", nil), makeCert(t, "Corp B", nil)
	tests := []struct {
		name       string
		yaml       string
		setup      func(t *testing.T, dir string)
		wantConf   string
		wantBundle string
		wantRan    []string
		warns      int
		skipped    bool
	}{
		{name: "absent", yaml: "{}", skipped: true},
		{
			name: "trusted added to a default store",
			yaml: "ca_certs:\n  trusted:\n  - |\n" + indent(certA) + "  - |\n" + indent(certB),
			setup: func(t *testing.T, dir string) {
				writeFile(t, dir, "usr/share/ca-certificates/mozilla/X.crt", certB)
				writeFile(t, dir, "etc/ca-certificates.conf", "mozilla/X.crt\ncloud-init-ca-certs.crt\n\n")
			},
			wantConf:   "mozilla/X.crt\ncloud-init-ca-certs.crt\n",
			wantBundle: certB + certA + "\n" + certB,
		},
		{
			name: "remove defaults",
			yaml: "ca_certs:\n  remove_defaults: true\n  trusted: |\n" + indent(certA),
			setup: func(t *testing.T, dir string) {
				writeFile(t, dir, "usr/share/ca-certificates/mozilla/X.crt", certB)
				writeFile(t, dir, "etc/ca-certificates.conf", "mozilla/X.crt\n")
				writeFile(t, dir, "etc/ssl/certs/old.pem", certB)
				writeFile(t, dir, "usr/bin/debconf-set-selections", "")
			},
			wantConf:   "cloud-init-ca-certs.crt\n",
			wantBundle: certA,
			wantRan:    []string{"/bin/sh -c echo 'ca-certificates ca-certificates/trust_new_crts select no' | /usr/bin/debconf-set-selections -"},
		},
		{
			name:       "deprecated keys",
			yaml:       "ca-certs:\n  remove-defaults: false\n  trusted: [\"" + strings.ReplaceAll(certA, "\n", "\\n") + "\"]",
			wantConf:   "cloud-init-ca-certs.crt\n",
			wantBundle: certA,
			warns:      2,
		},
		{
			name:  "rhel store without update-ca-trust",
			yaml:  "ca_certs: {trusted: [x]}",
			setup: func(t *testing.T, dir string) { os.MkdirAll(filepath.Join(dir, "etc/pki/ca-trust"), 0o755) },
			warns: 1,
		},
		{
			name: "rhel store with update-ca-trust",
			yaml: "ca_certs: {trusted: [x]}",
			setup: func(t *testing.T, dir string) {
				os.MkdirAll(filepath.Join(dir, "etc/pki/ca-trust"), 0o755)
				writeFile(t, dir, "usr/bin/update-ca-trust", "")
				// Found as a command only when executable, as which finds it.
				os.Chmod(filepath.Join(dir, "usr/bin/update-ca-trust"), 0o755)
			},
			wantRan: []string{"/usr/bin/update-ca-trust"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			var env *applytest.Env
			for run := 0; run < 2; run++ {
				env = applytest.NewEnvAt(t, dir, config(t, tc.yaml))
				err := run_(env)
				if tc.skipped {
					if !errors.Is(err, apply.ErrSkipped) {
						t.Fatalf("got %v, want skipped", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
			if tc.wantConf != "" {
				if got, _ := os.ReadFile(filepath.Join(dir, "etc/ca-certificates.conf")); string(got) != tc.wantConf {
					t.Errorf("ca-certificates.conf = %q, want %q", got, tc.wantConf)
				}
			}
			if tc.wantBundle != "" {
				got, _ := os.ReadFile(filepath.Join(dir, "etc/ssl/certs/ca-certificates.crt"))
				if diff := cmp.Diff(tc.wantBundle, string(got)); diff != "" {
					t.Errorf("bundle (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantRan, env.Sys.Ran()); diff != "" {
				t.Errorf("commands of the second run (-want +got):\n%s", diff)
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
		})
	}
}

func run_(env *applytest.Env) error { return run(context.Background(), env.Env) }

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	return b.String()
}

func TestSelectInConfig(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{"", "cloud-init-ca-certs.crt\n"},
		{"a\n", "a\ncloud-init-ca-certs.crt\n"},
		{"cloud-init-ca-certs.crt\na\n\n  \n", "a\ncloud-init-ca-certs.crt\n"},
		{"a\r\nb", "a\nb\ncloud-init-ca-certs.crt\n"},
	} {
		t.Run(tc.conf, func(t *testing.T) {
			if got := selectInConfig(tc.conf, "cloud-init-ca-certs.crt"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
