package users

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/shacrypt"
)

// passwordsRoot is the Debian fixture with a few users to set passwords of.
func passwordsRoot(t *testing.T) string {
	t.Helper()
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{
		"etc/passwd": debianEtc["etc/passwd"] + "debian:x:1000:1000::/home/debian:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/sh\neve:x:1002:1002::/home/eve:/bin/sh\n",
		"etc/shadow": debianEtc["etc/shadow"] + "debian:!:19000:0:99999:7:::\nbob:!:19000:0:99999:7:::\neve:!:19000:0:99999:7:::\n",
	})
	return dir
}

func TestSetPasswords(t *testing.T) {
	pinClock(t)
	dir := passwordsRoot(t)
	env := newEnv(t, dir, `
ssh_pwauth: true
chpasswd:
  expire: false
  users:
    - {name: bob, password: plain-bob, type: text}
    - {name: eve, password: "$6$rounds=5000$salt$HASH"}
    - {name: debian, type: RANDOM}
    - {name: ghost, password: x, type: text}
    - {password: nameless, type: text}
    - {name: odd, type: weird}
`)
	err := runModule(t, env.Env, runSetPasswords)
	if err == nil || !strings.Contains(err.Error(), "chpasswd: users: item 3: set password of ghost") || !strings.Contains(err.Error(), "item 4: name is missing") {
		t.Errorf("errors do not name the bad items: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "nameless") {
		t.Errorf("an error shows a password: %v", err)
	}
	shadow := readFile(t, dir, "etc/shadow")
	bob := strings.Split(lineOf(t, shadow, "bob"), ":")
	if ok, _ := shacrypt.CheckPassword(bob[1], "plain-bob"); !ok || bob[2] != fixedDay {
		t.Errorf("bob: %q", lineOf(t, shadow, "bob"))
	}
	if got, want := lineOf(t, shadow, "eve"), "eve:$6$rounds=5000$salt$HASH:"+fixedDay+":0:99999:7:::"; got != want {
		t.Errorf("eve: got %q, want %q", got, want)
	}
	console := env.Console.String()
	m := regexp.MustCompile(`^Set the following 'random' passwords\n\ndebian:([a-zA-Z0-9]{20})\n$`).FindStringSubmatch(console)
	if m == nil {
		t.Fatalf("console: %q", console)
	}
	if strings.ContainsAny(m[1], "loLOI01") {
		t.Errorf("random password %q uses a confusable character", m[1])
	}
	debian := strings.Split(lineOf(t, shadow, "debian"), ":")
	if ok, _ := shacrypt.CheckPassword(debian[1], m[1]); !ok {
		t.Error("the random password shown does not match debian's hash")
	}
	if got := readFile(t, dir, "etc/ssh/sshd_config.d/50-cloud-init.conf"); got != "PasswordAuthentication yes\n" {
		t.Errorf("sshd drop-in: %q", got)
	}
	if os.Geteuid() == 0 {
		checkMode(t, dir, "etc/ssh/sshd_config.d/50-cloud-init.conf", 0o600, 0, 0)
	}
}

func TestSetPasswordsExpireAndList(t *testing.T) {
	pinClock(t)
	dir := passwordsRoot(t)
	config := `
chpasswd:
  list: |
    bob:plain-bob
    eve:$6$abc$def
    debian:R
`
	for run := range 2 {
		env := newEnv(t, dir, config)
		if err := runModule(t, env.Env, runSetPasswords); err != nil {
			t.Fatal(err)
		}
		shadow := readFile(t, dir, "etc/shadow")
		if got := strings.Split(lineOf(t, shadow, "bob"), ":")[2]; got != "0" {
			t.Errorf("run %d: bob's last change %q, want 0 (expired)", run, got)
		}
		if got, want := lineOf(t, shadow, "eve"), "eve:$6$abc$def:0:0:99999:7:::"; got != want {
			t.Errorf("run %d: eve %q, want %q", run, got, want)
		}
		if !strings.HasPrefix(env.Console.String(), "Set the following 'random' passwords\n\ndebian:") {
			t.Errorf("run %d: console %q", run, env.Console.String())
		}
	}
}

func TestSetPasswordsDefaultUserPassword(t *testing.T) {
	pinClock(t)
	dir := passwordsRoot(t)
	env := newEnv(t, dir, debianCloudCfg+"password: hunter2\nchpasswd: {expire: false}\n")
	if err := runModule(t, env.Env, runSetPasswords); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(lineOf(t, readFile(t, dir, "etc/shadow"), "debian"), ":")
	if ok, _ := shacrypt.CheckPassword(got[1], "hunter2"); !ok {
		t.Errorf("debian's password not set: %q", got)
	}
	if env.Console.Len() != 0 {
		t.Errorf("a chosen password reached the console: %q", env.Console.String())
	}
	before := readFile(t, dir, "etc/shadow")
	if err := runModule(t, newEnv(t, dir, debianCloudCfg+"password: hunter2\nchpasswd: {expire: false}\n").Env, runSetPasswords); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, readFile(t, dir, "etc/shadow")); diff != "" {
		t.Errorf("re-run changed shadow:\n%s", diff)
	}
}

