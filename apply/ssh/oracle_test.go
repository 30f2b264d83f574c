package ssh

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/sshkey"

	"github.com/seedinit/seedinit/internal/testenv"
)

// cloudInitPython returns the Python that has Debian's cloud-init, or
// skips: the first python3 on PATH may be a build without it.
func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 not found")
	}
	if err := exec.Command(py, "-c", "import cloudinit.config.cc_ssh").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init)")
	}
	return py
}

// runOracle runs a Python script with input as JSON on stdin and decodes
// its JSON output into out.
func runOracle(t *testing.T, script string, input, out any) {
	t.Helper()
	py := cloudInitPython(t)
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init oracle: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("cloud-init oracle output %q: %v", stdout, err)
	}
}

func TestDisableRootOptionsMatchesCloudInit(t *testing.T) {
	var got string
	runOracle(t, `
import json, sys
from cloudinit import ssh_util
json.dump(ssh_util.DISABLE_USER_OPTS, sys.stdout)
`, nil, &got)
	if got != DisableRootOptions {
		t.Errorf("DisableRootOptions = %q, cloud-init's is %q", DisableRootOptions, got)
	}
}

// credentialsOracle runs cc_ssh.handle with everything but the
// credentials step made inert, and records its setup_user_keys calls.
const credentialsOracle = `
import copy, json, logging, sys
from cloudinit.config import cc_ssh
from cloudinit import ssh_util

results = []
for req in json.load(sys.stdin):
    cfg = req["config"]
    cfg["ssh_deletekeys"] = False
    cfg["ssh_keys"] = {}
    cfg["ssh_publish_hostkeys"] = {"enabled": False}
    calls = []

    def record(keys, username, options=None):
        calls.append({"User": username, "Keys": sorted(keys) or None, "Options": options or ""})

    def refuse(*args, **kwargs):
        raise AssertionError("touched sshd_config")

    cc_ssh.ssh_util.setup_user_keys = record
    cc_ssh.ssh_util.update_ssh_config = refuse

    class Distro:
        def get_default_user(self):
            return copy.deepcopy((cfg.get("system_info") or {}).get("default_user"))

    class Cloud:
        distro = Distro()
        datasource = None
        def get_public_ssh_keys(self):
            return list(req["public_keys"] or [])

    failed = []
    class Catch(logging.Handler):
        def emit(self, record):
            if record.exc_info:
                failed.append(record.getMessage())
    log = logging.getLogger("oracle-%d" % len(results))
    log.addHandler(Catch())
    cc_ssh.handle("ssh", cfg, Cloud(), log, [])
    results.append({"calls": calls, "failed": bool(failed)})
json.dump(results, sys.stdout)
`

