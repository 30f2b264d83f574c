package boot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// AfterHandoff is what the child PID 1 starts for the final stage (see
// startAfterHandoff) does before that stage runs, in another process
// after the exec of the real init: `seedinit run --after-handoff`.
type AfterHandoff struct {
	// Root is the system the stages run on, "/" after the switch.
	Root string
	// Mounts must be mounted in Root (the filesystems PID 1 released) and
	// Network have an address (the interfaces handed to the root's own
	// service) before the final stage runs; the network is waited for
	// NetworkWait at the most.
	Mounts, Network []string
	// KeepSelf copies this program into Root once it is writable, for
	// `seedinit status`, `query` and `analyze` on the running system.
	KeepSelf bool
	// KeepOnly: no final stage follows (no seed was kept), so nothing
	// notes a wait and the copy is given up after KeepSelfWait on a root
	// that stays read-only.
	KeepOnly bool
	Log      *slog.Logger
}

// KeepSelfWait bounds how long a copy alone waits for a writable root.
const KeepSelfWait = 10 * time.Minute

// Wait waits until the real init has set the system up as a.Mounts and
// a.Network ask, keeps this program in the root when asked, and gives
// the final stage back the normal priority. It returns an error only for
// KeepOnly, whose copy is all it does; otherwise the final stage runs
// whatever became of the copy or the network, and status.json says what
// it is waiting for meanwhile.
func (a AfterHandoff) Wait(ctx context.Context) error {
	if a.KeepOnly {
		ctx, cancel := context.WithTimeout(ctx, KeepSelfWait)
		last := ""
		ready := WaitForRealInit(ctx, a.Root, a.Mounts, func(reason string) { last = reason })
		cancel()
		if !ready {
			return fmt.Errorf("seedinit not kept in the root %s: still waiting for it after %s (%s)", a.Root, KeepSelfWait, last)
		}
		a.keepSelf()
		return nil
	}
	WaitForRealInit(ctx, a.Root, a.Mounts, NoteFinalStageWaiting)
	// The copy needs the root and /var, not the network.
	if a.KeepSelf {
		a.keepSelf()
	}
	if len(a.Network) > 0 {
		if down := WaitForNetwork(ctx, a.Network, NetworkWait, NoteFinalStageWaiting); len(down) > 0 {
			a.Log.Warn("final stage: interfaces still without an address; running anyway", "interfaces", strings.Join(down, ", "), "after", NetworkWait)
		}
	}
	NoteFinalStageWaiting("")
	// PID 1 started this child at the lowest priority; the final stage's
	// modules and the user's scripts run at the normal one, as
	// cloud-init's do.
	RestorePriority()
	return nil
}

// keepSelf is KeepRunningSelf; a failure is only logged.
func (a AfterHandoff) keepSelf() {
	if err := KeepRunningSelf(a.Root, a.Log); err != nil {
		a.Log.Warn("keep seedinit in the root", "error", err.Error())
	}
}
