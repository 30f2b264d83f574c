package rootfs

import (
	"encoding/hex"
	"errors"

	"github.com/seedinit/seedinit/internal/earlyrand"
)

// ErrPowerCut is what every change of a Root returns once StopAfter's
// budget is spent.
var ErrPowerCut = errors.New("the power is cut (StopAfter)")

// StopAfter makes r, for a crash test, a machine whose power is cut after
// n more steps. A step is one change a power cut can leave on its own: a
// directory made, then given its owner and mode; a temporary file
// created; a file or link renamed into place; a name removed; a mode or
// owner changed. Once the budget is spent, every later change does
// nothing and returns ErrPowerCut, and nothing is tidied up: a temporary
// file made before the cut stays, as it would on the disk. A test then
// opens the directory again as the next boot would, runs again, and
// compares the result with a run that was not cut. n < 0 lifts the cut.
func (r *Root) StopAfter(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopAt = -1
	if n >= 0 {
		r.stopAt = r.steps + n
	}
}

// Steps counts the steps (as StopAfter counts them) r has taken.
func (r *Root) Steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steps
}

// step takes one step, or refuses it when the power is cut.
func (r *Root) step() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopAt >= 0 && r.steps >= r.stopAt {
		return ErrPowerCut
	}
	r.steps++
	return nil
}

// isCut reports whether the power is cut: what a failed write would tidy
// up stays, as on a disk whose machine stopped.
func (r *Root) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopAt >= 0 && r.steps >= r.stopAt
}

// SimulateReboot makes the Roots opened after it act as in a later boot,
// for crash tests: their temporary files carry another boot's tag, and
// what Roots opened before it made is an earlier boot's to them, which
// their sweep removes.
func SimulateReboot() {
	var b [3]byte
	earlyrand.Read(b[:])
	bootMu.Lock()
	defer bootMu.Unlock()
	bootRead, bootID = true, hex.EncodeToString(b[:])
}
