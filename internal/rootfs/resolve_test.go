package rootfs

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// referenceResolve is the plain definition of Resolve: walk the name one
// component at a time from the top, Lstat every prefix on the host, splice
// symlink targets in (absolute ones from the top), and keep components that
// do not exist as they are. The real resolve must agree with it.
func referenceResolve(dir, name string) (string, error) {
	pending := splitPath(name)
	var done []string
	links := 0
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		candidate := filepath.Join(dir, path.Join(append(append([]string{}, done...), part)...))
		fi, err := os.Lstat(candidate)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, part)
			continue
		}
		if links++; links > maxSymlinks {
			return "", errors.New("loop")
		}
		dest, err := os.Readlink(candidate)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(dest, "/") {
			done = nil
		}
		pending = append(splitPath(dest), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

func TestResolveAgreesWithTheDefinition(t *testing.T) {
	names := []string{"a", "b", "c", "..", ".", "x"}
	randomPath := func(rng *rand.Rand) string {
		parts := make([]string, 1+rng.IntN(5))
		for i := range parts {
			parts[i] = names[rng.IntN(len(names))]
		}
		p := strings.Join(parts, "/")
		if rng.IntN(2) == 0 {
			p = "/" + p
		}
		return p
	}
	followed := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r, dir := newRoot(t)
		// A tree of directories, files and symlinks whose targets are
		// random absolute or relative paths, loops and ".." included.
		// It is made through an os.Root: a path through a symlink made
		// earlier ("a" -> "/") must not reach past dir. Made with the
		// host's calls, the fixture wrote /b, /c and /x into the host's /.
		fixture, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		for range 30 {
			p := strings.TrimPrefix(path.Clean("/"+randomPath(rng)), "/")
			if p == "" || p == ".." || strings.HasPrefix(p, "../") {
				continue
			}
			switch rng.IntN(3) {
			case 0:
				fixture.Mkdir(p, 0o755)
			case 1:
				fixture.WriteFile(p, nil, 0o644)
			default:
				fixture.Symlink(randomPath(rng), p)
			}
		}
		fixture.Close()
		for range 200 {
			q := randomPath(rng)
			want, wantErr := referenceResolve(dir, q)
			got, err := r.Resolve(q)
			if (err != nil) != (wantErr != nil) || got != want {
				t.Fatalf("seed %d: Resolve(%q) = %q, %v; the definition gives %q, %v", seed, q, got, err, want, wantErr)
			}
			if lexical := strings.TrimPrefix(path.Clean("/"+q), "/"); err == nil && got != lexical && !(got == "." && lexical == "") {
				followed++
			}
		}
	}
	if followed < 100 {
		t.Errorf("only %d of 8000 lookups went through a symlink: the trees are too tame", followed)
	}
}
