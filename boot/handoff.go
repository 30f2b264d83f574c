package boot

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/seed/kept"
)

// handoff gives the machine to the real init; it does not return. From
// an initramfs whose root is not mounted there is nothing to hand off to:
// rescue. Otherwise it stops loading modules (stopModules), so that the
// machine holds still while it is looked at; decides the handoff from
// what PID 1 did and what the machine looks like (takeHandoffSnapshot,
// then planHandoff, which is pure: handoffplan.go), as the step "plan the
// handoff"; and carries the plan out (carryOutHandoff).
func (p *PID1) handoff() {
	log := p.logger()
	if p.Timeline == nil {
		p.Timeline = NewTimeline(p.Start, log)
	}
	if p.Initramfs && !isMountPoint(sysroot) {
		p.rescue(errors.New("the root filesystem is not mounted"))
	}
	p.step("stop loading modules", p.stopModules)
	var h handoffPlan
	if err := p.step("plan the handoff", func() error { h = planHandoff(p.takeHandoffSnapshot()); return nil }); err != nil {
		// What could not be looked at is left as it is: the steps that
		// need it fail with this error, the others (the timeline, the
		// switch, the child after the handoff) run.
		s := p.pid1Snapshot()
		s.MountsErr, s.OSNetworkErr = err, err
		h = handoffPlan{}
		if perr := safego.Run("plan the handoff from PID 1's state", func() { h = planHandoff(s) }); perr != nil {
			log.Error("handoff: no plan; going to the exec", "error", perr.Error())
		}
	}
	p.carryOutHandoff(h)
}

// carryOutHandoff runs the steps of h in their order, then execs the
// real init; it does not return. Each step is guarded: a step that fails
// or panics is logged and the next one runs, because the exec of the
// real init is what the boot must reach. The steps are these (those h
// does not list are not run, and one h lists does only what h says):
//
//  1. keepStateInTarget: the random seed for the next boot and the
//     timeline go into the target while its own filesystems (/var) are
//     still mounted and it is writable.
//  2. handNetworkToOS: what PID 1 configured live on the interfaces the
//     root's own network service brings up is taken back, so that the
//     service finds them fresh (ifupdown fails on an address already
//     there); the final stage waits for what was released.
//  3. noteLeasesToKeep: the leases the lease keeper keeps (on a root
//     without a DHCP client of its own) that are still on their NIC, and
//     the NICs it waits for, are written down for it (11).
//  4. noteFinalStageWait: status.json says what the final stage will wait
//     for (the interfaces of 2, the filesystems of 5), on the real /var,
//     in case the real init never provides it.
//  5. releaseTarget: what PID 1 mounted in the target (its fstab
//     filesystems, the API filesystems lent to commands, what modules
//     mounted) is unmounted, so that the real init finds the system as
//     its fstab expects; it comes after 1, 3 and 4, which write there.
//  6. makeAPIMountPoints: /dev, /proc, /sys and /run exist in the new
//     root, made while it is still writable: switching to a root without
//     them would fail at 9.
//  7. restoreReadOnly: with "ro" on the command line the root goes back
//     to read-only, now that nothing more is written to it.
//  8. recordTimeline in /run, which the switch carries into the new root.
//  9. switchRoot (initramfs only): the API filesystems move, the
//     initramfs is emptied, the new root becomes "/". When it fails
//     there is nothing to hand off to: rescue.
//  10. startAfterHandoff: a child that outlives the exec waits for the
//     real init to set the system up, then, from an initramfs, keeps
//     seedinit itself in the root (for `status`, `query` and `analyze`
//     on the running system) and runs the final stage.
//  11. startLeaseKeeper: another keeps the DHCP leases of 3 (see
//     leasekeeper.go), when its state was written.
//  12. stopReaping: the real init reaps its orphans from now on.
//  13. execRealInit: the first init candidate that is not seedinit itself.
//  14. rescue, when no init could be executed.
func (p *PID1) carryOutHandoff(h handoffPlan) {
	for _, step := range h.Steps {
		i := slices.IndexFunc(handoffSteps, func(d handoffStepDef) bool { return d.step == step })
		if i < 0 {
			p.logger().Error("handoff: a step the plan names has no function; skipped", "step", string(step))
			continue
		}
		d := handoffSteps[i]
		if err := p.step(d.name, func() error { return d.run(p, &h) }); err != nil && d.fatal {
			p.rescue(err)
		}
	}
	p.execRealInit()
	p.rescue(errors.New("no init could be executed"))
}