func TestCredentialsMatchCloudInit(t *testing.T) {
	const (
		keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKO6bxSEvvz5Ip9xqKeirkwop/wL0mm1AoCTCqT+TnVE a@x"
		keyB = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC b@x"
	)
	const distro = "system_info:\n  default_user:\n    name: debian\n    lock_passwd: true\n"
	configs := map[string]string{
		"defaults":                 distro + "users: [default]\nssh_authorized_keys: [" + keyB + "]\n",
		"root allowed":             distro + "users: [default]\ndisable_root: false\nssh_authorized_keys: [" + keyB + "]\n",
		"root allowed, spelled no": distro + "users: [default]\ndisable_root: 'no'\n",
		"no users key":             distro + "ssh_authorized_keys: [" + keyB + ", " + keyA + "]\n",
		"named users only":         distro + "users: [alice, {name: bob}]\n",
		"unnamed entry":            distro + "users: [{groups: sudo}]\n",
		"users as mapping":         distro + "users: {default: true, alice: {}}\n",
		"users as string":          distro + "users: 'alice,default'\n",
		"legacy user string":       distro + "user: bob\n",
		"legacy user mapping":      distro + "user: {name: carol}\nusers: [dave]\n",
		"no public keys":           distro + "users: [default]\nallow_public_ssh_keys: false\nssh_authorized_keys: [" + keyB + "]\n",
		"custom options":           distro + "users: [default]\ndisable_root_opts: 'no-pty,command=\"echo $USER $DISABLE_USER $USER\"'\n",
		"no distro user":           "users: [default]\n",
		"nameless distro user":     "system_info: {default_user: {gecos: x}}\nusers: [default]\n",
		"null distro user name":    "system_info: {default_user: {name: null}}\nusers: [default]\n",
	}
	publicKeys := []string{keyA}
	names := make([]string, 0, len(configs))
	var requests []map[string]any
	for name, config := range configs {
		names = append(names, name)
		// Without `users`, seedinit's users module creates the default
		// user as the stock cloud.cfg's `users: [default]` would, and the
		// keys go to it: cloud-init is asked with that value.
		if name == "no users key" {
			config += "users: [default]\n"
		}
		requests = append(requests, map[string]any{"config": loadConfig(t, config), "public_keys": publicKeys})
	}
	type result struct {
		Calls  []keyCall `json:"calls"`
		Failed bool      `json:"failed"`
	}
	var results []result
	runOracle(t, credentialsOracle, requests, &results)
	if len(results) != len(names) {
		t.Fatalf("cloud-init oracle answered %d cases of %d", len(results), len(names))
	}
	for i, name := range names {
		config, want := configs[name], results[i]
		t.Run(name, func(t *testing.T) {
			calls := recordKeyCalls(t)
			env := applytest.NewEnv(t, loadConfig(t, "ssh_deletekeys: false\nssh_genkeytypes: []\n"+config))
			env.Seed.PublicKeys = publicKeys
			err := Run(context.Background(), env.Env)
			if (err != nil) != want.Failed {
				t.Errorf("Run error = %v; cloud-init failed: %v", err, want.Failed)
			}
			got := append([]keyCall(nil), *calls...)
			for i := range got {
				sort.Strings(got[i].Keys)
			}
			if diff := cmp.Diff(want.Calls, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("authorized keys set up (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestUpdateSSHDConfigMatchesCloudInit(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		settings []Setting
	}{
		{"empty", "", []Setting{{"HostCertificate", "/etc/ssh/ssh_host_rsa_key-cert.pub"}}},
		{"replace case-insensitively", "Port 22\nhostcertificate /old\n", []Setting{{"HostCertificate", "/new"}}},
		{"replace every occurrence", "HostCertificate /a\n# c\nHostCertificate /b\n", []Setting{{"HostCertificate", "/c"}}},
		{"unchanged", "  HostCertificate   /same  \n", []Setting{{"HostCertificate", "/same"}}},
		{"normalizes and drops lone words", "  # indented comment\nPort=2222\nMatch\n\tUsePAM\tyes \n\n", []Setting{{"PasswordAuthentication", "no"}}},
		{"two settings", "PasswordAuthentication yes\n", []Setting{{"PasswordAuthentication", "no"}, {"HostCertificate", "/x"}}},
		{"crlf", "Port 22\r\nX11Forwarding yes\r\n", []Setting{{"Port", "2200"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updates := map[string]string{}
			var order []string
			for _, s := range tt.settings {
				updates[s.Keyword] = s.Value
				order = append(order, s.Keyword)
			}
			var want struct {
				Text    string `json:"text"`
				Changed bool   `json:"changed"`
			}
			runOracle(t, `
import json, sys
from cloudinit import ssh_util
req = json.load(sys.stdin)
lines = ssh_util.parse_ssh_config_lines(req["text"].splitlines())
updates = {k: req["updates"][k] for k in req["order"]}
changed = ssh_util.update_ssh_config_lines(lines=lines, updates=updates)
json.dump({"text": "\n".join(str(l) for l in lines) + "\n", "changed": bool(changed)}, sys.stdout)
`, map[string]any{"text": tt.text, "updates": updates, "order": order}, &want)

			lines, changed := applySettings(parseSSHDConfig(tt.text), tt.settings)
			var got strings.Builder
			for _, l := range lines {
				got.WriteString(l.String() + "\n")
			}
			if diff := cmp.Diff(want.Text, got.String()); diff != "" {
				t.Errorf("sshd_config (-cloud-init +seedinit):\n%s", diff)
			}
			if (len(changed) > 0) != want.Changed {
				t.Errorf("changed = %v, cloud-init: %v", changed, want.Changed)
			}
		})
	}
}

func TestUpdateSSHDConfig(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantFiles map[string]string
		wantMode  map[string]os.FileMode
		wantWrote bool
	}{
		{
			name:      "no sshd_config",
			wantFiles: map[string]string{"sshd_config": "HostCertificate /c\n"},
			wantMode:  map[string]os.FileMode{"sshd_config": 0o644},
			wantWrote: true,
		},
		{
			name:      "keeps mode",
			files:     map[string]string{"sshd_config": "Port 22\n"},
			wantFiles: map[string]string{"sshd_config": "Port 22\nHostCertificate /c\n"},
			wantMode:  map[string]os.FileMode{"sshd_config": 0o640},
			wantWrote: true,
		},
		{
			name:  "drop-in directory",
			files: map[string]string{"sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\nPort 22\n"},
			wantFiles: map[string]string{
				"sshd_config":                      "Include /etc/ssh/sshd_config.d/*.conf\nPort 22\n",
				"sshd_config.d/50-cloud-init.conf": "HostCertificate /c\n",
			},
			wantMode:  map[string]os.FileMode{"sshd_config.d/50-cloud-init.conf": 0o600},
			wantWrote: true,
		},
		{
			name:      "already set",
			files:     map[string]string{"sshd_config": "Port 22\n  HostCertificate /c\n"},
			wantFiles: map[string]string{"sshd_config": "Port 22\n  HostCertificate /c\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "etc/ssh"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.files {
				writeHostFile(t, dir, "etc/ssh/"+name, content, 0o640)
			}
			env := applytest.NewEnvAt(t, dir, nil)
			wrote, err := UpdateSSHDConfig(env.Root, Setting{"HostCertificate", "/c"})
			if err != nil {
				t.Fatal(err)
			}
			if wrote != tt.wantWrote {
				t.Errorf("wrote = %v, want %v", wrote, tt.wantWrote)
			}
			got := map[string]string{}
			filepath.WalkDir(filepath.Join(dir, "etc/ssh"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					data, _ := os.ReadFile(p)
					rel, _ := filepath.Rel(filepath.Join(dir, "etc/ssh"), p)
					got[rel] = string(data)
				}
				return nil
			})
			if diff := cmp.Diff(tt.wantFiles, got); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			for name, mode := range tt.wantMode {
				if got := statFile(t, filepath.Join(dir, "etc/ssh", name)).Mode; got != mode {
					t.Errorf("%s mode %o, want %o", name, got, mode)
				}
			}
		})
	}
}

// requireSSHKeygen skips when OpenSSH's ssh-keygen is not installed.
func requireSSHKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		testenv.Skip(t, "ssh-keygen not installed; the cross-check against OpenSSH needs it")
	}
	return p
}

