package boot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// Strict mode (seedinit.strict) is for appliances that must not run
// half-configured: the real init is started only when provisioning ran
// cleanly: no error or panic in the search, the trust decision, the
// measurement or PID 1's stages (local, network, config), no part of
// the seed refused, the seed kept for the final stage. Otherwise the boot
// takes the rescue path (seedinit.rescue: a shell, else a reboot) with
// the reason on the console and in status.json. The final stage runs
// after the real init by design and cannot hold the handoff.
// seedinit.strict=datasource also refuses a root never provisioned
// when no datasource gave a seed; plain strict hands such a boot off,
// having run no module.
//
// A failure of the modules is kept in strictRefusedPath with the
// instance's id: the modules that ran will not run again for the same
// instance, so the next boot of it would run clean and hand off a machine
// that is not what its seed asked for. It refuses again, until the
// instance changes (a new instance-id runs its modules anew) or the file
// is removed. A failure before the modules (the seed refused or not
// measured, a TPM that did not answer) ran none of them and is not kept:
// the next boot tries again, so that a flaky TPM or a late seed disk
// cannot refuse an instance for ever.
var strictRefusedPath = apply.Path("data", "seedinit-strict-refused")

// enforceStrict returns when the handoff may happen, and otherwise takes
// the rescue path.
func (p *PID1) enforceStrict() {
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		p.Log.Error("seedinit.strict: not handing off to the real init", "reason", err.Error())
		p.rescue(fmt.Errorf("seedinit.strict: open the target to check its modules: %w", err))
		return
	}
	defer root.Close()
	if reason, keep := p.strictRefusal(root); reason != "" {
		// A refusal kept from before stays as it was written.
		p.refuseHandoff(root, reason, keep)
	}
}

// strictRefusal says why the handoff must not happen, "" when it may,
// and whether the refusal is kept for the instance.
func (p *PID1) strictRefusal(root *rootfs.Root) (reason string, keep bool) {
	var reasons []string
	if p.stagesErr != nil {
		reasons = append(reasons, p.stagesErr.Error())
	}
	reasons = append(reasons, p.provisionFailures...)
	if len(reasons) > 0 {
		return strings.Join(reasons, "; "), p.stagesErr != nil
	}
	instance := currentInstance(root)
	if !p.foundSeed && p.Opts.StrictDatasource && instance == "" {
		return "seedinit.strict=datasource: no datasource gave a seed, and this root was never provisioned", false
	}
	b, err := root.ReadFile(strictRefusedPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		return fmt.Sprintf("read %s: %v", strictRefusedPath, err), false
	}
	refused, why, _ := strings.Cut(string(b), "\n")
	if refused != instance {
		// Another instance was refused; this one ran clean.
		if err := root.Remove(strictRefusedPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.Log.Warn("remove the refusal of another instance", "path", strictRefusedPath, "error", err.Error())
		}
		return "", false
	}
	return fmt.Sprintf("refused before for instance %s, whose modules do not run again: %s", instance, strings.TrimSpace(why)), false
}

// currentInstance is the instance-id the root's state is for, "" for a
// root never provisioned.
func currentInstance(root *rootfs.Root) string {
	b, err := root.ReadFile(apply.Path("data", "instance-id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// refuseHandoff records why the handoff is refused (status.json, and
// the refusal file when keep), makes it durable and takes the rescue
// path; it does not return.
func (p *PID1) refuseHandoff(root *rootfs.Root, reason string, keep bool) {
	p.Log.Error("seedinit.strict: not handing off to the real init", "reason", reason)
	if keep {
		if err := root.WriteFile(strictRefusedPath, []byte(currentInstance(root)+"\n"+reason+"\n"), 0o600, rootfs.KeepOwner); err != nil {
			p.Log.Warn("keep the refusal", "error", err.Error())
		}
	}
	if err := stages.NoteHandoffRefused(root, "seedinit.strict: the handoff to the real init was refused: "+reason); err != nil {
		p.Log.Warn("note the refusal in status.json", "error", err.Error())
	}
	if err := root.Sync(); err != nil {
		p.Log.Warn("sync", "error", err.Error())
	}
	p.reportRefusal(root)
	p.rescue(fmt.Errorf("seedinit.strict: %s", reason))
}

// reportRefusal sends the instance's report, the refusal in it, when
// its stages named a report URL: no final stage will. It holds no
// handoff (there is none), only the rescue path, for at most the
// report's budget; the network PID 1 brought up is still there.
func (p *PID1) reportRefusal(root *rootfs.Root) {
	stages.SendReport(context.Background(), root, p.reportURL, p.reportFrom, p.Log)
}