// handoffStepDef is how a step of the plan is carried out.
type handoffStepDef struct {
	step handoffStep
	// name is the step in the log and the timeline (HandoffStepPrefix).
	name string
	// fatal: when it fails there is nothing to hand off to.
	fatal bool
	run   func(p *PID1, h *handoffPlan) error
}

// handoffSteps are the steps of the handoff in the order they run, each
// calling the function it is named for with its part of the plan.
// carryOutHandoff's doc comment lists them, in this order (a test checks).
var handoffSteps = []handoffStepDef{
	{stepKeepStateInTarget, "keep the boot's state in the target", false, func(p *PID1, h *handoffPlan) error {
		if !h.KeepState {
			return nil
		}
		return p.keepStateInTarget()
	}},
	{stepHandNetworkToOS, "hand the network to the root's own service", false, func(p *PID1, h *handoffPlan) error {
		return p.handNetworkToOS(h)
	}},
	{stepNoteLeasesToKeep, "note the DHCP leases to keep", false, func(p *PID1, h *handoffPlan) error {
		return p.noteLeasesToKeep(&h.Keeper)
	}},
	{stepNoteFinalStageWait, "note what the final stage waits for", false, func(p *PID1, h *handoffPlan) error {
		return p.noteFinalStageWait(h.FinalWait)
	}},
	{stepReleaseTarget, "release the target's mounts", false, func(p *PID1, h *handoffPlan) error {
		return p.releaseTarget(h.Mounts)
	}},
	{stepMakeAPIMountPoints, "make the API mount points in the root", false, func(p *PID1, h *handoffPlan) error {
		return p.makeAPIMountPoints()
	}},
	{stepRestoreReadOnly, "put the root back read-only", false, func(p *PID1, h *handoffPlan) error {
		return p.restoreReadOnly(h.ReadOnly)
	}},
	{stepRecordTimeline, "record the timeline", false, func(p *PID1, h *handoffPlan) error {
		return p.recordTimeline()
	}},
	{stepSwitchRoot, "switch root", true, func(p *PID1, h *handoffPlan) error {
		return p.switchRoot()
	}},
	{stepStartAfterHandoff, "start the work after the handoff", false, func(p *PID1, h *handoffPlan) error {
		return p.startAfterHandoff(h.AfterHandoff, h.FinalWait)
	}},
	{stepStartLeaseKeeper, "start the lease keeper", false, func(p *PID1, h *handoffPlan) error {
		return p.startLeaseKeeper(h.Keeper)
	}},
	{stepStopReaping, "stop reaping", false, func(p *PID1, h *handoffPlan) error {
		return p.stopReaping()
	}},
}

// HandoffStepPrefix names the handoff's steps in the timeline.
const HandoffStepPrefix = "handoff: "

// step runs one step of the handoff, turning a panic into its error and
// logging a failure; the handoff goes on either way.
func (p *PID1) step(name string, fn func() error) error {
	var err error
	start := time.Now()
	if perr := safego.Run(name, func() { err = fn() }); perr != nil {
		err = perr
	}
	// The steps up to "record the timeline" are in timeline.json.
	p.Timeline.Record(HandoffStepPrefix+name, start, time.Since(start))
	if err != nil {
		p.logger().Warn("handoff step failed; going on", "step", name, "error", err.Error())
	}
	return err
}

