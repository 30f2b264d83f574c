package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// appendConfig appends twice to one file, between other writes.
const appendConfig = `
write_files:
- {path: /etc/motd, append: true, content: "provisioned by seedinit\n"}
- {path: /etc/waf/policy.conf, content: "mode: blocking\n", permissions: '0640'}
- {path: /etc/motd, append: true, content: "second line\n"}
- {path: /etc/issue, append: true, content: "appliance\n"}
`

// runAppends runs write_files over dir as a boot would, with the power
// cut after cut steps (-1: never); it returns the steps taken.
func runAppends(t *testing.T, dir string, cut int) int {
	t.Helper()
	rootfs.SimulateReboot()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, appendConfig))
	env.Root.StopAfter(cut)
	start := env.Root.Steps()
	err := runWriteFiles(context.Background(), env.Env)
	if cut < 0 && err != nil {
		t.Fatalf("write_files, not cut: %v", err)
	}
	return env.Root.Steps() - start
}

// An append is made once per instance: write_files run again after a
// power cut, its semaphore lost, does not append what it appended before
// the cut, and appends what it had not.
func TestAppendsOnceAcrossACut(t *testing.T) {
	setup := func() string {
		dir := newTarget(t)
		os.WriteFile(filepath.Join(dir, "etc/motd"), []byte("Debian GNU/Linux\n"), 0o644)
		return dir
	}
	want := setup()
	steps := runAppends(t, want, -1)
	wantMotd, wantIssue := stat(t, want, "etc/motd"), stat(t, want, "etc/issue")
	if wantMotd == nil || wantMotd.Content != "Debian GNU/Linux\nprovisioned by seedinit\nsecond line\n" {
		t.Fatalf("motd after a run without a cut: %+v", wantMotd)
	}
	for k := 0; k <= steps; k++ {
		dir := setup()
		runAppends(t, dir, k)
		runAppends(t, dir, -1)
		if got := stat(t, dir, "etc/motd"); *got != *wantMotd {
			t.Errorf("cut after %d of %d steps, then a run: motd %q, want %q", k, steps, got.Content, wantMotd.Content)
		}
		if got := stat(t, dir, "etc/issue"); got == nil || *got != *wantIssue {
			t.Errorf("cut after %d of %d steps, then a run: issue %+v, want %+v", k, steps, got, wantIssue)
		}
	}
}
