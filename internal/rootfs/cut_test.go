package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// thisBoot is the first 6 hex digits of the kernel's boot_id, read here
// rather than through the writer, whose temporary files of this boot
// start with them.
func thisBoot(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot_id to tell this boot's temporary files by: %v", err)
	}
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")[:6]
}

// otherBoot is 6 hex digits that are not this boot's.
func otherBoot(t *testing.T) string {
	if thisBoot(t) == "0a0b0c" {
		return "0d0e0f"
	}
	return "0a0b0c"
}

// A run after a cut removes the temporary files the cut run left in the
// directories it writes to, its own naming only: an earlier boot's,
// never this boot's (another process's write may be in progress), never
// a batch's, a directory unless empty, or a name that is not the writer's.
func TestWritesSweepAnEarlierBootsTemporaries(t *testing.T) {
	r, dir := newRoot(t)
	old, now := otherBoot(t), thisBoot(t)
	files := map[string]string{
		"etc/.shadow.seedinit-" + old + "123456":                    "stale",
		"etc/.passwd.seedinit-" + now + "123456":                    "this boot's write in progress",
		"etc/.group.seedinit-batch-" + old + "123456":               "a batch's, left to its journal",
		"etc/.motd.seedinit-notours":                                "not ours",
		"etc/.seedinit-accounts.journal":                            "not a temporary file",
		"home/u/..profile.seedinit-" + old + "abcdef":               "stale, in a home",
		"var/lib/cloud/i/.user-data.txt.seedinit-" + old + "000000": "stale, beside a file that is whole",
		"var/lib/cloud/i/user-data.txt":                             "same",
		"var/lib/cloud/.instance.seedinit-" + old + "0000ff":        "",
	}
	for name, content := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	must(t, os.Mkdir(filepath.Join(dir, "etc/.d.seedinit-"+old+"123456"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "etc/.full.seedinit-"+old+"123456/x"), 0o755))

	must(t, r.WriteFile("/etc/hostname", []byte("h\n"), 0o644, KeepOwner))
	must(t, r.WriteFile("/home/u/.profile", []byte("p\n"), 0o644, KeepOwner))
	if changed, err := r.WriteFileIfChanged("/var/lib/cloud/i/user-data.txt", []byte("same"), 0o600, KeepOwner); err != nil || changed {
		t.Fatalf("WriteFileIfChanged of the same content: %v, %v", changed, err)
	}
	must(t, r.Symlink("/var/lib/cloud/i", "/var/lib/cloud/instance"))

	var left []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, ".seedinit") {
			left = append(left, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	slices.Sort(left)
	want := []string{
		"etc/.full.seedinit-" + old + "123456",
		"etc/.full.seedinit-" + old + "123456/x",
		"etc/.group.seedinit-batch-" + old + "123456",
		"etc/.motd.seedinit-notours",
		"etc/.passwd.seedinit-" + now + "123456",
		"etc/.seedinit-accounts.journal",
	}
	if !slices.Equal(left, want) {
		t.Errorf("left after the writes:\n%s\nwant:\n%s", strings.Join(left, "\n"), strings.Join(want, "\n"))
	}
}

// A cut stops every later change and tidies nothing: a temporary file
// made before it stays.
func TestStopAfterCutsThePower(t *testing.T) {
	r, dir := newRoot(t)
	must(t, r.WriteFile("/etc/a", []byte("a"), 0o644, KeepOwner))
	r.StopAfter(1) // the temporary file of the next write, not its rename
	err := r.WriteFile("/etc/a", []byte("b"), 0o644, KeepOwner)
	if !errors.Is(err, ErrPowerCut) {
		t.Fatalf("write after the cut: %v, want ErrPowerCut", err)
	}
	if err := r.WriteFile("/etc/b", []byte("b"), 0o644, KeepOwner); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("a later write: %v", err)
	}
	if err := r.MkdirAll("/var/x", 0o755, KeepOwner); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("a later mkdir: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "etc"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[1] != "a" || !strings.HasPrefix(names[0], ".a.seedinit-") {
		t.Errorf("after the cut /etc holds %q, want a and its temporary file", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "etc/a")); string(b) != "a" {
		t.Errorf("a = %q, want the old content", b)
	}
	r.StopAfter(-1)
	must(t, r.WriteFile("/etc/b", []byte("b"), 0o644, KeepOwner))
}

