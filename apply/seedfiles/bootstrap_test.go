package seedfiles

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed"
)

// A vendor's bootstrap tree lands below the directory the image names,
// unchanged: content, modes and owners as the medium gives them, but no
// set-id bit; what was there and is not in the tree stays.
func TestBootstrapTreeCopied(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc/seedinit"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/seedinit/bootstrap-dir"), []byte("/opt/vendor/bootstrap\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "opt/vendor/bootstrap/content"), 0o700)
	os.WriteFile(filepath.Join(dir, "opt/vendor/bootstrap/content/old"), []byte("kept"), 0o644)
	env := applytest.NewEnvAt(t, dir, nil)
	env.Seed.Bootstrap = []seed.BootstrapFile{
		{Path: "config", Dir: true, Mode: 0o750, UID: 0, GID: 993},
		{Path: "config/init-cfg.txt", Content: []byte("type=dhcp-client\n"), Mode: 0o640, UID: 0, GID: 993},
		{Path: "content", Dir: true, Mode: 0o755, UID: -1, GID: -1},
		{Path: "license", Dir: true, Mode: 0o700, UID: 0, GID: 0},
		{Path: "license/authcodes", Content: []byte("I1234567"), Mode: 0o600, UID: 0, GID: 0},
		{Path: "software/setuid-tool", Content: []byte("#!/bin/sh\n"), Mode: 0o4755, UID: 0, GID: 0},
	}
	if err := runBootstrapTree(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "opt/vendor/bootstrap")
	for p, want := range map[string]struct {
		mode     os.FileMode
		uid, gid uint32
		content  string
	}{
		"config":               {os.ModeDir | 0o750, 0, 993, ""},
		"config/init-cfg.txt":  {0o640, 0, 993, "type=dhcp-client\n"},
		"content":              {os.ModeDir | 0o755, 0, 0, ""},
		"license/authcodes":    {0o600, 0, 0, "I1234567"},
		"software/setuid-tool": {0o755, 0, 0, "#!/bin/sh\n"},
		"content/old":          {0o644, 0, 0, "kept"},
	} {
		fi, err := os.Lstat(filepath.Join(base, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if fi.Mode() != want.mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want.mode)
		}
		if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != want.uid || st.Gid != want.gid) {
			t.Errorf("%s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, want.uid, want.gid)
		}
		if want.content != "" {
			if b, _ := os.ReadFile(filepath.Join(base, p)); string(b) != want.content {
				t.Errorf("%s: %q", p, b)
			}
		}
	}
}

// Without the image's word the tree is not copied, and that is said; a
// path that climbs out of the tree is refused, the rest copied.
func TestBootstrapTreeRefused(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, nil)
	env.Seed.Bootstrap = []seed.BootstrapFile{{Path: "config/x", Content: []byte("x"), Mode: 0o644, UID: -1, GID: -1}}
	err := runBootstrapTree(context.Background(), env.Env)
	if !errors.Is(err, apply.ErrSkipped) || len(env.Warnings()) != 1 || !strings.Contains(env.Warnings()[0], BootstrapDirFile) {
		t.Errorf("no bootstrap-dir: %v %q", err, env.Warnings())
	}
	os.MkdirAll(filepath.Join(dir, "etc/seedinit"), 0o755)
	for _, bad := range []string{"relative/dir", "/", "/a/../b"} {
		os.WriteFile(filepath.Join(dir, "etc/seedinit/bootstrap-dir"), []byte(bad+"\n"), 0o644)
		if err := runBootstrapTree(context.Background(), env.Env); err == nil || errors.Is(err, apply.ErrSkipped) {
			t.Errorf("bootstrap-dir %q: %v", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "etc/seedinit/bootstrap-dir"), []byte("/srv/bootstrap\n"), 0o644)
	env.Seed.Bootstrap = append(env.Seed.Bootstrap, seed.BootstrapFile{Path: "../../etc/cron.d/evil", Content: []byte("* * * * * root evil"), Mode: 0o644, UID: -1, GID: -1})
	if err := runBootstrapTree(context.Background(), env.Env); err == nil || !strings.Contains(err.Error(), "not a path below it") {
		t.Errorf("a climbing path: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/cron.d/evil")); err == nil {
		t.Error("written outside the tree")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "srv/bootstrap/config/x")); string(b) != "x" {
		t.Errorf("the good file: %q", b)
	}
}
