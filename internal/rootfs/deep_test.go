package rootfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// Names are held to Linux's limits with an error that says which, and a
// path right at the limits works.
func TestPathLimits(t *testing.T) {
	deepest := "/" + strings.Repeat("a/", 2046) + "ff" // 4095 bytes, 2047 levels
	if len(deepest) != maxPath {
		t.Fatalf("test path is %d bytes, want %d", len(deepest), maxPath)
	}
	long := strings.Repeat("n", maxComponent)
	tests := []struct {
		name    string
		path    string
		wantErr string // "" for success
	}{
		{name: "deepest path Linux takes", path: deepest},
		{name: "longest component", path: "/srv/" + long},
		{name: "one byte over PATH_MAX", path: deepest + "x", wantErr: "the path is 4096 bytes long: Linux allows at most 4095 (PATH_MAX)"},
		{name: "far over PATH_MAX", path: strings.Repeat("/b", 5000), wantErr: "the path is 10000 bytes long"},
		{name: "component over NAME_MAX", path: "/srv/" + long + "x/f", wantErr: "a component is 256 bytes long (nnnn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRoot(t)
			err := r.WriteFile(tt.path, []byte("x"), 0o644, KeepOwner)
			if tt.wantErr == "" {
				must(t, err)
				if b, err := r.ReadFile(tt.path); err != nil || string(b) != "x" {
					t.Errorf("read back: %q, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNameTooLong) {
				t.Fatalf("WriteFile error = %v, want ErrNameTooLong saying %q", err, tt.wantErr)
			}
			if len(err.Error()) > 400 {
				t.Errorf("the error quotes the whole hostile name (%d bytes)", len(err.Error()))
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a refused name left %v in the target", entries)
			}
		})
	}
}

// Symlinks that make a short name into a path longer than Linux allows
// are refused as they are followed, before the walk holds a handle per
// level of the expansion.
func TestPathLimitsThroughSymlinks(t *testing.T) {
	r, dir := newRoot(t)
	chain := strings.TrimSuffix(strings.Repeat("c/", 1500), "/")
	must(t, os.MkdirAll(filepath.Join(dir, chain), 0o755))
	// Each link is relative and short enough, but each adds 1500 levels.
	must(t, os.Symlink(chain, filepath.Join(dir, "l1")))
	must(t, os.Symlink(chain, filepath.Join(dir, chain, "l1")))
	_, err := r.Resolve("/l1/l1/x")
	if err == nil || !errors.Is(err, ErrNameTooLong) || !strings.Contains(err.Error(), "following its symlinks gives a path of") {
		t.Fatalf("Resolve through expanding symlinks = %v, want a PATH_MAX error", err)
	}
}

// MkdirAll creates each missing level once, with the mode and journal
// entries it always had, and stops at a level that is not a directory.
func TestMkdirAllLevels(t *testing.T) {
	r, dir := newRoot(t)
	must(t, os.MkdirAll(filepath.Join(dir, "srv"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "srv/file"), nil, 0o644))
	must(t, os.Symlink("/srv", filepath.Join(dir, "link")))

	must(t, r.MkdirAll("/link/a/b/c", 0o750, KeepOwner))
	var made []string
	for _, c := range r.Changes(0) {
		made = append(made, c.Op+" "+c.Path)
	}
	if want := []string{"mkdir /srv/a", "mkdir /srv/a/b", "mkdir /srv/a/b/c"}; strings.Join(made, "|") != strings.Join(want, "|") {
		t.Errorf("journal %q, want %q", made, want)
	}
	for _, d := range []string{"srv/a", "srv/a/b", "srv/a/b/c"} {
		fi, err := os.Lstat(filepath.Join(dir, d))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: %v, %v; want a 0750 directory", d, fi, err)
		}
	}
	must(t, r.MkdirAll("/srv/a/b/c", 0o700, KeepOwner))
	if n := r.ChangeCount(); n != 3 {
		t.Errorf("MkdirAll of an existing directory recorded %d changes in all, want 3", n)
	}
	err := r.MkdirAll("/srv/file/sub", 0o755, KeepOwner)
	if err == nil || !strings.Contains(err.Error(), "create directory /srv/file/sub: /srv/file is not a directory") {
		t.Errorf("MkdirAll below a file = %v", err)
	}
}

