package apply

import (
	"testing"

	"github.com/seedinit/seedinit/apply/target"
)

// The host System offers the optional capabilities modules look for; for
// a target that is not the running system each refuses rather than touch
// this machine.
func TestHostCapabilitiesRefuseOfflineTargets(t *testing.T) {
	root, err := target.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var sys System = &HostSystem{Root: root}
	if _, ok := sys.(PowerScheduler); !ok {
		t.Fatal("HostSystem is not a PowerScheduler")
	}
	h := sys.(*HostSystem)
	if err := h.AddRandom([]byte("x")); err == nil {
		t.Error("AddRandom on an offline target must refuse")
	}
	if err := h.SchedulePowerState(t.Context(), PowerRequest{Mode: "reboot"}); err == nil {
		t.Error("SchedulePowerState on an offline target must refuse")
	}
	if err := h.RunPendingPower(t.Context()); err != nil {
		t.Errorf("nothing pending: %v", err)
	}
}
