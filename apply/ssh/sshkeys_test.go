package ssh

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply/applytest"
)

func newBufferLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// indent makes a multi-line value fit under a YAML block scalar.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

func TestConfiguredKeys(t *testing.T) {
	requireRoot(t)
	rsaKey := mustKey(t, "ecdsa", "given@example") // the type of the content is not checked, as in cloud-init
	edKey := mustKey(t, "ed25519", "edkey@example")
	const cert = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t example\n"
	config := "ssh_keys:\n" +
		"  rsa_private: |\n" + indent(string(rsaKey.Private), "    ") +
		"  rsa_public: " + strings.TrimSpace(string(rsaKey.Public)) + "\n" +
		"  ed25519_private: |\n" + indent(string(edKey.Private), "    ") +
		"  ed25519_certificate: |\n" + indent(cert, "    ") +
		"  ecdsa_certificate: ecdsa-cert\n"
	recordKeyCalls(t)
	dir := t.TempDir()
	writeHostFile(t, dir, "etc/ssh/sshd_config", "# image config\nPort 22\nHostCertificate /old\n", 0o644)
	writeHostFile(t, dir, "etc/ssh/ssh_host_dsa_key", "image key\n", 0o600)
	env := applytest.NewEnvAt(t, dir, loadConfig(t, config))
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{
		"sshd_config":                   "# image config\nPort 22\nHostCertificate /etc/ssh/ssh_host_ed25519_key-cert.pub\n",
		"ssh_host_rsa_key":              string(rsaKey.Private),
		"ssh_host_rsa_key.pub":          strings.TrimSpace(string(rsaKey.Public)), // a plain scalar: no newline
		"ssh_host_ed25519_key":          string(edKey.Private),
		"ssh_host_ed25519_key.pub":      strings.TrimSuffix(string(edKey.Public), "\n") + " root@localhost\n",
		"ssh_host_ed25519_key-cert.pub": cert,
		"ssh_host_ecdsa_key-cert.pub":   "ecdsa-cert",
	}
	if diff := cmp.Diff(want, readKeys(t, dir)); diff != "" {
		t.Errorf("/etc/ssh (-want +got):\n%s", diff)
	}
	for name, want := range map[string]fileInfo{
		"ssh_host_rsa_key":              {Mode: 0o600},
		"ssh_host_rsa_key.pub":          {Mode: 0o600},
		"ssh_host_ed25519_key-cert.pub": {Mode: 0o600},
		"ssh_host_ed25519_key.pub":      {Mode: 0o644},
		"sshd_config":                   {Mode: 0o644},
	} {
		if diff := cmp.Diff(want, statFile(t, filepath.Join(dir, "etc/ssh", name))); diff != "" {
			t.Errorf("%s mode/owner (-want +got):\n%s", name, diff)
		}
	}
}

func mustKey(t testing.TB, keyType, comment string) *HostKey {
	t.Helper()
	k, err := GenerateHostKey(keyType, comment, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestConfiguredKeysBadEntries(t *testing.T) {
	edKey := mustKey(t, "ed25519", "")
	config := "ssh_keys:\n" +
		"  rsa_private: [not, a, key]\n" +
		"  ecdsa_public: 42\n" +
		"  foo_private: whatever\n" +
		"  ed25519-sk_private: whatever\n" +
		"  ecdsa_private: not a key at all\n" +
		"  ed25519_private: |\n" + indent(string(edKey.Private), "    ")
	recordKeyCalls(t)
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, config))
	var logs bytes.Buffer
	env.Log = newBufferLogger(&logs)
	err := Run(context.Background(), env.Env)
	if err == nil {
		t.Fatal("Run succeeded with bad ssh_keys entries")
	}
	for _, want := range []string{
		"write ssh_keys entry rsa_private: want a string, got a list",
		"write ssh_keys entry ecdsa_public: want a string, got an integer",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// ecdsa_public was given (even if bad), so cloud-init derives nothing
	// for ecdsa_private; nothing is said about it.
	if strings.Contains(err.Error(), "ecdsa_private") {
		t.Errorf("error mentions ecdsa_private: %v", err)
	}
	for _, want := range []string{
		`skipping unrecognized ssh_keys entry \"foo_private\"`,
		`skipping unsupported ssh_keys entry \"ed25519-sk_private\"`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not contain %s:\n%s", want, logs.String())
		}
	}
	wantFiles := map[string]string{
		"ssh_host_ecdsa_key":       "not a key at all",
		"ssh_host_ed25519_key":     string(edKey.Private),
		"ssh_host_ed25519_key.pub": strings.TrimSuffix(string(edKey.Public), "\n") + " root@localhost\n",
	}
	if diff := cmp.Diff(wantFiles, readKeys(t, dir)); diff != "" {
		t.Errorf("/etc/ssh (-want +got):\n%s", diff)
	}
}

func TestConfiguredKeysUnparsablePrivate(t *testing.T) {
	recordKeyCalls(t)
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_keys:\n  rsa_private: not a key\n"))
	err := Run(context.Background(), env.Env)
	if err == nil || !strings.Contains(err.Error(), "derive public key for ssh_keys entry rsa_private") {
		t.Fatalf("Run error = %v, want one naming rsa_private", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "etc/ssh/ssh_host_rsa_key.pub")); statErr == nil {
		t.Errorf("a .pub was written for an unparsable private key")
	}
}

