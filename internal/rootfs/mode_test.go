package rootfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// statMode is st_mode's chmod bits, read from the kernel rather than
// through fs.FileMode, so that the test cannot share a conversion bug
// with the code.
func statMode(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown to another owner, and setgid for a group seedinit is not in")
	}
}

// The kernel clears setuid and setgid when a file changes owner: the mode
// must be set after the owner, for new files, replaced files and new
// directories alike.
func TestSpecialModesSurviveOwner(t *testing.T) {
	requireRoot(t)
	owners := map[string]Owner{"keep": KeepOwner, "root": {0, 0}, "other": {1234, 2345}}
	for _, mode := range []uint32{0o4755, 0o2755, 0o1777, 0o6750, 0o7777} {
		for oname, owner := range owners {
			t.Run(filepath.Join(octal(mode), oname), func(t *testing.T) {
				r, dir := newRoot(t)
				for _, pass := range []string{"new", "replace"} {
					must(t, r.WriteFile("/usr/bin/tool", []byte(pass), UnixMode(mode), owner))
					if got := statMode(t, filepath.Join(dir, "usr/bin/tool")); got != mode {
						t.Errorf("%s file: mode %04o, want %04o", pass, got, mode)
					}
				}
				must(t, r.MkdirAll("/srv/shared/sub", UnixMode(mode), owner))
				for _, d := range []string{"srv", "srv/shared", "srv/shared/sub"} {
					if got := statMode(t, filepath.Join(dir, d)); got != mode {
						t.Errorf("directory /%s: mode %04o, want %04o", d, got, mode)
					}
				}
				if owner != KeepOwner {
					fi, err := os.Stat(filepath.Join(dir, "usr/bin/tool"))
					must(t, err)
					if got := fileOwner(fi); got != owner {
						t.Errorf("owner %v, want %v", got, owner)
					}
				}
			})
		}
	}
}

func octal(m uint32) string { return fmt.Sprintf("%04o", m) }

// A re-run must notice a file whose setuid, setgid or sticky bit is not
// the one asked for, and put it right; and leave a right one alone.
func TestWriteFileIfChangedComparesSpecialBits(t *testing.T) {
	tests := []struct {
		name      string
		have      uint32 // the file's mode before the re-run
		want      uint32
		wantWrite bool
	}{
		{"setuid lost", 0o755, 0o4755, true},
		{"setuid added", 0o4755, 0o755, true},
		{"setgid lost", 0o755, 0o2755, true},
		{"sticky lost", 0o777, 0o1777, true},
		{"setuid kept", 0o4755, 0o4755, false},
		{"plain kept", 0o644, 0o644, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRoot(t)
			p := filepath.Join(dir, "usr/bin/tool")
			must(t, r.WriteFile("/usr/bin/tool", []byte("x"), UnixMode(tt.want), KeepOwner))
			must(t, unix.Chmod(p, tt.have))
			wrote, err := r.WriteFileIfChanged("/usr/bin/tool", []byte("x"), UnixMode(tt.want), KeepOwner)
			must(t, err)
			if wrote != tt.wantWrite {
				t.Errorf("wrote = %v, want %v", wrote, tt.wantWrite)
			}
			if got := statMode(t, p); got != tt.want {
				t.Errorf("mode %04o after the re-run, want %04o", got, tt.want)
			}
		})
	}
}

// AppendFile keeps an existing file's mode, special bits included.
func TestAppendKeepsSpecialBits(t *testing.T) {
	r, dir := newRoot(t)
	must(t, r.WriteFile("/srv/log", []byte("a\n"), UnixMode(0o1700), KeepOwner))
	must(t, r.AppendFile("/srv/log", []byte("b\n"), 0o644, KeepOwner))
	if got := statMode(t, filepath.Join(dir, "srv/log")); got != 0o1700 {
		t.Errorf("mode %04o after an append, want 01700", got)
	}
}

func TestUnixMode(t *testing.T) {
	tests := []struct {
		in   uint32
		want os.FileMode
	}{
		{0o644, 0o644},
		{0o4755, os.ModeSetuid | 0o755},
		{0o2755, os.ModeSetgid | 0o755},
		{0o1777, os.ModeSticky | 0o777},
		{0o7000, ModeSpecial},
		{0o170644, 0o644}, // a file type from st_mode is not a permission
	}
	for _, tt := range tests {
		t.Run(octal(tt.in&0o7777), func(t *testing.T) {
			if got := UnixMode(tt.in); got != tt.want {
				t.Errorf("UnixMode(%o) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
