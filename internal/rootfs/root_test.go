package rootfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newRoot(t testing.TB) (*Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func TestResolveStaysInside(t *testing.T) {
	r, dir := newRoot(t)
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "usr/share/zoneinfo"), 0o755))
	must(t, os.Symlink("/usr/share/zoneinfo", filepath.Join(dir, "etc/zoneinfo")))
	must(t, os.Symlink(outside, filepath.Join(dir, "etc/escape-abs")))
	must(t, os.Symlink("../../../../../../"+outside, filepath.Join(dir, "etc/escape-rel")))
	must(t, os.Symlink("loop-b", filepath.Join(dir, "etc/loop-a")))
	must(t, os.Symlink("loop-a", filepath.Join(dir, "etc/loop-b")))

	tests := []struct {
		in, want string
	}{
		{"/", "."},
		{"/etc/hostname", "etc/hostname"},
		{"etc/hostname", "etc/hostname"},
		{"/../../etc/hostname", "etc/hostname"},
		{"/etc/zoneinfo/UTC", "usr/share/zoneinfo/UTC"},
		{"/etc/escape-abs/x", strings.TrimPrefix(outside, "/") + "/x"},
		{"/etc/escape-rel/x", strings.TrimPrefix(outside, "/") + "/x"},
		{"/missing/../etc/x", "etc/x"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := r.Resolve(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if _, err := r.Resolve("/etc/loop-a"); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("symlink loop: got %v, want a too-many-levels error", err)
	}
}

// A symlink in the target that points outside it must be read as if the
// target were "/": the write lands inside the target, never outside.
func TestWriteThroughEscapingSymlinkStaysInside(t *testing.T) {
	r, dir := newRoot(t)
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	must(t, os.Symlink(outside+"/victim", filepath.Join(dir, "etc/passwd")))
	must(t, os.Symlink(outside, filepath.Join(dir, "etc/ssh")))

	must(t, r.WriteFile("/etc/passwd", []byte("root:x:0:0::/root:/bin/sh\n"), 0o644, KeepOwner))
	must(t, r.WriteFile("/etc/ssh/sshd_config", []byte("x\n"), 0o600, KeepOwner))

	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("files appeared outside the target: %v", entries)
	}
	b, err := os.ReadFile(filepath.Join(dir, outside, "victim"))
	if err != nil || string(b) != "root:x:0:0::/root:/bin/sh\n" {
		t.Errorf("write through an escaping link should land at <target>%s/victim: %q, %v", outside, b, err)
	}
}

func TestWriteFileAtomicModeAndNoLeftovers(t *testing.T) {
	r, dir := newRoot(t)
	must(t, r.WriteFile("/etc/shadow", []byte("a"), 0o640, KeepOwner))
	must(t, r.WriteFile("/etc/shadow", []byte("b"), 0o600, KeepOwner))
	fi, err := os.Stat(filepath.Join(dir, "etc/shadow"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "etc"))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	changed, err := r.WriteFileIfChanged("/etc/shadow", []byte("b"), 0o600, KeepOwner)
	if err != nil || changed {
		t.Errorf("WriteFileIfChanged on identical content = %v, %v; want false, nil", changed, err)
	}
}

func TestOwnerSetBeforeRename(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	r, dir := newRoot(t)
	must(t, r.WriteFile("/home/u/.ssh/authorized_keys", []byte("k\n"), 0o600, Owner{UID: 1234, GID: 2345}))
	fi, err := os.Stat(filepath.Join(dir, "home/u/.ssh/authorized_keys"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fileOwner(fi); got != (Owner{1234, 2345}) {
		t.Errorf("owner = %v, want 1234:2345", got)
	}
}

func TestAppendSymlinkRemoveAndJournal(t *testing.T) {
	r, dir := newRoot(t)
	must(t, r.AppendFile("/var/log/x.log", []byte("one\n"), 0o640, KeepOwner))
	must(t, r.AppendFile("/var/log/x.log", []byte("two\n"), 0o600, KeepOwner))
	b, _ := os.ReadFile(filepath.Join(dir, "var/log/x.log"))
	if string(b) != "one\ntwo\n" {
		t.Errorf("append = %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "var/log/x.log")); fi.Mode().Perm() != 0o640 {
		t.Errorf("append changed the mode of an existing file to %v", fi.Mode().Perm())
	}
	must(t, r.Symlink("/var/lib/cloud/instances/i-1", "/var/lib/cloud/instance"))
	must(t, r.Symlink("/var/lib/cloud/instances/i-2", "/var/lib/cloud/instance"))
	if got, _ := os.Readlink(filepath.Join(dir, "var/lib/cloud/instance")); got != "/var/lib/cloud/instances/i-2" {
		t.Errorf("symlink = %q", got)
	}
	must(t, r.Remove("/var/lib/cloud/instance"))
	must(t, r.Remove("/var/lib/cloud/instance"))
	if _, err := os.Lstat(filepath.Join(dir, "var/lib/cloud/instance")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("symlink still there: %v", err)
	}
	var ops []string
	for _, c := range r.Changes(0) {
		if c.Op != "mkdir" {
			ops = append(ops, c.Op+" "+c.Path)
		}
	}
	want := []string{"write /var/log/x.log", "write /var/log/x.log", "symlink /var/lib/cloud/instance", "symlink /var/lib/cloud/instance", "remove /var/lib/cloud/instance"}
	if strings.Join(ops, "|") != strings.Join(want, "|") {
		t.Errorf("journal = %q, want %q", ops, want)
	}
	if err := r.RemoveAll("/"); err == nil {
		t.Error("RemoveAll(/) must be refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteFileWithRemovesStaleTemporaries(t *testing.T) {
	r, dir := newRoot(t)
	must(t, os.MkdirAll(filepath.Join(dir, "var"), 0o755))
	stale := filepath.Join(dir, "var", ".swap.img.seedinit-0123456789ab")
	other := filepath.Join(dir, "var", ".swap.img.seedinit-notours")
	must(t, os.WriteFile(stale, []byte("half a swap file"), 0o600))
	must(t, os.WriteFile(other, nil, 0o600))
	err := r.WriteFileWith("/var/swap.img", 0o600, KeepOwner, func(f *os.File) error {
		_, err := f.WriteAt([]byte("header"), 4)
		return err
	})
	must(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "var", "swap.img"))
	must(t, err)
	if string(got) != "\x00\x00\x00\x00header" {
		t.Errorf("content %q", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is not one of ours was removed: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "var", "swap.img")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	failed := r.WriteFileWith("/var/other", 0o644, KeepOwner, func(*os.File) error { return os.ErrInvalid })
	if failed == nil || !strings.Contains(failed.Error(), "write /var/other") {
		t.Errorf("a failing fill: %v", failed)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "var")); len(entries) != 2 {
		t.Errorf("a failed write left files behind: %v", entries)
	}
}

// The running system's root is known by its identity, not by the string
// it was opened with.
func TestIsHostRoot(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want bool
	}{{"/", true}, {"/.", true}, {"/proc/..", true}, {t.TempDir(), false}} {
		r, err := Open(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.IsHostRoot(); got != tc.want {
			t.Errorf("Open(%q).IsHostRoot() = %v, want %v", tc.dir, got, tc.want)
		}
		r.Close()
	}
}