func TestConfiguredKeysSkipGeneration(t *testing.T) {
	recordKeyCalls(t)
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_keys: {}\n"))
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/ssh")); err == nil {
		if names := listDir(t, filepath.Join(dir, "etc/ssh")); len(names) != 0 {
			t.Errorf("ssh_keys given (even empty): want no generated keys, got %v", names)
		}
	}
}

func TestCredentials(t *testing.T) {
	const (
		keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKO6bxSEvvz5Ip9xqKeirkwop/wL0mm1AoCTCqT+TnVE a@x"
		keyB = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC b@x"
		keyC = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY c@x"
	)
	debianOpts := `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"debian\" rather than the user \"root\".';echo;sleep 10;exit 142"`
	noneOpts := strings.ReplaceAll(debianOpts, `\"debian\"`, `\"NONE\"`)
	const distro = "system_info:\n  default_user:\n    name: debian\n"
	tests := []struct {
		name       string
		config     string
		publicKeys []string
		want       []keyCall
	}{
		{
			name:       "default user and disabled root",
			config:     distro + "users: [default]\nssh_authorized_keys: [" + keyB + ", " + keyA + "]\n",
			publicKeys: []string{keyA},
			want: []keyCall{
				{User: "debian", Keys: []string{keyA, keyB}},
				{User: "root", Keys: []string{keyA, keyB}, Options: debianOpts},
			},
		},
		{
			name:       "root allowed",
			config:     distro + "users: [default]\ndisable_root: false\n",
			publicKeys: []string{keyA},
			want: []keyCall{
				{User: "debian", Keys: []string{keyA}},
				{User: "root", Keys: []string{keyA}},
			},
		},
		{
			name:       "no default user",
			config:     distro + "users: [{name: alice}]\nssh_authorized_keys: [" + keyC + "]\n",
			publicKeys: []string{keyA},
			want: []keyCall{
				{User: "root", Keys: []string{keyA, keyC}, Options: noneOpts},
			},
		},
		{
			name:       "public keys not allowed",
			config:     distro + "users: [default]\nallow_public_ssh_keys: false\nssh_authorized_keys: [" + keyC + "]\n",
			publicKeys: []string{keyA},
			want: []keyCall{
				{User: "debian", Keys: []string{keyC}},
				{User: "root", Keys: []string{keyC}, Options: debianOpts},
			},
		},
		{
			name:   "legacy user key names the default user",
			config: distro + "user: bob\ndisable_root_opts: 'no-pty,command=\"echo $USER not $DISABLE_USER\"'\n",
			want: []keyCall{
				{User: "bob", Keys: nil},
				{User: "root", Keys: nil, Options: `no-pty,command="echo bob not root"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := recordKeyCalls(t)
			env := applytest.NewEnv(t, loadConfig(t, "ssh_genkeytypes: []\n"+tt.config))
			env.Seed.PublicKeys = tt.publicKeys
			if err := Run(context.Background(), env.Env); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, *calls); diff != "" {
				t.Errorf("authorized keys set up (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultUser(t *testing.T) {
	const distro = "system_info:\n  default_user:\n    name: debian\n    gecos: Debian\n"
	tests := []struct {
		name    string
		config  string
		want    string
		wantErr bool
	}{
		// The users module creates the default user then; it gets the keys.
		{name: "no users key", config: distro, want: "debian"},
		{name: "empty users list", config: distro + "users: []", want: ""},
		{name: "users default", config: distro + "users: [default]", want: "debian"},
		{name: "users comma string", config: distro + "users: 'alice, default'", want: "debian"},
		{name: "users mapping true", config: distro + "users: {default: yes}", want: "debian"},
		{name: "users mapping false", config: distro + "users: {default: no}", want: ""},
		{name: "unnamed entry is the default", config: distro + "users: [{sudo: ALL}]", want: "debian"},
		{name: "named entries only", config: distro + "users: [{name: alice}, bob]", want: ""},
		{name: "no distro default", config: "users: [default]", want: ""},
		{name: "legacy user string", config: distro + "user: bob", want: "bob"},
		{name: "legacy user mapping", config: distro + "user: {name: carol, shell: /bin/sh}", want: "carol"},
		{name: "legacy user without name", config: distro + "user: {shell: /bin/sh}", want: "debian"},
		{name: "default user without a name", config: "system_info: {default_user: {gecos: x}}\nusers: [default]", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultUser(loadConfig(t, tt.config))
			if (err != nil) != tt.wantErr {
				t.Fatalf("DefaultUser error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("DefaultUser = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRootKeyOptions(t *testing.T) {
	tests := []struct {
		name        string
		disableRoot bool
		template    string
		user        string
		want        string
	}{
		{"disabled", true, DisableRootOptions, "debian", `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"debian\" rather than the user \"root\".';echo;sleep 10;exit 142"`},
		{"no default user", true, "$USER/$DISABLE_USER/$USER", "", "NONE/root/NONE"},
		{"allowed", false, DisableRootOptions, "debian", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rootKeyOptions(tt.disableRoot, tt.template, tt.user); got != tt.want {
				t.Errorf("rootKeyOptions = %q, want %q", got, tt.want)
			}
		})
	}
}
