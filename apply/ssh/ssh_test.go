package ssh

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// keyCall is one setupUserKeys call as a test sees it.
type keyCall struct {
	User    string
	Keys    []string
	Options string
}

// recordKeyCalls replaces setupUserKeys for one test and returns what it
// was asked to do.
func recordKeyCalls(t *testing.T) *[]keyCall {
	t.Helper()
	var mu sync.Mutex
	calls := &[]keyCall{}
	old := setupUserKeys
	setupUserKeys = func(_ *apply.Env, user string, keys []string, options string) error {
		mu.Lock()
		defer mu.Unlock()
		*calls = append(*calls, keyCall{User: user, Keys: append([]string(nil), keys...), Options: options})
		return nil
	}
	t.Cleanup(func() { setupUserKeys = old })
	return calls
}

// loadConfig decodes a cloud-config the way the rest of seedinit does.
func loadConfig(t testing.TB, text string) apply.Config {
	t.Helper()
	if strings.TrimSpace(text) == "" {
		return apply.Config{}
	}
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("config is %T, want a mapping", v)
	}
	return apply.Config(m)
}

// writeHostFile puts a file into a test root before the module runs.
func writeHostFile(t testing.TB, dir, name, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func listDir(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fileInfo is a file's mode and owner, for comparing with want.
type fileInfo struct {
	Mode     fs.FileMode
	UID, GID uint32
}

func statFile(t testing.TB, p string) fileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fileInfo{Mode: fi.Mode().Perm(), UID: st.Uid, GID: st.Gid}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "checks root:root ownership of host keys; needs to run as root")
	}
}

func TestDeleteKeys(t *testing.T) {
	imageFiles := []string{
		"moduli", "ssh_config", "sshd_config", "ssh_host_foo",
		"ssh_host_rsa_key", "ssh_host_rsa_key.pub", "ssh_host_rsa_key-cert.pub",
		"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_dsa_key",
		"ssh_known_hosts", "not_ssh_host_rsa_key",
	}
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{
			name:   "default deletes host keys only",
			config: "ssh_genkeytypes: []",
			want:   []string{"moduli", "not_ssh_host_rsa_key", "ssh_config", "ssh_host_foo", "ssh_known_hosts", "sshd_config"},
		},
		{
			name:   "false keeps them",
			config: "ssh_deletekeys: false\nssh_genkeytypes: []",
			want:   append([]string(nil), imageFiles...),
		},
		{
			name:   "cloud-init spelling of false",
			config: "ssh_deletekeys: 'off'\nssh_genkeytypes: []",
			want:   append([]string(nil), imageFiles...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recordKeyCalls(t)
			dir := t.TempDir()
			for _, f := range imageFiles {
				writeHostFile(t, dir, "etc/ssh/"+f, "image content of "+f+"\n", 0o600)
			}
			env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.config))
			if err := Run(context.Background(), env.Env); err != nil {
				t.Fatalf("Run: %v", err)
			}
			sort.Strings(tt.want)
			if diff := cmp.Diff(tt.want, listDir(t, filepath.Join(dir, "etc/ssh"))); diff != "" {
				t.Errorf("files left in /etc/ssh (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeleteKeysDoesNotFollowSymlinkOut(t *testing.T) {
	recordKeyCalls(t)
	outside := t.TempDir()
	writeHostFile(t, outside, "precious", "keep me\n", 0o600)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "precious"), filepath.Join(dir, "etc/ssh/ssh_host_rsa_key")); err != nil {
		t.Fatal(err)
	}
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_genkeytypes: []"))
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "etc/ssh/ssh_host_rsa_key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host key symlink is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Errorf("the file the symlink pointed to is gone: %v", err)
	}
}

