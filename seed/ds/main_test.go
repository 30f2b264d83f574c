package ds

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/devprobe"
)

// stalledEnv names a device whose label read never returns, in this test
// binary and in the device probe helpers it starts (the same binary).
const stalledEnv = "SEEDINIT_TEST_STALLED_DEVICE"

func TestMain(m *testing.M) {
	stallDevice(os.Getenv(stalledEnv))
	devprobe.ServeIfHelper()
	os.Exit(m.Run())
}

// stallDevice makes the label read of the device named name block, as a
// read of a device whose backend stalls does in the kernel.
func stallDevice(name string) {
	if name == "" {
		probeLabelFunc = probeLabel
		return
	}
	probeLabelFunc = func(p string) labelProbe {
		if filepath.Base(p) == name {
			time.Sleep(time.Hour)
		}
		return probeLabel(p)
	}
}