func TestSetPasswordsNothingToDo(t *testing.T) {
	env := newEnv(t, passwordsRoot(t), "password: x\n")
	err := runModule(t, env.Env, runSetPasswords)
	if !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("set_passwords without a default user = %v, want skipped", err)
	}
}

func TestUpdateSshdConfig(t *testing.T) {
	tests := []struct {
		name      string
		sshd      string
		dropIn    *string
		value     string
		wantFile  string
		want      string
		wantWrite bool
	}{
		{"set existing line", "Port 22\npasswordauthentication yes\n", nil, "no", "etc/ssh/sshd_config", "Port 22\npasswordauthentication no\n", true},
		{"append missing", "  Port 22\n# comment\n", nil, "no", "etc/ssh/sshd_config", "Port 22\n# comment\nPasswordAuthentication no\n", true},
		{"unchanged", "PasswordAuthentication no\n", nil, "no", "etc/ssh/sshd_config", "PasswordAuthentication no\n", false},
		{"drop-in", "Include /etc/ssh/sshd_config.d/*.conf\n", ptr("PasswordAuthentication no\n"), "yes", "etc/ssh/sshd_config.d/50-cloud-init.conf", "PasswordAuthentication yes\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"etc/ssh/sshd_config": tt.sshd}
			if tt.dropIn != nil {
				files["etc/ssh/sshd_config.d/50-cloud-init.conf"] = *tt.dropIn
			}
			writeTree(t, dir, files)
			changed, err := UpdateSshdConfig(openRoot(t, dir), map[string]string{"PasswordAuthentication": tt.value})
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantWrite {
				t.Errorf("changed = %v, want %v", changed, tt.wantWrite)
			}
			if diff := cmp.Diff(tt.want, readFile(t, dir, tt.wantFile)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.wantFile, diff)
			}
		})
	}
	dir := t.TempDir()
	if changed, err := UpdateSshdConfig(openRoot(t, dir), map[string]string{"PasswordAuthentication": "no"}); changed || err != nil {
		t.Errorf("without sshd: changed %v, err %v; want nothing", changed, err)
	}
}

func TestSSHPwauthValues(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		{"true", "PasswordAuthentication yes\n"},
		{"false", "PasswordAuthentication no\n"},
		{"'yes'", "PasswordAuthentication yes\n"},
		{"unchanged", ""},
		{"null", ""},
		{"'sometimes'", ""},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			dir := debianRoot(t)
			env := newEnv(t, dir, "ssh_pwauth: "+tt.value+"\n")
			err := runModule(t, env.Env, runSetPasswords)
			if err != nil && !errors.Is(err, apply.ErrSkipped) {
				t.Fatal(err)
			}
			got, _ := readFileMaybe(dir, "etc/ssh/sshd_config.d/50-cloud-init.conf")
			if got != tt.want {
				t.Errorf("drop-in %q, want %q", got, tt.want)
			}
		})
	}
}
