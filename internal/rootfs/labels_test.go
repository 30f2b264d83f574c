package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

const sshHomeLabel = "system_u:object_r:ssh_home_t:s0"

// xattrs reads p's extended attributes (not following it), by name.
func xattrs(t *testing.T, p string) map[string]string {
	t.Helper()
	names, err := listXattrs(p)
	if errors.Is(err, unix.ENOTSUP) {
		return nil
	}
	must(t, err)
	out := map[string]string{}
	for _, n := range names {
		v, err := getXattr(p, n)
		must(t, err)
		out[n] = string(v)
	}
	return out
}

// labelOld gives p the attributes of a file on a labelled system: an
// SELinux and a Smack label, file capabilities, IMA and EVM values and a
// user attribute.
func labelOld(t *testing.T, p string, link bool) {
	t.Helper()
	set := unix.Setxattr
	if link {
		set = unix.Lsetxattr
	}
	attrs := [][2]string{
		{"security.selinux", sshHomeLabel},
		{"security.SMACK64", "_"},
		{"security.ima", "\x04\x01old-content-hash"},
		{"security.evm", "\x02\x01old-hmac"},
	}
	if !link {
		// VFS_CAP_REVISION_2 with cap_net_bind_service permitted: a
		// privilege of the old binary.
		attrs = append(attrs, [2]string{"security.capability", "\x00\x00\x00\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, [2]string{"user.note", "kept by no one"})
	}
	for _, a := range attrs {
		if err := set(p, a[0], []byte(a[1]), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) {
				t.Skipf("this filesystem or kernel does not store %s for us: %v", a[0], err)
			}
			t.Fatalf("set %s on %s: %v", a[0], p, err)
		}
	}
}

// checkReplaceKeepsLabels replaces files at the top of root r (host
// directory dir) in every way the Root can and checks that the security
// labels survive and the attributes that belong to the old content or
// grant privileges do not.
func checkReplaceKeepsLabels(t *testing.T, r *Root, dir string) {
	wantFile := map[string]string{"security.selinux": sshHomeLabel, "security.SMACK64": "_"}
	tests := []struct {
		name    string
		link    bool // the old node is a symlink
		replace func(name string) error
	}{
		{"WriteFile", false, func(n string) error { return r.WriteFile(n, []byte("new"), 0o600, KeepOwner) }},
		{"WriteFileIfChanged", false, func(n string) error {
			_, err := r.WriteFileIfChanged(n, []byte("new"), 0o600, KeepOwner)
			return err
		}},
		{"AppendFile", false, func(n string) error { return r.AppendFile(n, []byte("more"), 0o600, KeepOwner) }},
		{"WriteFileWith", false, func(n string) error {
			return r.WriteFileWith(n, 0o600, KeepOwner, func(f *os.File) error { _, err := f.Write([]byte("new")); return err })
		}},
		{"WriteFile as another owner", false, func(n string) error {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			return r.WriteFile(n, []byte("new"), 0o600, Owner{UID: 1234, GID: 1234})
		}},
		{"Symlink over a file", false, func(n string) error { return r.Symlink("/elsewhere", n) }},
		{"Symlink over a symlink", true, func(n string) error { return r.Symlink("/elsewhere", n) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "/authorized_keys-" + filepath.Base(t.Name())
			p := filepath.Join(dir, name)
			if tt.link {
				must(t, os.Symlink("/old", p))
			} else {
				must(t, os.WriteFile(p, []byte("old"), 0o600))
			}
			labelOld(t, p, tt.link)
			var ino uint64
			var st unix.Stat_t
			must(t, unix.Lstat(p, &st))
			ino = st.Ino
			n := r.ChangeCount()
			must(t, tt.replace(name))
			must(t, unix.Lstat(p, &st))
			if st.Ino == ino {
				t.Fatal("the file was not replaced by a new inode: the test proves nothing")
			}
			got := xattrs(t, p)
			for k, v := range wantFile {
				if got[k] != v {
					t.Errorf("%s = %q after the replace, want %q (all: %q)", k, got[k], v, got)
				}
			}
			for _, k := range []string{"security.capability", "security.ima", "security.evm", "user.note"} {
				if _, ok := got[k]; ok {
					t.Errorf("%s was carried over to the new file; it belongs to the old content", k)
				}
			}
			if tc := r.Touched(n); len(tc) != 1 || tc[0].Path != name || tc[0].Fresh {
				t.Errorf("Touched = %+v, want %s with its labels carried", tc, name)
			}
		})
	}
	t.Run("a new file", func(t *testing.T) {
		n := r.ChangeCount()
		must(t, r.WriteFile("/new/file", []byte("x"), 0o644, KeepOwner))
		if _, ok := xattrs(t, filepath.Join(dir, "new/file"))["security.selinux"]; ok {
			t.Error("a new file got a label copied from somewhere")
		}
		want := []Touched{{Path: "/new", Fresh: true}, {Path: "/new/file", Fresh: true}}
		if tc := r.Touched(n); len(tc) != 2 || tc[0] != want[0] || tc[1] != want[1] {
			t.Errorf("Touched = %+v, want %+v", tc, want)
		}
	})
}

func TestReplaceKeepsSecurityLabels(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to set security.* attributes without an LSM that allows it")
	}
	r, dir := newRoot(t)
	checkReplaceKeepsLabels(t, r, dir)
}

// The same on ext4, the filesystem of most appliance roots, on a loop
// device.
func TestReplaceKeepsSecurityLabelsOnExt4(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mnt")
	mountExt4(t, dir)
	r, err := Open(dir)
	must(t, err)
	defer r.Close()
	checkReplaceKeepsLabels(t, r, dir)
}

// Touched reports each path once, resolved, and leaves out what is gone.
func TestTouched(t *testing.T) {
	r, dir := newRoot(t)
	must(t, os.MkdirAll(filepath.Join(dir, "usr/etc"), 0o755))
	must(t, os.Symlink("usr/etc", filepath.Join(dir, "etc")))
	must(t, os.WriteFile(filepath.Join(dir, "usr/etc/passwd"), nil, 0o644))
	must(t, r.WriteFile("/etc/passwd", []byte("root"), 0o644, KeepOwner))
	must(t, r.WriteFile("/etc/hosts", []byte("h"), 0o644, KeepOwner))
	must(t, r.WriteFile("/etc/hosts", []byte("h2"), 0o644, KeepOwner))
	must(t, r.WriteFile("/tmp/gone", nil, 0o644, KeepOwner))
	must(t, r.Remove("/tmp/gone"))
	must(t, r.Chmod("/etc/passwd", 0o600))
	must(t, r.Symlink("/usr/etc/hosts", "/hosts"))
	got := r.Touched(0)
	want := []Touched{
		{Path: "/usr/etc/passwd", Fresh: !carriesLabels(t)},
		{Path: "/usr/etc/hosts", Fresh: true},
		{Path: "/tmp", Fresh: true},
		{Path: "/hosts", Fresh: true},
	}
	if len(got) != len(want) {
		t.Fatalf("Touched = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Touched[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// carriesLabels says whether a replaced file counts as labelled here:
// without /proc the labels cannot be read.
func carriesLabels(t *testing.T) bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}