func TestGeneratedKeysAcceptedBySSHKeygen(t *testing.T) {
	keygen := requireSSHKeygen(t)
	for _, keyType := range []string{"rsa", "ecdsa", "ed25519"} {
		t.Run(keyType, func(t *testing.T) {
			key, err := GenerateHostKey(keyType, "root@vm-7", nil)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			priv := filepath.Join(dir, "ssh_host_"+keyType+"_key")
			writeHostFile(t, dir, filepath.Base(priv), string(key.Private), 0o600)
			writeHostFile(t, dir, filepath.Base(priv)+".pub", string(key.Public), 0o644)

			derived, err := exec.Command(keygen, "-y", "-f", priv).Output()
			if err != nil {
				t.Fatalf("ssh-keygen -y: %v", err)
			}
			if string(derived) != string(key.Public) {
				t.Errorf("ssh-keygen -y gives %q, .pub is %q", derived, key.Public)
			}

			listed, err := exec.Command(keygen, "-l", "-v", "-f", priv+".pub").Output()
			if err != nil {
				t.Fatalf("ssh-keygen -l: %v", err)
			}
			wantBits := map[string]string{"rsa": "3072", "ecdsa": "256", "ed25519": "256"}[keyType]
			wantLine := wantBits + " " + sshkey.FingerprintSHA256(key.PublicKey) + " root@vm-7 (" + keyTypeLabel(key.PublicKey) + ")"
			want := wantLine + "\n" + Randomart(key.PublicKey) + "\n"
			if diff := cmp.Diff(want, string(listed)); diff != "" {
				t.Errorf("ssh-keygen -lv (-seedinit +ssh-keygen):\n%s", diff)
			}
		})
	}
}