// batchFiles are the files a batch test replaces, old and new.
var batchFiles = []struct{ name, old, new string }{
	{"group", "root:x:0:\n", "root:x:0:\nu:x:1000:\n"},
	{"gshadow", "root:*::\n", "root:*::\nu:!::\n"},
	{"passwd", "root:x:0:0::/root:/bin/sh\n", "root:x:0:0::/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\n"},
	{"shadow", "root:*:1::::::\n", "root:*:1::::::\nu:!:2::::::\n"},
	{"new-file", "", "made by the batch\n"},
}

// commitBatch writes batchFiles' new contents in one batch.
func commitBatch(r *Root) error {
	b := r.NewBatch("/etc", ".test.journal")
	for _, f := range batchFiles {
		b.Add(f.name, []byte(f.new), 0o640, KeepOwner)
	}
	return b.Commit()
}

// A batch cut after any of its steps is finished or undone, whole, by the
// next RecoverBatch: never some files old and some new, nothing left
// behind.
func TestBatchCutAtEveryStep(t *testing.T) {
	setup := func(t *testing.T) (*Root, string) {
		r, dir := newRoot(t)
		must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		for _, f := range batchFiles {
			if f.old != "" {
				must(t, os.WriteFile(filepath.Join(dir, "etc", f.name), []byte(f.old), 0o644))
			}
		}
		return r, dir
	}
	r, _ := setup(t)
	must(t, commitBatch(r))
	steps := r.Steps()
	if steps < len(batchFiles)*2+3 {
		t.Fatalf("an uncut batch took %d steps: fewer than its files' temporary files and renames", steps)
	}
	sawOld, sawNew := false, false
	for k := 0; k <= steps; k++ {
		r, dir := setup(t)
		r.StopAfter(k)
		err := commitBatch(r)
		if (err == nil) != (k == steps) {
			t.Fatalf("cut after %d of %d steps: commit returned %v", k, steps, err)
		}
		next, err := Open(dir)
		must(t, err)
		if _, err := next.RecoverBatch("/etc", ".test.journal"); err != nil {
			t.Fatalf("cut after %d steps: recover: %v", k, err)
		}
		next.Close()
		var old, new, neither []string
		for _, f := range batchFiles {
			b, err := os.ReadFile(filepath.Join(dir, "etc", f.name))
			switch {
			case string(b) == f.new:
				new = append(new, f.name)
			case f.old == "" && errors.Is(err, os.ErrNotExist), f.old != "" && string(b) == f.old:
				old = append(old, f.name)
			default:
				neither = append(neither, f.name)
			}
		}
		if len(neither) > 0 || (len(old) > 0 && len(new) > 0) {
			t.Errorf("cut after %d of %d steps, then recovered: old %v, new %v, neither %v", k, steps, old, new, neither)
		}
		sawOld = sawOld || len(old) > 0
		sawNew = sawNew || len(new) > 0
		entries, _ := os.ReadDir(filepath.Join(dir, "etc"))
		want := len(batchFiles) - 1 // new-file is the batch's
		if len(new) > 0 {
			want++
		}
		if len(entries) != want {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("cut after %d steps, then recovered: /etc holds %q", k, names)
		}
	}
	if !sawOld || !sawNew {
		t.Errorf("the cuts never left the batch undone (%v) or done (%v): the test proves nothing", sawOld, sawNew)
	}
}

// A journal that is not a batch's own (a name outside its directory, a
// temporary file of another naming) is refused and changes nothing.
func TestRecoverBatchRefusesForeignJournals(t *testing.T) {
	for _, journal := range []string{
		"seedinit batch v1\n.x.seedinit-batch-0123456789ab ../x\n",
		"seedinit batch v1\nvictim passwd\n",
		"seedinit batch v1\n.shadow.seedinit-batch-0123456789ab passwd\n",
		"not a journal\n",
	} {
		r, dir := newRoot(t)
		must(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("old"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "etc/victim"), []byte("v"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "etc/.shadow.seedinit-batch-0123456789ab"), []byte("s"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "etc/j"), []byte(journal), 0o600))
		if _, err := r.RecoverBatch("/etc", "j"); err == nil {
			t.Errorf("journal %q: recovered", journal)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "etc/passwd")); string(b) != "old" {
			t.Errorf("journal %q: passwd = %q", journal, b)
		}
		if _, err := os.Stat(filepath.Join(dir, "etc/victim")); err != nil {
			t.Errorf("journal %q: %v", journal, err)
		}
	}
}