// checkGeneratedKey parses a generated pair back and checks that its two
// halves agree, its type and size, its comment and its files' modes.
func checkGeneratedKey(t *testing.T, dir, keyType, comment string, wantPriv fileInfo) {
	t.Helper()
	privPath := filepath.Join(dir, "etc/ssh/ssh_host_"+keyType+"_key")
	privData, err := os.ReadFile(privPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(privData, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
		t.Errorf("%s: not in OpenSSH format:\n%.60s", keyType, privData)
	}
	priv, err := sshkey.ParseRawPrivateKey(privData)
	if err != nil {
		t.Fatalf("%s: parse private key: %v", keyType, err)
	}
	switch k := priv.(type) {
	case *rsa.PrivateKey:
		if keyType != "rsa" || k.N.BitLen() != 3072 {
			t.Errorf("%s: got an RSA key of %d bits", keyType, k.N.BitLen())
		}
	case *ecdsa.PrivateKey:
		if keyType != "ecdsa" || k.Curve.Params().Name != "P-256" {
			t.Errorf("%s: got an ECDSA key on %s", keyType, k.Curve.Params().Name)
		}
	case ed25519.PrivateKey:
		if keyType != "ed25519" {
			t.Errorf("%s: got an Ed25519 key", keyType)
		}
	default:
		t.Errorf("%s: got a %T", keyType, priv)
	}
	if got, _ := OpenSSHKeyComment(privData); got != comment {
		t.Errorf("%s: private key comment %q, want %q", keyType, got, comment)
	}
	pubData, err := os.ReadFile(privPath + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sshkey.PublicKeyOf(priv)
	if err != nil {
		t.Fatal(err)
	}
	if want := authorizedLine(pub, comment) + "\n"; string(pubData) != want {
		t.Errorf("%s: .pub is %q, want %q", keyType, pubData, want)
	}
	if diff := cmp.Diff(wantPriv, statFile(t, privPath)); diff != "" {
		t.Errorf("%s: private key mode/owner (-want +got):\n%s", keyType, diff)
	}
	if diff := cmp.Diff(fileInfo{Mode: 0o644}, statFile(t, privPath+".pub")); diff != "" {
		t.Errorf("%s: public key mode/owner (-want +got):\n%s", keyType, diff)
	}
}

func TestGenerateHostKeys(t *testing.T) {
	requireRoot(t)
	recordKeyCalls(t)
	dir := t.TempDir()
	writeHostFile(t, dir, "etc/hostname", "web-1\n", 0o644)
	env := applytest.NewEnvAt(t, dir, nil)
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, keyType := range []string{"rsa", "ecdsa", "ed25519"} {
		t.Run(keyType, func(t *testing.T) {
			checkGeneratedKey(t, dir, keyType, "root@web-1", fileInfo{Mode: 0o600})
		})
	}
	want := []string{"ssh_host_ecdsa_key", "ssh_host_ecdsa_key.pub", "ssh_host_ed25519_key",
		"ssh_host_ed25519_key.pub", "ssh_host_rsa_key", "ssh_host_rsa_key.pub"}
	if diff := cmp.Diff(want, listDir(t, filepath.Join(dir, "etc/ssh"))); diff != "" {
		t.Errorf("files in /etc/ssh (-want +got):\n%s", diff)
	}
	console := env.Console.String()
	for _, keyType := range []string{"rsa", "ecdsa", "ed25519"} {
		if !strings.Contains(console, "Generating public/private "+keyType+" key pair.\n") {
			t.Errorf("console does not report the %s key:\n%s", keyType, console)
		}
	}
	if strings.Contains(console, "PRIVATE KEY") {
		t.Errorf("console shows a private key")
	}

	t.Run("second run keeps them", func(t *testing.T) {
		before := readKeys(t, dir)
		env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_deletekeys: false"))
		if err := Run(context.Background(), env.Env); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if diff := cmp.Diff(before, readKeys(t, dir)); diff != "" {
			t.Errorf("host keys changed (-before +after):\n%s", diff)
		}
		if env.Console.Len() != 0 {
			t.Errorf("console output on a run that generated nothing:\n%s", env.Console)
		}
	})
}

func readKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range listDir(t, filepath.Join(dir, "etc/ssh")) {
		data, err := os.ReadFile(filepath.Join(dir, "etc/ssh", name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(data)
	}
	return out
}

func TestGenerateHostKeysSSHKeysGroup(t *testing.T) {
	requireRoot(t)
	recordKeyCalls(t)
	dir := t.TempDir()
	writeHostFile(t, dir, "etc/group", "root:x:0:\nssh_keys:x:998:\n", 0o644)
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_genkeytypes: [ed25519, ecdsa]\nssh_quiet_keygen: true"))
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, keyType := range []string{"ed25519", "ecdsa"} {
		checkGeneratedKey(t, dir, keyType, "root@test-host", fileInfo{Mode: 0o640, GID: 998})
	}
	if env.Console.Len() != 0 {
		t.Errorf("ssh_quiet_keygen: console shows\n%s", env.Console)
	}
}

func TestGenerateHostKeysTypes(t *testing.T) {
	tests := []struct {
		name      string
		config    string
		existing  map[string]string
		wantFiles []string
		wantWarn  bool
	}{
		{
			name:      "scalar is a list of one",
			config:    "ssh_genkeytypes: ed25519",
			wantFiles: []string{"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"},
		},
		{
			name:   "null generates none",
			config: "ssh_genkeytypes:",
		},
		{
			name:     "dsa and unknown types are reported",
			config:   "ssh_genkeytypes: [dsa, rsa1, ed25519]",
			wantWarn: true,
			wantFiles: []string{
				"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub",
			},
		},
		{
			name:     "unreadable existing key is replaced",
			config:   "ssh_deletekeys: false\nssh_genkeytypes: [ed25519]",
			existing: map[string]string{"ssh_host_ed25519_key": "garbage\n"},
			wantWarn: true,
			wantFiles: []string{
				"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recordKeyCalls(t)
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "etc/ssh"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.existing {
				writeHostFile(t, dir, "etc/ssh/"+name, content, 0o600)
			}
			env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.config))
			var logs bytes.Buffer
			env.Log = newBufferLogger(&logs)
			if err := Run(context.Background(), env.Env); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.wantFiles, listDir(t, filepath.Join(dir, "etc/ssh"))); diff != "" {
				t.Errorf("files in /etc/ssh (-want +got):\n%s", diff)
			}
			if got := strings.Contains(logs.String(), "level=WARN"); got != tt.wantWarn {
				t.Errorf("warned = %v, want %v; log:\n%s", got, tt.wantWarn, logs.String())
			}
			for _, f := range tt.wantFiles {
				if strings.HasSuffix(f, "_key") {
					data, _ := os.ReadFile(filepath.Join(dir, "etc/ssh", f))
					if _, err := sshkey.ParseRawPrivateKey(data); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				}
			}
		})
	}
}

func TestExistingKeyWithoutPublicHalfGetsItBack(t *testing.T) {
	recordKeyCalls(t)
	key, err := GenerateHostKey("ed25519", "root@image", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeHostFile(t, dir, "etc/ssh/ssh_host_ed25519_key", string(key.Private), 0o600)
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_deletekeys: false\nssh_genkeytypes: [ed25519]"))
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(map[string]string{
		"ssh_host_ed25519_key":     string(key.Private),
		"ssh_host_ed25519_key.pub": string(key.Public),
	}, readKeys(t, dir)); diff != "" {
		t.Errorf("/etc/ssh (-want +got):\n%s", diff)
	}
}