// pid1Snapshot is the part of the handoff's snapshot that is PID 1's own
// state, read without a look at the machine.
func (p *PID1) pid1Snapshot() handoffSnapshot {
	return handoffSnapshot{
		Initramfs:    p.Initramfs,
		Target:       p.targetDir(),
		Disabled:     p.Opts.Disable,
		ReadOnly:     p.Opts.ReadOnly,
		RemountedRW:  p.remountedRW,
		DHCP:         p.Opts.DHCP,
		SeedSaved:    p.seedSaved,
		KeepsSelf:    p.keepsSelfAfterHandoff(),
		Released:     p.released,
		Reaping:      p.Reaper != nil,
		MountsBefore: p.mountsBefore,
		LiveNet:      p.liveNet,
		Ephemeral:    p.ephemeral,
		LiveLeases:   p.liveLeases,
		LiveLeases6:  p.liveLeases6,
	}
}

// takeHandoffSnapshot is what the handoff is decided from: PID 1's state
// and, where it matters, the machine: the mount table when PID 1 mounted
// in the target, and the root's network service, the links and their
// addresses when it brought a network up.
func (p *PID1) takeHandoffSnapshot() handoffSnapshot {
	s := p.pid1Snapshot()
	if s.MountsBefore != nil && !s.Released {
		s.TargetMount, s.Mounts, s.MountsErr = targetMounts(s.Target)
	}
	if s.LiveNet != nil || len(s.Ephemeral) > 0 {
		s.OSNetwork, s.HasOSNetwork, s.OSNetworkErr = findOSNetwork(s.Target)
		s.Links = lookAtLinks(s.LiveNet, s.Ephemeral, s.LiveLeases, s.LiveLeases6)
		s.MissingNICs, s.MissingErr = live.Missing(s.LiveNet)
	}
	return s
}

// targetMounts reads the id of dir's mount and the mount table.
func targetMounts(dir string) (top uint64, table []mountEntry, err error) {
	top, err = mountID(dir)
	if err != nil {
		return 0, nil, fmt.Errorf("identify the mount at %s: %w", dir, err)
	}
	table, err = readMountTable()
	if err != nil {
		return 0, nil, err
	}
	return top, table, nil
}

// keepStateInTarget saves what the next boot and `seedinit analyze` want
// from this one into the target while it is still writable and whole: a
// fresh random seed and the timeline.
func (p *PID1) keepStateInTarget() error {
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	if err := saveRandomSeed(root, machineIdentity()); err != nil {
		errs = append(errs, fmt.Errorf("save the random seed: %w", err))
	}
	// Only where seedinit has kept state before: a root it never
	// provisioned gets no /var/lib/cloud from a timeline.
	if root.Exists("/var/lib/cloud/data") {
		if err := root.WriteFile("/var/lib/cloud/data/seedinit-timeline.json", p.Timeline.JSON(), 0o644, rootfs.KeepOwner); err != nil {
			errs = append(errs, fmt.Errorf("keep the timeline: %w", err))
		}
	}
	if err := root.Sync(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// apiDirs are the API filesystems: lent to commands in the target during
// provisioning, moved into it at the switch.
var apiDirs = []string{"/dev", "/proc", "/sys", "/run"}

func isAPIDir(rel string) bool {
	return slices.ContainsFunc(apiDirs, func(d string) bool { return rel == d || strings.HasPrefix(rel, d+"/") })
}

// noteFinalStageWait says in status.json what the final stage will wait
// for (f), written to the real /var while it is still mounted: if the
// real init never makes the root writable or never mounts them,
// status.json says why the final stage has not run.
func (p *PID1) noteFinalStageWait(f finalWaitPlan) error {
	if f.Err != nil {
		return f.Err
	}
	if !f.Note {
		return nil
	}
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	defer root.Close()
	return stages.NoteFinalStageWait(root, FinalStageWaitReason(f.Mounts, f.Network))
}

// FinalStageWaitReason is what status.json says while the final stage
// waits for the real init.
func FinalStageWaitReason(mounts, network []string) string {
	r := "the real init: PID 1 no longer seedinit, the root writable"
	if len(mounts) > 0 {
		r += ", " + strings.Join(mounts, ", ") + " mounted"
	}
	if len(network) > 0 {
		r += ", then " + strings.Join(network, ", ") + " up (at most " + NetworkWait.String() + ")"
	}
	return r
}

// releaseTarget flushes the target's filesystems and unmounts what PID 1
// mounted below it (m.Unmount, deepest first): the real init mounts its
// filesystems itself. Nothing more may be written to the target after.
func (p *PID1) releaseTarget(m mountPlan) error {
	if !m.Release {
		return nil
	}
	p.released = true
	if err := syncMounts(p.targetDir()); err != nil {
		p.logger().Warn("flush the target's filesystems", "error", err.Error())
	}
	if m.Err != nil {
		return m.Err
	}
	res := unmountAll(p.targetDir(), m.Unmount, ownedBy(p.Reaper), p.logger())
	if len(res.taken) > 0 {
		p.logger().Info("target's mounts released for the real init", "unmounted", strings.Join(res.taken, " "))
	}
	return errors.Join(res.errs...)
}

// makeAPIMountPoints creates /dev, /proc, /sys and /run in the new root
// for SwitchRoot to move the API filesystems onto. A minimal root may
// lack them, and once it is read-only they cannot be made.
func (p *PID1) makeAPIMountPoints() error {
	root, err := rootfs.Open(sysroot)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, d := range apiDirs {
		if fi, err := root.Stat(d); err == nil && fi.IsDir() {
			continue
		}
		if err := root.MkdirAll(d, 0o755, rootfs.Owner{UID: 0, GID: 0}); err != nil {
			errs = append(errs, err)
			continue
		}
		p.logger().Info("made a mount point the root lacked", "dir", d)
	}
	return errors.Join(errs...)
}

// restoreReadOnly puts the root at dir ("" none) back to read-only, as
// the command line asks: the real init expects the root as the kernel
// would have mounted it, and remounts it itself after its checks.
func (p *PID1) restoreReadOnly(dir string) error {
	if dir == "" {
		return nil
	}
	if err := syncFS(dir); err != nil {
		return err
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dir, err)
	}
	return nil
}

// recordTimeline writes the timeline where `seedinit analyze` reads it.
func (p *PID1) recordTimeline() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(TimelinePath, p.Timeline.JSON(), 0o644)
}

