package boot

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A module's load recorded inside "kernel modules" is in the JSON and in
// blame, slowest first, and left out of show, which lists the boot's steps.
func TestTimelineModuleSteps(t *testing.T) {
	start := time.Now()
	tl := NewTimeline(start, slog.New(slog.DiscardHandler))
	tl.Do("kernel modules", func() error {
		tl.Record(ModuleStepPrefix+"virtio_blk", start.Add(time.Millisecond), 30*time.Millisecond)
		tl.Record(ModuleStepPrefix+"ext4", start.Add(40*time.Millisecond), 90*time.Millisecond)
		return nil
	})
	back, err := ReadTimeline(tl.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 3 || back.Steps[0].Name != "module: virtio_blk" || back.Steps[0].Start != time.Millisecond {
		t.Fatalf("steps read back: %+v", back.Steps)
	}
	var show, blame strings.Builder
	back.Show(&show)
	back.Blame(&blame)
	if strings.Contains(show.String(), "module:") || !strings.Contains(show.String(), "kernel modules") {
		t.Errorf("show:\n%s", show.String())
	}
	lines := strings.Split(strings.TrimSpace(blame.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "(module: ext4)") || !strings.Contains(lines[1], "(module: virtio_blk)") {
		t.Errorf("blame:\n%s", blame.String())
	}
}
