package console

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/ssh"
	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

func config(t *testing.T, text string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatalf("load %q: %v", text, err)
	}
	if v == nil {
		return apply.Config{}
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

// hostKeys writes one public host key of each common type into dir.
func hostKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	edPub, _, _ := ed25519.GenerateKey(rand.Reader)
	out := map[string]string{}
	for name, k := range map[string]any{"rsa": &rsaKey.PublicKey, "ecdsa": &ecKey.PublicKey, "ed25519": edPub} {
		pub, err := sshkey.NewPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSpace(string(sshkey.MarshalAuthorizedKey(pub, "")))
		if name != "ecdsa" {
			line += " root@" + name
		}
		out[name] = line + "\n"
		writeFile(t, dir, "etc/ssh/ssh_host_"+name+"_key.pub", out[name])
	}
	return out
}

func TestKeygenLineMatchesSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		testenv.Skip(t, "ssh-keygen is not installed; it is the reference for the fingerprint lines")
	}
	dir := t.TempDir()
	hostKeys(t, dir)
	for _, typ := range []string{"rsa", "ecdsa", "ed25519"} {
		t.Run(typ, func(t *testing.T) {
			p := filepath.Join(dir, "etc/ssh/ssh_host_"+typ+"_key.pub")
			want, err := exec.Command(keygen, "-l", "-f", p).Output()
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(p)
			got := keygenLine(p, data)
			if diff := cmp.Diff(strings.TrimSpace(string(want)), got); diff != "" {
				t.Errorf("(-ssh-keygen +ours):\n%s", diff)
			}
		})
	}
}