// switchRoot makes the provisioned root "/" (SwitchRoot).
func (p *PID1) switchRoot() error {
	return SwitchRoot(sysroot, p.logger())
}

// stopReaping leaves the orphans to the real init.
func (p *PID1) stopReaping() error {
	p.Reaper.Stop()
	return nil
}

// KeptBinary is where seedinit keeps itself in the root for the running
// system when it ran from an initramfs, whose copy the switch deletes:
// on the disk, since Debian mounts /run noexec; LinkedBinary puts it on
// the PATH.
const (
	KeptBinary   = "/var/lib/seedinit/seedinit"
	LinkedBinary = "/usr/local/bin/seedinit"
)

// keepsSelfAfterHandoff says whether the child started after the switch
// keeps this program in the root: it ran from an initramfs, whose copy
// the switch deletes. The copy (12 MB written and flushed, a third of a
// second of a slow machine's CPU) is nothing the real init needs, so the
// boot does not wait for it.
func (p *PID1) keepsSelfAfterHandoff() bool {
	return p.Initramfs && !p.Opts.Disable
}

// KeepSelf copies the program self (this one, from an initramfs) into
// rootDir (KeptBinary, linked from LinkedBinary), unless the root has a
// seedinit of its own on its PATH. It is written again only when it
// differs: the same size and the same first 64 KiB, which hold Go's build
// ID, are the same build.
func KeepSelf(rootDir string, self *os.File, log *slog.Logger) error {
	root, err := rootfs.Open(rootDir)
	if err != nil {
		return err
	}
	defer root.Close()
	if found, ok := apply.LookPath(root, "seedinit"); ok {
		if dest, err := root.Readlink(found); err != nil || dest != KeptBinary {
			log.Debug("the root has its own seedinit; not keeping a copy", "path", found)
			return nil
		}
	}
	st, err := self.Stat()
	if err != nil {
		return err
	}
	// Everyone may run it (status, query): its directory is searchable,
	// as an older seedinit, which kept only the random seed there, did
	// not make it. The seed itself stays 0600.
	dir := path.Dir(KeptBinary)
	if err := root.MkdirAll(dir, 0o755, rootfs.Owner{UID: 0, GID: 0}); err != nil {
		return err
	}
	if fi, err := root.Stat(dir); err == nil && fi.Mode().Perm() != 0o755 {
		if err := root.Chmod(dir, 0o755); err != nil {
			return err
		}
	}
	if sameBuild(root, KeptBinary, self, st.Size()) {
		return nil
	}
	if err := root.WriteFileWith(KeptBinary, 0o755, rootfs.Owner{UID: 0, GID: 0}, func(f *os.File) error {
		_, err := io.Copy(f, io.NewSectionReader(self, 0, st.Size()))
		return err
	}); err != nil {
		return fmt.Errorf("keep seedinit in the root: %w", err)
	}
	if fi, err := root.Stat(path.Dir(LinkedBinary)); err == nil && fi.IsDir() && !root.Exists(LinkedBinary) {
		if err := root.Symlink(KeptBinary, LinkedBinary); err != nil {
			log.Warn("put seedinit on the PATH", "link", LinkedBinary, "error", err.Error())
		}
	}
	if err := root.Sync(); err != nil {
		return fmt.Errorf("keep seedinit in the root: %w", err)
	}
	log.Info("seedinit kept in the root for the running system", "path", KeptBinary)
	return nil
}