// A level swapped for a symlink between resolve and the walk (a race with
// another process) fails the walk: nothing is made through it, inside or
// outside the target.
func TestMkdirAllRefusesSwappedLevel(t *testing.T) {
	for _, swapped := range []string{"srv", "srv/a"} {
		t.Run(swapped, func(t *testing.T) {
			r, dir := newRoot(t)
			outside := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(dir, "srv/a"), 0o755))
			mkdirAllHook = func(string) {
				p := filepath.Join(dir, swapped)
				must(t, os.RemoveAll(p))
				must(t, os.Symlink(outside, p))
			}
			defer func() { mkdirAllHook = nil }()
			err := r.MkdirAll("/srv/a/b/c", 0o755, KeepOwner)
			if err == nil || !strings.Contains(err.Error(), "/"+swapped+" is not a directory") {
				t.Errorf("MkdirAll through a swapped level = %v, want a not-a-directory error", err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("MkdirAll made %v outside the target", entries)
			}
		})
	}
}

// lexistAll must agree with a plain definition: every level below the top
// is a directory that is not a symlink, and the last one exists.
func TestLexistAllAgreesWithTheDefinition(t *testing.T) {
	names := []string{"a", "b", "ab", "a.b"}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		r, dir := newRoot(t)
		random := func() string {
			parts := make([]string, 1+rng.IntN(4))
			for i := range parts {
				parts[i] = names[rng.IntN(len(names))]
			}
			return path.Join(parts...)
		}
		for range 40 {
			p := filepath.Join(dir, random())
			if _, err := os.Lstat(filepath.Dir(p)); err != nil {
				continue
			}
			switch rng.IntN(3) {
			case 0:
				os.Mkdir(p, 0o755)
			case 1:
				os.WriteFile(p, nil, 0o644)
			default:
				os.Symlink(".", p)
			}
		}
		var rels []string
		for range 60 {
			rels = append(rels, random())
		}
		rels = append(rels, ".")
		got := r.lexistAll(rels)
		for i, rel := range rels {
			if want := definedToExist(dir, rel); got[i] != want {
				t.Fatalf("seed %d: lexistAll says %s exists: %v; the definition: %v", seed, rel, got[i], want)
			}
		}
	}
}

func definedToExist(dir, rel string) bool {
	if rel == "." {
		return true
	}
	parts := strings.Split(rel, "/")
	for i := range parts[:len(parts)-1] {
		fi, err := os.Lstat(filepath.Join(dir, filepath.Join(parts[:i+1]...)))
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	_, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil
}

// errReader yields some bytes, then fails.
type errReader struct{ n int }

func (e *errReader) Read(p []byte) (int, error) {
	if e.n == 0 {
		return 0, errors.New("source failed")
	}
	n := min(len(p), e.n)
	e.n -= n
	return n, nil
}

func TestWriteFileFromIfChanged(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*copyBlock/16+7)
	tests := []struct {
		name        string
		old         []byte // nil: no old file
		oldMode     fs.FileMode
		src         io.Reader
		mode        fs.FileMode
		wantChanged bool
		wantErr     string
		want        []byte
	}{
		{name: "new file", src: bytes.NewReader(big), mode: 0o644, wantChanged: true, want: big},
		{name: "same content and mode", old: big, oldMode: 0o644, src: bytes.NewReader(big), mode: 0o644, want: big},
		{name: "same content, other mode", old: big, oldMode: 0o600, src: bytes.NewReader(big), mode: 0o644, wantChanged: true, want: big},
		{name: "differs in the last block", old: append(append([]byte{}, big[:len(big)-1]...), 'x'), oldMode: 0o644, src: bytes.NewReader(big), mode: 0o644, wantChanged: true, want: big},
		{name: "longer old file", old: append(append([]byte{}, big...), 'x'), oldMode: 0o644, src: bytes.NewReader(big), mode: 0o644, wantChanged: true, want: big},
		{name: "failing source keeps the old file", old: []byte("old"), oldMode: 0o644, src: &errReader{n: 100}, mode: 0o644, wantErr: "write /etc/f: source failed", want: []byte("old")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRoot(t)
			p := filepath.Join(dir, "etc/f")
			if tt.old != nil {
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, tt.old, tt.oldMode))
				must(t, os.Chmod(p, tt.oldMode))
			}
			changed, err := r.WriteFileFromIfChanged("/etc/f", tt.src, tt.mode, KeepOwner)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, tt.want) {
				t.Errorf("content is %d bytes, not the %d wanted", len(b), len(tt.want))
			}
			if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
}