func TestKeysToConsole(t *testing.T) {
	now = func() time.Time { return time.Date(2026, 3, 1, 9, 5, 7, 0, time.UTC) }
	t.Cleanup(func() { now = time.Now })
	const stamp = "<14>Mar  1 09:05:07 cloud-init: "
	tests := []struct {
		name, yaml  string
		wantFPTypes []string
		wantKeys    []string
		skipped     bool
	}{
		{name: "defaults", yaml: "{}", wantFPTypes: []string{"ECDSA", "ED25519", "RSA"}, wantKeys: []string{"ecdsa", "ed25519", "rsa"}},
		{name: "blacklists", yaml: "ssh_fp_console_blacklist: [ssh-rsa]\nssh_key_console_blacklist: [ssh-ed25519, ecdsa-sha2-nistp384]", wantFPTypes: []string{"ECDSA", "ED25519"}, wantKeys: []string{"rsa"}},
		{name: "all blacklisted", yaml: "ssh_fp_console_blacklist: [ssh-rsa, ssh-ed25519, ecdsa-sha2-nistp384]\nssh_key_console_blacklist: [ssh-rsa, ssh-ed25519, ecdsa-sha2-nistp384]"},
		{name: "disabled", yaml: "ssh: {emit_keys_to_console: false}", skipped: true},
	}
	dir := t.TempDir()
	keys := hostKeys(t, dir)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			err := runKeysToConsole(context.Background(), env.Env)
			if tc.skipped {
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("got %v, want skipped", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			if len(tc.wantFPTypes) > 0 {
				want.WriteString(stamp + strings.Repeat("#", 61) + "\n" + stamp + "-----BEGIN SSH HOST KEY FINGERPRINTS-----\n")
				for _, typ := range tc.wantFPTypes {
					name := strings.ToLower(typ)
					want.WriteString(stamp + keygenLine("", []byte(keys[name])) + "\n")
				}
				want.WriteString(stamp + "-----END SSH HOST KEY FINGERPRINTS-----\n" + stamp + strings.Repeat("#", 61) + "\n")
			}
			if len(tc.wantKeys) > 0 {
				want.WriteString("-----BEGIN SSH HOST KEY KEYS-----\n")
				for _, k := range tc.wantKeys {
					want.WriteString(keys[k])
				}
				want.WriteString("-----END SSH HOST KEY KEYS-----\n")
			}
			if diff := cmp.Diff(strings.TrimSpace(want.String())+"\n", env.Console.String()); diff != "" {
				t.Errorf("console (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthkeyFingerprints(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1Y2t5IGtleSBmb3IgdGVzdHMgb25seSEhISEh me@host"
	dir := t.TempDir()
	writeFile(t, dir, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\nsvc:x:999:999::/var/svc:/bin/false\n")
	writeFile(t, dir, "home/ann/.ssh/authorized_keys", key+"\n")
	writeFile(t, dir, "srv/keys/bob", "# nothing but a comment\n")
	writeFile(t, dir, "etc/ssh/sshd_config", "AuthorizedKeysFile /etc/ssh/keys/%u .ssh/authorized_keys\n")
	tests := []struct {
		name, yaml string
		want       string
		skipped    bool
		wantErr    bool
	}{
		{name: "off", yaml: "no_ssh_fingerprints: true", skipped: true},
		{
			name: "users", yaml: "users: [ann, {name: svc, system: true}, bob]\nauthkey_hash: md5",
			want: ssh.FingerprintTable("ann", "/home/ann/.ssh/authorized_keys", []string{key}, "md5") +
				ssh.FingerprintTable("bob", "/home/bob/.ssh/authorized_keys", nil, "md5"),
		},
		{
			name: "default user", yaml: "users: [default]\nsystem_info: {default_user: {name: ann}}",
			want: ssh.FingerprintTable("ann", "/home/ann/.ssh/authorized_keys", []string{key}, "sha256"),
		},
		{name: "unknown user", yaml: "users: [nobody-here]", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			err := runAuthkeyFingerprints(context.Background(), env.Env)
			switch {
			case tc.skipped:
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("got %v, want skipped", err)
				}
				return
			case tc.wantErr != (err != nil):
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, env.Console.String()); diff != "" {
				t.Errorf("console (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthorizedKeysFileFromSSHDConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "etc/passwd", "ann:x:1000:1000::/home/ann:/bin/sh\n")
	writeFile(t, dir, "etc/ssh/sshd_config", "AuthorizedKeysFile /etc/ssh/keys/%u %h/.ssh/keys2\n")
	writeFile(t, dir, "home/ann/.ssh/keys2", "ssh-rsa AAAA x\n")
	env := applytest.NewEnvAt(t, dir, nil)
	file, lines, err := authorizedKeys(env.Root, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if file != "/home/ann/.ssh/keys2" || len(lines) != 1 {
		t.Errorf("got %s %q, want the user-specific file and its one line", file, lines)
	}
}

type received struct {
	mu    sync.Mutex
	posts []url.Values
	agent string
}

func TestPhoneHome(t *testing.T) {
	phoneHomeRetryWait = time.Millisecond
	t.Cleanup(func() { phoneHomeRetryWait = 3 * time.Second })
	tests := []struct {
		name      string
		yaml      string
		failFirst int
		wantPosts int
		wantForm  url.Values
		wantPath  string
		warns     int
		skipped   bool
		// bigAnswer makes the server answer with more than phone_home
		// reads; wantWarn is part of the last warning.
		bigAnswer bool
		wantWarn  string
	}{
		{name: "absent", yaml: "{}", skipped: true},
		{name: "no url", yaml: "phone_home: {post: all}", skipped: true, warns: 1},
		{
			name: "all", yaml: "phone_home: {url: 'URL/$INSTANCE_ID/', post: all}", wantPosts: 1, wantPath: "/" + applytest.InstanceID + "/",
			wantForm: url.Values{"pub_key_dsa": {"N/A"}, "pub_key_rsa": {"N/A"}, "pub_key_ecdsa": {"N/A"}, "pub_key_ed25519": {"ssh-ed25519 AAAA host\n"},
				"instance_id": {applytest.InstanceID}, "hostname": {"test-host"}, "fqdn": {"test-host"}},
			warns: 3,
		},
		{
			name: "list and retries", yaml: "phone_home: {url: 'URL/x', post: [instance_id, bogus], tries: 3}", failFirst: 2, wantPosts: 3, wantPath: "/x",
			wantForm: url.Values{"instance_id": {applytest.InstanceID}, "bogus": {"N/A"}}, warns: 1,
		},
		{
			name: "gives up", yaml: "phone_home: {url: 'URL/x', post: [hostname], tries: 2}", failFirst: 5, wantPosts: 2, warns: 1,
			wantWarn: "HTTP 503: not yet",
		},
		{
			name: "a long answer is still a success", yaml: "phone_home: {url: 'URL/x', post: [hostname]}", wantPosts: 1, wantPath: "/x",
			wantForm: url.Values{"hostname": {"test-host"}}, bigAnswer: true,
		},
		{
			name: "bad tries default to 10", yaml: "phone_home: {url: 'URL/x', post: [hostname], tries: many}", failFirst: 9, wantPosts: 10, wantPath: "/x",
			wantForm: url.Values{"hostname": {"test-host"}}, warns: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got received
			var lastPath string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.mu.Lock()
				defer got.mu.Unlock()
				body, _ := io.ReadAll(r.Body)
				form, _ := url.ParseQuery(string(body))
				got.posts = append(got.posts, form)
				got.agent = r.UserAgent()
				lastPath = r.URL.Path
				if len(got.posts) <= tc.failFirst {
					http.Error(w, "not yet", http.StatusServiceUnavailable)
					return
				}
				if tc.bigAnswer {
					w.Write(bytes.Repeat([]byte("thanks "), 1000))
				}
			}))
			defer srv.Close()
			dir := t.TempDir()
			writeFile(t, dir, "etc/ssh/ssh_host_ed25519_key.pub", "ssh-ed25519 AAAA host\n")
			env := applytest.NewEnvAt(t, dir, config(t, strings.ReplaceAll(tc.yaml, "URL", srv.URL)))
			err := runPhoneHome(context.Background(), env.Env)
			if tc.skipped != errors.Is(err, apply.ErrSkipped) || (!tc.skipped && err != nil) {
				t.Fatalf("err = %v, want skipped %v", err, tc.skipped)
			}
			if len(got.posts) != tc.wantPosts {
				t.Fatalf("posts = %d, want %d", len(got.posts), tc.wantPosts)
			}
			if tc.wantForm != nil {
				if diff := cmp.Diff(tc.wantForm, got.posts[len(got.posts)-1]); diff != "" {
					t.Errorf("form (-want +got):\n%s", diff)
				}
				if lastPath != tc.wantPath {
					t.Errorf("path = %q, want %q", lastPath, tc.wantPath)
				}
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
			if w := env.Warnings(); tc.wantWarn != "" && (len(w) == 0 || !strings.Contains(w[len(w)-1], tc.wantWarn)) {
				t.Errorf("warnings = %q, want the last to contain %q", w, tc.wantWarn)
			}
		})
	}
}

func TestPhoneHomeFormOrder(t *testing.T) {
	env := applytest.NewEnv(t, nil)
	form := PhoneHomeForm(env.Env, []string{"fqdn", "instance_id", "fqdn"})
	if got := encodeForm(form); got != "fqdn=test-host&instance_id="+applytest.InstanceID {
		t.Errorf("form = %q", got)
	}
}

// powerSystem is a FakeSystem that records power requests.
type powerSystem struct {
	*applytest.FakeSystem
	requests []PowerRequest
}

func (p *powerSystem) SchedulePowerState(ctx context.Context, req PowerRequest) error {
	p.requests = append(p.requests, req)
	return nil
}

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

func TestPowerStateChange(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		exit    int
		capable bool
		want    []PowerRequest
		ran     []string
		warns   int
		skipped bool
		// runErr, when set, is what running the condition returns.
		runErr error
	}{
		{name: "absent", yaml: "{}", capable: true, skipped: true},
		{
			name: "reboot now", yaml: "power_state: {mode: reboot}", capable: true,
			want: []PowerRequest{{Mode: "reboot", Timeout: 30 * time.Second, Command: []string{"shutdown", "-r", "now"}}},
		},
		{
			name: "poweroff delayed", yaml: "power_state: {mode: poweroff, delay: '+5', message: bye, timeout: 2.5, condition: true}", capable: true,
			want: []PowerRequest{{Mode: "poweroff", Delay: 5 * time.Minute, Message: "bye", Timeout: 2500 * time.Millisecond, Command: []string{"shutdown", "-P", "+5", "bye"}}},
		},
		{name: "bad mode", yaml: "power_state: {mode: sleep}", capable: true, warns: 1},
		{name: "bad delay", yaml: "power_state: {mode: halt, delay: soon}", capable: true, warns: 1},
		{name: "bad timeout", yaml: "power_state: {mode: halt, timeout: x}", capable: true, warns: 1},
		{name: "bad condition", yaml: "power_state: {mode: halt, condition: {a: 1}}", capable: true, warns: 1},
		{name: "condition false", yaml: "power_state: {mode: halt, condition: false}", capable: true, skipped: true},
		{
			name: "shell condition met", yaml: "power_state: {mode: halt, condition: 'test -f /x'}", capable: true,
			ran:  []string{"/bin/sh -c test -f /x"},
			want: []PowerRequest{{Mode: "halt", Timeout: 30 * time.Second, Command: []string{"shutdown", "-H", "now"}}},
		},
		{name: "list condition exit 1", yaml: "power_state: {mode: halt, condition: [/bin/false]}", exit: 1, capable: true, skipped: true, ran: []string{"/bin/false"}},
		{name: "condition exit 2", yaml: "power_state: {mode: halt, condition: [/bin/x]}", exit: 2, capable: true, warns: 1, ran: []string{"/bin/x"}},
		{name: "no capability", yaml: "power_state: {mode: reboot}", warns: 1},
		{
			// Neither "go" nor "do not": skipped, so that it is asked again.
			name: "condition the target cannot run yet", yaml: "power_state: {mode: halt, condition: 'test -f /x'}", capable: true,
			runErr:  fmt.Errorf("run /bin/sh: %w: /bin/sh does not exist in target /t", apply.ErrSkipped),
			skipped: true, ran: []string{"/bin/sh -c test -f /x"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := applytest.NewEnv(t, config(t, tc.yaml))
			env.Sys.RunFunc = func(cmd apply.Command) error {
				if tc.runErr != nil {
					return tc.runErr
				}
				if tc.exit != 0 {
					return fmt.Errorf("run %s: %w", cmd.Argv[0], exitError(tc.exit))
				}
				return nil
			}
			ps := &powerSystem{FakeSystem: env.Sys}
			if tc.capable {
				env.Env.Sys = ps
			}
			err := runPowerStateChange(context.Background(), env.Env)
			if tc.skipped != errors.Is(err, apply.ErrSkipped) || (!tc.skipped && err != nil) {
				t.Fatalf("err = %v, want skipped %v", err, tc.skipped)
			}
			if diff := cmp.Diff(tc.want, ps.requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ran, env.Sys.Ran()); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
		})
	}
}