// KeepRunningSelf is KeepSelf for this process's own executable: what
// PID 1's child after the handoff keeps, run from the initramfs's copy
// that the switch deleted.
func KeepRunningSelf(rootDir string, log *slog.Logger) error {
	self, err := os.Open(samefile.SelfExe)
	if err != nil {
		return fmt.Errorf("keep seedinit in the root: %w", err)
	}
	defer self.Close()
	return KeepSelf(rootDir, self, log)
}

// sameBuild reports whether name in root is the build self is (size
// bytes): samefile.SameBuild, the size and the head that holds Go's build
// ID, not every byte. A file not even of self's size is not opened.
func sameBuild(root *rootfs.Root, name string, self *os.File, size int64) bool {
	fi, err := root.Stat(name)
	if err != nil || fi.Size() != size {
		return false
	}
	f, err := root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	same, err := samefile.SameBuild(f, self)
	return err == nil && same
}

// startAfterHandoff starts a child that outlives the exec of the real
// init (it keeps its PID; the real init inherits it as a child) and, once
// that init has set the system up (what f says is back), keeps this
// program in the root (a.KeepSelf) and runs the final stage (a.Final).
// Nothing it does can delay the boot.
func (p *PID1) startAfterHandoff(a afterHandoffPlan, f finalWaitPlan) error {
	stage := "final"
	if !a.Final {
		stage = "none"
	}
	args := []string{"run", "--stage", stage, "--after-handoff", "--quiet", "--root", "/"}
	if a.Final {
		args = append(args, "--seed", kept.Dir)
	}
	if a.KeepSelf {
		args = append(args, "--keep-self")
	}
	if len(f.Mounts) > 0 {
		args = append(args, "--wait-for-mounts", strings.Join(f.Mounts, ","))
	}
	if len(f.Network) > 0 {
		args = append(args, "--wait-for-network", strings.Join(f.Network, ","))
	}
	cmd := exec.Command(samefile.SelfExe, args...)
	cmd.Stdout, cmd.Stderr = p.childConsole(), p.childConsole()
	cmd.Env = handoffEnv(p.ownCertDir) // it runs in the real root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// At the lowest priority until it has kept seedinit and the real init
	// has set the system up (run --after-handoff takes the normal one
	// back): nothing it does before may delay the real init's start.
	if err := startNiced(cmd, backgroundNice); err != nil {
		return fmt.Errorf("start %s %s: %w", samefile.SelfExe, strings.Join(args, " "), err)
	}
	if a.Final {
		p.logger().Info("final stage will run after the handoff", "pid", cmd.Process.Pid, "waits_for", FinalStageWaitReason(f.Mounts, f.Network))
	} else {
		p.logger().Info("seedinit will be kept in the root after the handoff", "pid", cmd.Process.Pid, "waits_for", FinalStageWaitReason(f.Mounts, nil))
	}
	return nil
}

