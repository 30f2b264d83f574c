package disksetup

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/disktest"
)

// On a real loop device the new partitions must reach the kernel: this
// machine's kernel parses no partition tables itself, so they appear only
// through the BLKPG fallback.
func TestSetupDiskLoopDevice(t *testing.T) {
	disktest.NeedLoop(t)
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	loop := disktest.AttachLoop(t, img)

	cfg := apply.Config{"disk_setup": map[string]any{loop: map[string]any{"table_type": "gpt", "layout": []any{int64(50), int64(50)}, "overwrite": false}}}
	specs, err := ParseDiskSetup(cfg)
	if err != nil || len(specs) != 1 {
		t.Fatalf("parse: %v %v", specs, err)
	}
	msg, err := SetupDisk(specs[0], loop, rand.Reader)
	if err != nil {
		t.Fatalf("SetupDisk %s: %v", loop, err)
	}
	t.Log(msg)
	name := filepath.Base(loop)
	for _, p := range []string{name + "p1", name + "p2"} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join("/sys/class/block", p)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the kernel does not know %s after the table was written", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if out, err := exec.Command("sgdisk", "-v", loop).CombinedOutput(); err == nil && !strings.Contains(string(out), "No problems found") {
		t.Errorf("sgdisk -v: %s", out)
	}
	// A second run finds the layout in place and changes nothing.
	msg, err = SetupDisk(specs[0], loop, rand.Reader)
	if err != nil {
		t.Fatalf("second SetupDisk: %v", err)
	}
	t.Log(msg)
}
