package users

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var authKeyLines = []string{
	keyA,
	keyB,
	"  " + keyC + "  ",
	"# a comment",
	"",
	"   ",
	`no-pty,command="echo hi there" ` + keyA,
	`command="echo \"quoted\" x",no-pty ssh-rsa AAAAB3Nz comment with spaces`,
	`from="10.0.0.0/8"	ssh-ed25519 AAAAC3 tabbed`,
	"ssh-dss",
	"unknown-type AAAA comment",
	"restrict unknown-type AAAA",
	"ssh-rsa AAAA\r",
	`"unterminated ssh-rsa AAAA`,
	"ecdsa-sha2-nistp256 AAAA",
	"opts",
}

func TestParseAuthKeyLine(t *testing.T) {
	tests := []struct {
		line, options string
		want          AuthKeyLine
	}{
		{keyA, "", AuthKeyLine{Source: keyA, KeyType: "ssh-ed25519", Base64: "AAAAC3NzaC1lZDI1NTE5AAAAIKeyA", Comment: "alice@laptop"}},
		{"# c", "", AuthKeyLine{Source: "# c"}},
		{`no-pty,command="a b" ssh-rsa AAAA c d`, "", AuthKeyLine{Source: `no-pty,command="a b" ssh-rsa AAAA c d`, Options: `no-pty,command="a b"`, KeyType: "ssh-rsa", Base64: "AAAA", Comment: "c d"}},
		{`no-pty ssh-rsa AAAA`, "restrict", AuthKeyLine{Source: "no-pty ssh-rsa AAAA", Options: "restrict", KeyType: "ssh-rsa", Base64: "AAAA"}},
		{"ssh-rsa AAAA", "restrict", AuthKeyLine{Source: "ssh-rsa AAAA", Options: "restrict", KeyType: "ssh-rsa", Base64: "AAAA"}},
		{"bogus AAAA", "", AuthKeyLine{Source: "bogus AAAA"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseAuthKeyLine(tt.line, tt.options)); diff != "" {
				t.Errorf("ParseAuthKeyLine (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthKeysMatchCloudInit runs cloud-init's AuthKeyLineParser and
// update_authorized_keys over the same lines and compares the file text.
func TestAuthKeysMatchCloudInit(t *testing.T) {
	python := pythonWith(t, "cloudinit.ssh_util")
	existing := strings.Join(authKeyLines, "\n")
	newKeys := []string{"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABKeyB replaced-comment", keyC + " new", "garbage", `no-pty ecdsa-sha2-nistp256 AAAA`}
	for _, options := range []string{"", `no-port-forwarding,command="echo x"`} {
		t.Run("options="+options, func(t *testing.T) {
			script := `
import json, sys
from cloudinit import ssh_util
existing, keys, options = json.loads(sys.argv[1])
p = ssh_util.AuthKeyLineParser()
old = [p.parse(l) for l in existing.splitlines()]
new = [p.parse(k, options=options or None) for k in keys]
sys.stdout.write(ssh_util.update_authorized_keys(old, new))
`
			input, _ := json.Marshal([]any{existing, newKeys, options})
			out, err := exec.Command(python, "-W", "ignore", "-c", script, string(input)).Output()
			if err != nil {
				t.Fatalf("cloud-init: %v", err)
			}
			var newEntries []AuthKeyLine
			for _, k := range newKeys {
				newEntries = append(newEntries, ParseAuthKeyLine(k, options))
			}
			got := MergeAuthorizedKeys(parseAuthorizedKeys([]byte(existing)), newEntries)
			if diff := cmp.Diff(string(out), got); diff != "" {
				t.Errorf("authorized_keys differs from cloud-init's (-cloud-init +ours):\n%s", diff)
			}
		})
	}
}

func TestSetupUserKeysAuthorizedKeysFile(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name     string
		sshd     string
		files    map[string]string
		wantFile string
		wantMode os.FileMode
	}{
		{"default", "", nil, "home/bob/.ssh/authorized_keys", 0o600},
		{"relative path", "AuthorizedKeysFile .ssh/keys2\n", nil, "home/bob/.ssh/keys2", 0o600},
		{"per-user directory outside home", "AuthorizedKeysFile /etc/ssh/keys/%u\n", nil, "etc/ssh/keys/bob", 0o600},
		{"first usable of several", "AuthorizedKeysFile none /etc/ssh/global_keys %h/.ssh/mine\n", nil, "home/bob/.ssh/mine", 0o600},
		{"last setting wins as in cloud-init", "AuthorizedKeysFile .ssh/first\nAuthorizedKeysFile=.ssh/second\n", nil, "home/bob/.ssh/second", 0o600},
		{"existing file keeps its mode", "", map[string]string{"home/bob/.ssh/authorized_keys": "# old\n"}, "home/bob/.ssh/authorized_keys", 0o640},
		{"group-writable directory falls back to the default", "StrictModes yes\nAuthorizedKeysFile /srv/keys/%u\n", map[string]string{"srv/keys/.keep": ""}, "home/bob/.ssh/authorized_keys", 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := debianRoot(t)
			writeTree(t, dir, map[string]string{
				"etc/passwd":          debianEtc["etc/passwd"] + "bob:x:1000:1000::/home/bob:/bin/sh\n",
				"etc/ssh/sshd_config": tt.sshd,
				"home/bob/.profile":   "",
			})
			writeTree(t, dir, tt.files)
			os.Chown(filepath.Join(dir, "home/bob"), 1000, 1000)
			if tt.files["home/bob/.ssh/authorized_keys"] != "" {
				os.Chmod(filepath.Join(dir, "home/bob/.ssh"), 0o700)
				os.Chown(filepath.Join(dir, "home/bob/.ssh"), 1000, 1000)
				os.Chmod(filepath.Join(dir, "home/bob/.ssh/authorized_keys"), 0o640)
			}
			if _, ok := tt.files["srv/keys/.keep"]; ok {
				os.Chmod(filepath.Join(dir, "srv/keys"), 0o775)
			}
			env := newEnv(t, dir, "")
			for range 2 {
				if err := SetupUserKeys(env.Env, "bob", []string{keyA, keyB, keyA}, ""); err != nil {
					t.Fatal(err)
				}
			}
			content := readFile(t, dir, tt.wantFile)
			if !strings.HasSuffix(content, keyA+"\n"+keyB+"\n") || strings.Count(content, keyA) != 1 {
				t.Errorf("%s content:\n%s", tt.wantFile, content)
			}
			fi, err := os.Stat(filepath.Join(dir, tt.wantFile))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.wantMode {
				t.Errorf("%s mode %v, want %v", tt.wantFile, fi.Mode().Perm(), tt.wantMode)
			}
			if !strings.HasPrefix(tt.wantFile, "etc/") {
				checkMode(t, dir, filepath.Dir(tt.wantFile), 0o700, 1000, 1000)
			} else {
				checkMode(t, dir, filepath.Dir(tt.wantFile), 0o755, 0, 0)
			}
		})
	}
}

func TestSetupUserKeysRefusesSymlinks(t *testing.T) {
	requireRoot(t)
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{
		"etc/passwd": debianEtc["etc/passwd"] + "bob:x:1000:1000::/home/bob:/bin/sh\n",
	})
	if err := os.MkdirAll(filepath.Join(dir, "home/bob"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "home/bob/.ssh")); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir, "")
	if err := SetupUserKeys(env.Env, "bob", []string{keyA}, ""); err == nil {
		t.Error("SetupUserKeys wrote through a symlinked ~/.ssh")
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/authorized_keys")); err == nil {
		t.Error("a key file appeared at the symlink's destination")
	}
	if err := SetupUserKeys(env.Env, "nobody-here", []string{keyA}, ""); err == nil {
		t.Error("SetupUserKeys for a missing user succeeded")
	}
}

func TestParseSshdConfig(t *testing.T) {
	got := ParseSshdConfig([]byte("# comment\n  Port 22\nAuthorizedKeysFile=.ssh/a\nlonely\n\nMatch User x\n"))
	want := []SshdConfigLine{
		{Line: "# comment"},
		{Line: "Port 22", Key: "Port", Value: "22"},
		{Line: "AuthorizedKeysFile=.ssh/a", Key: "AuthorizedKeysFile", Value: ".ssh/a"},
		{Line: ""},
		{Line: "Match User x", Key: "Match", Value: "User x"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseSshdConfig (-want +got):\n%s", diff)
	}
}

func FuzzParseAuthKeyLine(f *testing.F) {
	for _, l := range authKeyLines {
		f.Add(l, "")
	}
	f.Add(keyA, `command="x"`)
	f.Fuzz(func(t *testing.T, line, options string) {
		k := ParseAuthKeyLine(line, options)
		if !k.Valid() {
			if k.String() != line {
				t.Fatalf("a non-key line changed: %q -> %q", line, k.String())
			}
			return
		}
		if !validKeyTypes[k.KeyType] || k.Base64 == "" {
			t.Fatalf("valid line with type %q base64 %q", k.KeyType, k.Base64)
		}
		if options != "" {
			return
		}
		// A rendered key parses back to the same key.
		again := ParseAuthKeyLine(k.String(), "")
		if again.Base64 != k.Base64 || again.KeyType != k.KeyType {
			t.Fatalf("re-parse of %q gave %+v", k.String(), again)
		}
	})
}

func FuzzParseSshdConfig(f *testing.F) {
	f.Add(debianEtc["etc/ssh/sshd_config"])
	f.Add("AuthorizedKeysFile=%h/.ssh/a %%u\n\tStrictModes no")
	f.Fuzz(func(t *testing.T, data string) {
		for _, l := range ParseSshdConfig([]byte(data)) {
			if strings.Contains(l.String(), "\n") {
				t.Fatalf("line with a line break: %q", l.String())
			}
		}
	})
}