// write_files' append: the old content, then the new, with the mode given
// even for a file that exists.
func TestAppendFileFrom(t *testing.T) {
	r, dir := newRoot(t)
	p := filepath.Join(dir, "var/log/app.log")
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte("one\n"), 0o644))
	must(t, r.AppendFileFrom("/var/log/app.log", strings.NewReader("two\n"), 0o600, KeepOwner))
	must(t, r.AppendFileFrom("/var/log/new.log", strings.NewReader("first\n"), 0o640, KeepOwner))
	for name, want := range map[string]struct {
		content string
		mode    fs.FileMode
	}{"app.log": {"one\ntwo\n", 0o600}, "new.log": {"first\n", 0o640}} {
		b, _ := os.ReadFile(filepath.Join(dir, "var/log", name))
		fi, err := os.Stat(filepath.Join(dir, "var/log", name))
		must(t, err)
		if string(b) != want.content || fi.Mode().Perm() != want.mode {
			t.Errorf("%s: %q %v, want %q %v", name, b, fi.Mode().Perm(), want.content, want.mode)
		}
	}
}

// FuzzResolve resolves names in a tree with symlinks (relative, absolute,
// climbing out, looping) and checks the answer against the plain
// definition, and the name limits against Linux's.
func FuzzResolve(f *testing.F) {
	dir := f.TempDir()
	for _, d := range []string{"etc/ssh", "usr/share", "var/lib/cloud"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for link, dest := range map[string]string{
		"etc/abs":        "/usr/share",
		"etc/up":         "../../../../var",
		"etc/loop":       "loop2",
		"etc/loop2":      "loop",
		"var/lib/self":   ".",
		"var/lib/parent": "..",
		"usr/long":       strings.Repeat("x/", 1000),
	} {
		if err := os.Symlink(dest, filepath.Join(dir, link)); err != nil {
			f.Fatal(err)
		}
	}
	r, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { r.Close() })
	for _, s := range []string{"/etc/abs/x", "etc/up/lib/cloud", "/etc/loop", "/var/lib/self/self/parent/lib", "../../etc", "/usr/long/long", "/" + strings.Repeat("a/", 2047)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := r.Resolve(name)
		if limitErr := checkPathLimits(name); limitErr != nil {
			if !errors.Is(err, ErrNameTooLong) {
				t.Fatalf("Resolve(%q) = %q, %v; the name is over Linux's limits", name, got, err)
			}
			return
		}
		if strings.IndexByte(name, 0) >= 0 {
			if err == nil {
				t.Fatalf("Resolve(%q) = %q: a name with a NUL byte must fail", name, got)
			}
			return
		}
		if errors.Is(err, ErrNameTooLong) {
			// Symlinks made it too long on the way; the definition
			// has no such limit.
			return
		}
		want, wantErr := referenceResolve(dir, name)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("Resolve(%q) = %q, %v; the definition gives %q, %v", name, got, err, want, wantErr)
		}
		if err == nil && (strings.HasPrefix(got, "/") || got == ".." || strings.HasPrefix(got, "../")) {
			t.Fatalf("Resolve(%q) = %q leaves the target", name, got)
		}
	})
}