func TestDerivePublicKeyMatchesCloudInitCommand(t *testing.T) {
	keygen := requireSSHKeygen(t)
	tests := []struct {
		name string
		args []string
	}{
		{"ed25519 with comment", []string{"-t", "ed25519", "-C", "someone@somewhere"}},
		{"ecdsa without comment", []string{"-t", "ecdsa", "-C", ""}},
		{"rsa pem", []string{"-t", "rsa", "-b", "1024", "-m", "PEM"}},
		{"ecdsa 384", []string{"-t", "ecdsa", "-b", "384", "-C", "x y z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			priv := filepath.Join(dir, "key")
			args := append([]string{"-q", "-N", "", "-f", priv}, tt.args...)
			if out, err := exec.Command(keygen, args...).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen %v: %v\n%s", args, err, out)
			}
			// cloud-init's KEY_GEN_TPL, run the way cc_ssh runs it.
			script := `o=$(ssh-keygen -yf "` + priv + `") && echo "$o" root@localhost > "` + priv + `.derived"`
			if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
				t.Fatalf("cloud-init's command: %v\n%s", err, out)
			}
			want, _ := os.ReadFile(priv + ".derived")
			data, _ := os.ReadFile(priv)
			got, err := DerivePublicKey(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("derived public key (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestFingerprintTableMatchesCloudInit(t *testing.T) {
	const (
		keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKO6bxSEvvz5Ip9xqKeirkwop/wL0mm1AoCTCqT+TnVE a@x"
		keyB = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC b@x with spaces"
	)
	tests := []struct {
		name  string
		lines []string
		hash  string
	}{
		{"empty file", nil, "sha256"},
		{"keys and comments", []string{"# a comment", keyA, "", keyB}, "sha256"},
		{"options", []string{`no-pty,command="echo \"hi there\"" ` + keyA, `from="10.0.0.1" ` + keyB}, "md5"},
		{"no comment", []string{"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY"}, "sha1"},
		{"bad base64", []string{"ssh-rsa AAAAB3Nz!@#QQ c", "ssh-rsa Q c", "ssh-rsa QQ c", "ssh-rsa QQ== c", "ssh-rsa QQ==QUJD c"}, "sha256"},
		{"unknown type only", []string{"ssh-foo AAAA x"}, "sha512"},
		{"unknown hash", []string{keyA}, "whirlpool"},
		{"odd widths", []string{"rsa A c", "dsa AAAA cc", "ed25519 AAAAAA== ccc"}, "sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want string
			runOracle(t, `
import json, sys
from cloudinit import ssh_util, util
from cloudinit.config import cc_ssh_authkey_fingerprints as fp
req = json.load(sys.stdin)
out = []
util.multi_log = lambda text, **kwargs: out.append(text)
parser = ssh_util.AuthKeyLineParser()
entries = [parser.parse(l) for l in req["lines"] or []]
fp._pprint_key_entries(req["user"], req["file"], entries, req["hash"])
json.dump("".join(out), sys.stdout)
`, map[string]any{"lines": tt.lines, "hash": tt.hash, "user": "debian", "file": "/home/debian/.ssh/authorized_keys"}, &want)
			got := FingerprintTable("debian", "/home/debian/.ssh/authorized_keys", tt.lines, tt.hash)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fingerprint table (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestParseAuthorizedKeyMatchesCloudInit(t *testing.T) {
	lines := []string{
		"ssh-rsa AAAA comment here",
		"  ssh-ed25519\tAAAA\t\tc  ",
		`command="echo \"a b\"",no-pty ssh-rsa AAAA c`,
		`no-pty ssh-foo AAAA c`,
		"# ssh-rsa AAAA",
		"",
		"ssh-rsa",
		`"unterminated ssh-rsa AAAA`,
		`opt\" ssh-rsa AAAA x`,
		"ssh-rsa AAAA\r\n",
		"rsa AAAA",
	}
	var want []AuthorizedKey
	runOracle(t, `
import json, sys
from cloudinit import ssh_util
out = []
for l in json.load(sys.stdin):
    e = ssh_util.AuthKeyLineParser().parse(l)
    out.append({"Source": e.source, "Options": e.options or "", "Type": e.keytype or "", "Base64": e.base64 or "", "Comment": e.comment or ""})
json.dump(out, sys.stdout)
`, lines, &want)
	var got []AuthorizedKey
	for _, l := range lines {
		got = append(got, ParseAuthorizedKey(l))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed lines (-cloud-init +seedinit):\n%s", diff)
	}
}

// The drop-in is made with its settings in one write: a power cut at any
// step leaves it missing or whole, never empty.
func TestSSHDDropInNeverEmpty(t *testing.T) {
	for k := 0; ; k++ {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "etc/ssh"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeHostFile(t, dir, "etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\n", 0o644)
		env := applytest.NewEnvAt(t, dir, nil)
		env.Root.StopAfter(k)
		_, err := UpdateSSHDConfig(env.Root, Setting{"PasswordAuthentication", "no"})
		data, readErr := os.ReadFile(filepath.Join(dir, "etc/ssh/sshd_config.d/50-cloud-init.conf"))
		if readErr == nil && string(data) != "PasswordAuthentication no\n" {
			t.Errorf("cut after %d steps: the drop-in holds %q", k, data)
		}
		if err == nil {
			break
		}
	}
}