// initCandidates are the inits to try, in order: seedinit.init= or init=,
// then the usual places.
func (p *PID1) initCandidates() []string {
	var out []string
	if p.Opts.Init != "" {
		out = append(out, p.Opts.Init)
	}
	for _, i := range defaultInits {
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out
}

// execRealInit execs the first candidate that exists and is not seedinit
// itself; it returns only when none could be executed. A candidate that
// is seedinit (init=/sbin/seedinit on a usrmerge root, where /sbin is
// /usr/sbin; /sbin/init replaced by seedinit) would start this boot over
// and over, so it is skipped, by the file's identity.
func (p *PID1) execRealInit() {
	log := p.logger()
	for _, init := range p.initCandidates() {
		err := safego.Run("exec "+init, func() {
			self, err := samefile.Program(init, p.self)
			switch {
			case errors.Is(err, os.ErrNotExist):
				log.Debug("no init here", "init", init)
				return
			case err != nil:
				log.Warn("cannot tell whether this init is seedinit itself; skipped", "init", init, "error", err.Error())
				return
			case self:
				log.Info("skipped an init that is seedinit itself", "init", init)
				return
			}
			argv := append([]string{init}, p.Opts.InitArgs...)
			log.Info("handing off", "init", init, "after", time.Since(p.Start).Round(time.Millisecond), "peak_rss_kib", peakRSSKiB())
			// What is still queued for the console and the kernel log dies
			// with the exec: it gets a moment, not more. Then the kernel
			// limits /dev/kmsg's writers again, as the real init expects.
			p.flushOutputs()
			if p.restoreKmsg != nil {
				if err := p.restoreKmsg(); err != nil {
					fmt.Fprintf(p.childConsole(), "seedinit: %v\n", err)
				}
			}
			err = unix.Exec(init, argv, handoffEnv(p.ownCertDir))
			log.Error("exec init", "init", init, "error", err.Error())
		})
		if err != nil {
			log.Error("exec init", "init", init, "error", err.Error())
		}
	}
}

// rescue is the end when there is nothing to hand off to: a shell on the
// console when asked for and present, else a message and a reboot. It
// never returns, and a panic in it still ends in the reboot.
func (p *PID1) rescue(cause error) {
	defer rebootForever()
	safego.Run("rescue", func() {
		log := p.logger()
		log.Error("cannot boot", "error", cause.Error())
		if p.Opts.Rescue == "shell" {
			for _, sh := range []string{"/bin/sh", "/bin/busybox"} {
				if _, err := os.Stat(sh); err == nil {
					log.Info("starting a rescue shell; exit it to reboot", "shell", sh)
					p.flushOutputs()
					c := exec.Command(sh)
					c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
					c.Run()
					break
				}
			}
		}
		log.Error("rebooting in 10 seconds")
		p.flushOutputs()
	})
}

// outputsFlushWait bounds the last flush of PID 1's outputs before its
// exec or reboot: a console that does not drain must not stop either.
const outputsFlushWait = 2 * time.Second

// flushOutputs gives the console and the kernel log outputsFlushWait to
// take what is queued for them.
func (p *PID1) flushOutputs() {
	if p.outputs.queues != nil {
		p.outputs.flush(outputsFlushWait)
	}
}

// childConsole is the console for a child that outlives the handoff: the
// console itself, not PID 1's queue, which ends with PID 1's exec.
func (p *PID1) childConsole() io.Writer {
	if p.consoleFile != nil {
		return p.consoleFile
	}
	return p.Console
}

func rebootForever() {
	recover()
	time.Sleep(10 * time.Second)
	syncBounded(rebootSyncWait)
	for {
		unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
		time.Sleep(time.Second)
	}
}

// openSelf opens this program's executable, kept to recognise it among
// the init candidates after the switch (the initramfs's copy is deleted
// then). Close-on-exec: the real init does not inherit it.
func openSelf() *os.File {
	for _, p := range []string{samefile.SelfExe, os.Args[0]} {
		if f, err := os.Open(p); err == nil {
			return f
		}
	}
	return nil
}
