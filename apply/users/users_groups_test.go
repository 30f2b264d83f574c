package users

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/shacrypt"
)

const (
	keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyA alice@laptop"
	keyB = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABKeyB bob@desk"
	keyC = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYKeyC"
)

// debianCloudCfg is the part of Debian's /etc/cloud/cloud.cfg that the
// users modules read.
const debianCloudCfg = `
system_info:
  default_user:
    name: debian
    lock_passwd: True
    gecos: Debian
    groups: [adm, audio, cdrom, dialout, dip, floppy, netdev, plugdev, sudo, video]
    sudo: ["ALL=(ALL) NOPASSWD:ALL"]
    shell: /bin/bash
`

const usersConfig = debianCloudCfg + `
groups:
  - admingroup: [root, sys]
  - cloud-users
users:
  - default
  - name: bob
    gecos: Bob Builder
    groups: users, admingroup
    sudo: ALL=(ALL) NOPASSWD:ALL
    shell: /bin/bash
    lock_passwd: false
    plain_text_passwd: s3cret-plain
    ssh_authorized_keys:
      - ` + keyA + `
      - ` + keyB + `
  - name: svc
    system: true
    homedir: /var/lib/svc
  - name: eve
    hashed_passwd: $6$rounds=5000$abcdefgh$ZAP
    sudo: ["ALL=(ALL) ALL", "ALL=(root) NOPASSWD:/usr/bin/apt"]
    uid: 2000
    no_user_group: true
    expiredate: "2030-01-01"
`

func runModule(t *testing.T, env *apply.Env, run func(context.Context, *apply.Env) error) error {
	t.Helper()
	return run(context.Background(), env)
}

func TestUsersGroupsCreatesAccounts(t *testing.T) {
	requireRoot(t)
	pinClock(t)
	dir := debianRoot(t)
	env := newEnv(t, dir, usersConfig)
	if err := runModule(t, env.Env, runUsersGroups); err != nil {
		t.Fatalf("users_groups: %v", err)
	}
	passwd, shadow, group := readFile(t, dir, "etc/passwd"), readFile(t, dir, "etc/shadow"), readFile(t, dir, "etc/group")
	for _, want := range []string{
		"bob:x:1000:1002:Bob Builder:/home/bob:/bin/bash",
		"svc:x:999:999::/var/lib/svc:/bin/sh",
		"eve:x:2000:100::/home/eve:/bin/sh",
		"debian:x:2001:2001:Debian:/home/debian:/bin/bash",
	} {
		name, _, _ := strings.Cut(want, ":")
		if got := lineOf(t, passwd, name); got != want {
			t.Errorf("passwd: got %q, want %q", got, want)
		}
	}
	for _, want := range []string{
		"admingroup:x:1000:root,sys,bob",
		"cloud-users:x:1001:",
		"users:x:100:bob",
		"sudo:x:27:debian",
		"netdev:x:106:debian",
	} {
		name, _, _ := strings.Cut(want, ":")
		if got := lineOf(t, group, name); got != want {
			t.Errorf("group: got %q, want %q", got, want)
		}
	}
	bobHash := strings.Split(lineOf(t, shadow, "bob"), ":")[1]
	if ok, err := shacrypt.CheckPassword(bobHash, "s3cret-plain"); err != nil || !ok {
		t.Errorf("bob's hash %q does not verify: %v", bobHash, err)
	}
	if got, want := lineOf(t, shadow, "eve"), "eve:!$6$rounds=5000$abcdefgh$ZAP:"+fixedDay+":0:99999:7::21915:"; got != want {
		t.Errorf("shadow eve: got %q, want %q (hash kept, locked, expiry)", got, want)
	}
	if got, want := lineOf(t, shadow, "debian"), "debian:!:"+fixedDay+":0:99999:7:::"; got != want {
		t.Errorf("shadow debian: got %q, want %q", got, want)
	}
	if got, want := lineOf(t, shadow, "svc"), "svc:!:"+fixedDay+"::::::"; got != want {
		t.Errorf("shadow svc: got %q, want %q", got, want)
	}

	wantSudo := "# Created by seedinit v. " + apply.Version + " on Sun, 22 Nov 2026 12:00:00 +0000\n\n" +
		"# User rules for bob\nbob ALL=(ALL) NOPASSWD:ALL\n\n" +
		"# User rules for eve\neve ALL=(ALL) ALL\neve ALL=(root) NOPASSWD:/usr/bin/apt\n\n" +
		"# User rules for debian\ndebian ALL=(ALL) NOPASSWD:ALL\n"
	if diff := cmp.Diff(wantSudo, readFile(t, dir, "etc/sudoers.d/90-cloud-init-users")); diff != "" {
		t.Errorf("sudoers file (-want +got):\n%s", diff)
	}
	checkMode(t, dir, "etc/sudoers.d/90-cloud-init-users", 0o440, 0, 0)
	checkMode(t, dir, "etc/sudoers.d", 0o750, 0, 0)
	if got := readFile(t, dir, "etc/sudoers"); got != debianEtc["etc/sudoers"] {
		t.Errorf("/etc/sudoers with @includedir was changed:\n%s", got)
	}

	if diff := cmp.Diff(keyA+"\n"+keyB+"\n", readFile(t, dir, "home/bob/.ssh/authorized_keys")); diff != "" {
		t.Errorf("bob's authorized_keys (-want +got):\n%s", diff)
	}
	// The groups section took gids 1000 and 1001 first, so bob's own
	// group gets the next free one, as useradd gives it.
	checkMode(t, dir, "home/bob", 0o755, 1000, 1002)
	checkMode(t, dir, "home/bob/.ssh", 0o700, 1000, 1002)
	checkMode(t, dir, "home/bob/.ssh/authorized_keys", 0o600, 1000, 1002)
	checkMode(t, dir, "home/bob/.profile", 0o644, 1000, 1002)
	checkMode(t, dir, "home/debian/.bashrc", 0o644, 2001, 2001)
	for _, absent := range []string{"var/lib/svc", "home/svc"} {
		if _, err := os.Stat(filepath.Join(dir, absent)); err == nil {
			t.Errorf("system user's home %s was created", absent)
		}
	}
	if strings.Contains(env.Console.String(), "s3cret") {
		t.Error("a password reached the console")
	}
}

