package seedfiles

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// modeOf is a file's permission bits in the target at dir.
func modeOf(t *testing.T, dir, name string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Injected files land at their paths, byte for byte, root's, with
// cloud-init's 0660, or 0600 where the path says it holds a secret; the
// directories above them are made 0755.
func TestInjectedFilesWritten(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, nil)
	env.Stage = apply.StageLocal
	files := map[string]string{
		"/etc/fortinet/license.lic":  "-----BEGIN FGT VM LICENSE-----\n",
		"/etc/motd":                  "welcome\n",
		"/opt/vendor/conf/api-token": "tok",
		"/etc/ssl/private/web.pem":   "-----BEGIN PRIVATE KEY-----\n",
		"/srv/app/settings.json":     "{}",
		"/etc/empty":                 "",
	}
	for p, c := range files {
		env.Seed.Files = append(env.Seed.Files, seed.InjectedFile{Path: p, Content: []byte(c), Where: "/dev/sr0/openstack/content/x"})
	}
	if err := runInjectedFiles(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{
		"/etc/fortinet/license.lic":  0o600,
		"/etc/motd":                  0o660,
		"/opt/vendor/conf/api-token": 0o600,
		"/etc/ssl/private/web.pem":   0o600,
		"/srv/app/settings.json":     0o660,
		"/etc/empty":                 0o660,
	}
	for p, mode := range want {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(b) != files[p] {
			t.Errorf("%s: %q, %v", p, b, err)
		}
		if got := modeOf(t, dir, p); got != mode {
			t.Errorf("%s: mode %o, want %o", p, got, mode)
		}
		if fi, _ := os.Stat(filepath.Join(dir, p)); fi != nil && os.Geteuid() == 0 {
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s: owner %d:%d, want root's", p, st.Uid, st.Gid)
			}
		}
	}
	if got := modeOf(t, dir, "/opt/vendor/conf"); got != 0o755 {
		t.Errorf("made directory: mode %o", got)
	}
}

// A seed cannot write outside the target, through a path or a link the
// target holds, and one bad file does not stop the others.
func TestInjectedFilesHostile(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "opt")); err != nil {
		t.Fatal(err)
	}
	env := applytest.NewEnvAt(t, dir, nil)
	for _, p := range []string{"/../../../../" + outside + "/climbed", "/opt/through-link", "/", "/etc/good"} {
		env.Seed.Files = append(env.Seed.Files, seed.InjectedFile{Path: p, Content: []byte("x"), Where: "w"})
	}
	err := runInjectedFiles(context.Background(), env.Env)
	if err == nil || !strings.Contains(err.Error(), "/") {
		t.Errorf("error = %v, want the root refused", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Errorf("written outside the target: %v", entries)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/good")); err != nil || string(b) != "x" {
		t.Errorf("the good file: %q %v", b, err)
	}
}

// The files are the instance's first boot's, as in cloud-init: a later
// boot of the same instance leaves them as the system made them, and a
// new instance writes them again.
func TestInjectedFilesOncePerInstance(t *testing.T) {
	dir := t.TempDir()
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	run := func(id string) {
		t.Helper()
		s := &seed.Seed{Datasource: "ConfigDrive", InstanceID: id, Metadata: map[string]any{"instance-id": id},
			Files: []seed.InjectedFile{{Path: "/etc/license.lic", Content: []byte("license of " + id), Where: "w"}}}
		rep, err := stages.Run(context.Background(), stages.Options{Root: root, Seed: s, Stages: []apply.Stage{apply.StageLocal}, Sys: &applytest.FakeSystem{}, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		if errs := rep.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	read := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "etc/license.lic"))
		return string(b)
	}
	run("i-1")
	if got := read(); got != "license of i-1" {
		t.Fatalf("first boot: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/license.lic"), []byte("renewed by the appliance"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("i-1")
	if got := read(); got != "renewed by the appliance" {
		t.Errorf("a later boot of the same instance wrote the file again: %q", got)
	}
	run("i-2")
	if got := read(); got != "license of i-2" {
		t.Errorf("a new instance: %q", got)
	}
}

func TestSecretLike(t *testing.T) {
	for p, want := range map[string]bool{
		"/etc/fortinet/license.lic":    true,
		"/config/licence/key":          true,
		"/etc/ssl/private/x.crt":       true,
		"/root/.ssh/authorized_keys":   true,
		"/etc/app/db-password":         true,
		"/etc/app/passwd.txt":          true,
		"/var/lib/app/TOKEN":           true,
		"/etc/app/credentials.json":    true,
		"/etc/app/secrets.yaml":        true,
		"/etc/pki/tls/server.key":      true,
		"/etc/app/cert.p12":            true,
		"/etc/krb5.keytab":             true,
		"/etc/motd":                    false,
		"/etc/ssl/certs/ca.crt":        false,
		"/etc/keyboard/layout":         false,
		"/etc/network/interfaces":      false,
		"/opt/monkey/settings.json":    false,
		"/etc/default/keyboard":        false,
		"/usr/share/doc/authorization": false,
	} {
		if got := secretLike(p); got != want {
			t.Errorf("secretLike(%q) = %v, want %v", p, got, want)
		}
	}
}