func checkMode(t *testing.T, dir, name string, mode fs.FileMode, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Error(err)
		return
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), mode)
	}
	if o := statOwner(fi); o.UID != uid || o.GID != gid {
		t.Errorf("%s: owner %d:%d, want %d:%d", name, o.UID, o.GID, uid, gid)
	}
}

// snapshot reads every file under dir/etc and dir/home with its mode and
// owner, for comparing two runs.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, top := range []string{"etc", "home", "root", "var/lib/svc"} {
		filepath.WalkDir(filepath.Join(dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			o := statOwner(fi)
			desc := fmt.Sprintf("%v %d:%d", fi.Mode(), o.UID, o.GID)
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				desc += "\n" + string(b)
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = desc
			return nil
		})
	}
	return out
}

func TestUsersGroupsRerunConverges(t *testing.T) {
	requireRoot(t)
	pinClock(t)
	dir := debianRoot(t)
	if err := runModule(t, newEnv(t, dir, usersConfig).Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	first := snapshot(t, dir)
	if err := runModule(t, newEnv(t, dir, usersConfig).Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	second := snapshot(t, dir)
	// The "-" backups hold the state before the latest change; a run that
	// changes nothing leaves them too.
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second run changed files (-first +second):\n%s", diff)
	}
}

func TestUsersGroupsBadEntriesDoNotStopOthers(t *testing.T) {
	dir := debianRoot(t)
	env := newEnv(t, dir, `
users:
  - gecos: nameless
  - name: ok1
  - name: baduid
    uid: abc
  - name: "bad:name"
  - name: conflict
    system: true
    ssh_authorized_keys: [`+keyA+`]
  - name: redirect
    ssh_redirect_user: maybe
  - name: ok2
    uid: "1500"
`)
	err := runModule(t, env.Env, runUsersGroups)
	if err == nil {
		t.Fatal("users_groups accepted bad entries")
	}
	for _, want := range []string{"users: item 0", "users: item 2 (baduid): uid", "users: item 3", "users: item 4 (conflict)", "users: item 5 (redirect)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	passwd := readFile(t, dir, "etc/passwd")
	lineOf(t, passwd, "ok1")
	if got := lineOf(t, passwd, "ok2"); !strings.HasPrefix(got, "ok2:x:1500:") {
		t.Errorf("ok2 with uid \"1500\": %q", got)
	}
	for _, bad := range []string{"baduid", "conflict", "redirect"} {
		if strings.Contains(passwd, "\n"+bad+":") {
			t.Errorf("bad entry %s was created", bad)
		}
	}
}

func TestUsersGroupsExistingUser(t *testing.T) {
	requireRoot(t)
	pinClock(t)
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{
		"etc/passwd":                debianEtc["etc/passwd"] + "alice:x:1000:1000:Alice:/home/alice:/bin/bash\n",
		"etc/shadow":                debianEtc["etc/shadow"] + "alice:$6$old$hash:19000:0:99999:7:::\n",
		"etc/group":                 debianEtc["etc/group"] + "alice:x:1000:\n",
		"root/.ssh/authorized_keys": "# managed by hand\n" + "no-pty " + keyC + " old comment\n",
	})
	os.Chmod(filepath.Join(dir, "root/.ssh"), 0o700)
	env := newEnv(t, dir, `
users:
  - name: alice
    groups: [sudo]
    shell: /bin/zsh
    plain_text_passwd: newpass
    sudo: ALL=(ALL) ALL
  - name: root
    lock_passwd: false
    ssh_authorized_keys: [`+keyC+` new comment, `+keyA+`]
`)
	if err := runModule(t, env.Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	passwd, group, shadow := readFile(t, dir, "etc/passwd"), readFile(t, dir, "etc/group"), readFile(t, dir, "etc/shadow")
	if got := lineOf(t, passwd, "alice"); got != "alice:x:1000:1000:Alice:/home/alice:/bin/bash" {
		t.Errorf("existing user's passwd entry changed: %q", got)
	}
	if got := lineOf(t, group, "sudo"); got != "sudo:x:27:" {
		t.Errorf("cloud-init adds no groups to an existing user; got %q", got)
	}
	aliceHash := strings.Split(lineOf(t, shadow, "alice"), ":")
	if !strings.HasPrefix(aliceHash[1], "!$6$") || aliceHash[2] != fixedDay {
		t.Errorf("alice's password not set and locked: %q", lineOf(t, shadow, "alice"))
	}
	if ok, _ := shacrypt.CheckPassword(aliceHash[1][1:], "newpass"); !ok {
		t.Error("alice's new hash does not verify")
	}
	if got := lineOf(t, shadow, "root"); got != "root:*:19500:0:99999:7:::" {
		t.Errorf("root's shadow changed with lock_passwd false: %q", got)
	}
	wantKeys := "# managed by hand\n" + keyC + " new comment\n" + keyA + "\n"
	if diff := cmp.Diff(wantKeys, readFile(t, dir, "root/.ssh/authorized_keys")); diff != "" {
		t.Errorf("root's authorized_keys (-want +got):\n%s", diff)
	}
	if !strings.Contains(readFile(t, dir, "etc/sudoers.d/90-cloud-init-users"), "alice ALL=(ALL) ALL\n") {
		t.Error("sudo rules of an existing user not written")
	}
}

func TestUsersGroupsRedirectUser(t *testing.T) {
	requireRoot(t)
	dir := debianRoot(t)
	env := newEnv(t, dir, debianCloudCfg+`
users:
  - default
  - name: root
    lock_passwd: false
    ssh_redirect_user: true
`)
	env.Seed.PublicKeys = []string{keyA}
	if err := runModule(t, env.Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	want := `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"debian\" rather than the user \"root\".';echo;sleep 10;exit 142" ` + keyA + "\n"
	if diff := cmp.Diff(want, readFile(t, dir, "root/.ssh/authorized_keys")); diff != "" {
		t.Errorf("root's authorized_keys (-want +got):\n%s", diff)
	}
}

func TestUsersGroupsNothingConfigured(t *testing.T) {
	env := newEnv(t, debianRoot(t), "hostname: x\n")
	err := runModule(t, env.Env, runUsersGroups)
	if !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("users_groups without users = %v, want skipped", err)
	}
}

func TestUsersGroupsDefaultUserWhenUsersAbsent(t *testing.T) {
	dir := debianRoot(t)
	if err := runModule(t, newEnv(t, dir, debianCloudCfg).Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	lineOf(t, readFile(t, dir, "etc/passwd"), "debian")
}

func TestModulesRegistered(t *testing.T) {
	for name, keys := range map[string][]string{
		"users_groups":  {"groups", "user", "users"},
		"set_passwords": {"chpasswd", "password", "ssh_pwauth"},
	} {
		m, ok := apply.Lookup(name)
		if !ok {
			t.Errorf("module %s is not registered", name)
			continue
		}
		if m.Frequency != apply.PerInstance {
			t.Errorf("%s frequency %s", name, m.Frequency)
		}
		if diff := cmp.Diff(keys, m.Keys); diff != "" {
			t.Errorf("%s keys (-want +got):\n%s", name, diff)
		}
	}
}
