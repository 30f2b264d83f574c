package boot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/apply/ssh"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/boot/kmod"
	"github.com/seedinit/seedinit/internal/devprobe"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/kept"
)

// Where PID 1 keeps its things; /run moves into the real root at the
// handoff, so the final stage and `seedinit analyze` find them there.
const (
	RunDir       = "/run/seedinit"
	TimelinePath = RunDir + "/timeline.json"
	sysroot      = "/sysroot"
)

// defaultInits are tried in order when init= names none or it fails.
var defaultInits = []string{"/sbin/init", "/etc/init", "/bin/init", "/bin/sh"}

// fsModules are loaded before the first command run in the target before
// the handoff (mounts' mount -a, disk_setup's mkfs, a bootcmd), which has
// no modprobe to ask for them in an initramfs; a boot that runs none does
// not load them (a quarter of a second of a slow machine). The root's own
// filesystem is loaded by what its superblock says, before it is mounted,
// and the target's fstab entries by their type; the seeds are read
// without the kernel's filesystems.
var fsModules = []string{"fs-ext4", "fs-vfat", "fs-iso9660", "nls_cp437", "nls_iso8859-1", "nls_ascii"}

// moduleQuiet is how long the machine must be without a new device or a
// module load for its modules to be settled: a probe's devices trail the
// load that made them, and libata announces its disks after its scan.
const moduleQuiet = 100 * time.Millisecond

// moduleSettleMax bounds the wait for the devices to settle.
const moduleSettleMax = 30 * time.Second

// PID1 is one boot's state.
type PID1 struct {
	// Initramfs: "/" is an initramfs and root= names the real root, which
	// PID 1 mounts on /sysroot, provisions and switches to. Otherwise it
	// works on "/" and only execs the real init.
	Initramfs bool
	Start     time.Time
	Log       *slog.Logger
	Timeline  *Timeline
	Opts      Options
	Mounter   Mounter
	Reaper    *Reaper
	Console   io.Writer

	self *os.File // this program's executable, to know itself among the inits
	// consoleFile is the console itself, for the children that outlive
	// the handoff; PID 1's own writes go through outputs (logqueue.go).
	consoleFile *os.File
	outputs     logOutputs
	// restoreKmsg puts the kernel's rate limit on /dev/kmsg's writers
	// back, at the handoff (kmsg.go).
	restoreKmsg func() error
	remountedRW bool
	modules     *kmod.Loader // nil when the kernel has no module directory
	plug        *kmod.Plug   // loads the devices' modules until the handoff
	stopPlug    func()
	labels      *ds.EarlyLabels // the block devices' labels, read as they appear until the search
	seedSaved   bool            // the final stage has a seed to run from
	// provisionFailures are why provisioning failed, for seedinit.strict;
	// stagesErr is the stages' own failure, whose refusal is kept for
	// the instance. foundSeed: a datasource gave a seed this boot.
	provisionFailures []string
	stagesErr         error
	foundSeed         bool
	// reportURL is where the instance reports (and reportFrom what named
	// it), as PID 1's stages found it: for a handoff strict mode refuses,
	// which no final stage follows to report.
	reportURL, reportFrom string
	// localSourcesFailed are the local sources found by their probes
	// that gave no seed, as "NAME: why".
	localSourcesFailed []string
	// panics counts the panics PID 1's goroutines recovered from.
	panics     atomic.Int32
	ownCertDir string // SSL_CERT_DIR as PID 1 set it, kept from the real init
	// ephemeral are the datasource search's DHCP leases; the first one's
	// site options go to the ready report (Azure's wireserver in 245).
	ephemeral []*dhcp.Lease
	// mountsBefore are the mounts there were before PID 1 mounted the
	// target's own filesystems; what it adds below the target is taken
	// away again before the handoff. Nil: nothing was mounted.
	mountsBefore mountSnapshot
	// released: the target's mounts are taken away; nothing more may be
	// written to it.
	released bool
	// liveNet is the instance's network as PID 1 applied it live.
	liveNet *model.Network
	// liveLeases and liveLeases6 are the leases the live network config
	// took; with the ephemeral ones, what the lease keeper may keep.
	liveLeases  []*dhcp.Lease
	liveLeases6 []*dhcp.Lease6
	// liveResolvConf is resolv.conf for the network PID 1 brought up: the
	// live config's DNS or its leases', or, with no live config, the
	// search's lease's.
	liveResolvConf []byte
}

// Main is PID 1: it never returns. Whatever fails or panics, it ends in
// exec of the real init, or in a rescue shell or a reboot when there is
// no root to hand off to.
func Main(initramfs bool) {
	p := &PID1{Initramfs: initramfs, Start: time.Now(), Mounter: SysMounter{}}
	if err := safego.Run("boot", p.boot); err != nil {
		p.logger().Error("PID 1 panicked; handing off anyway", "error", err.Error())
	}
	p.handoff()
}

func (p *PID1) logger() *slog.Logger {
	if p.Log == nil {
		p.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return p.Log
}

// reportPanic is where safego reports a panic it recovered in any of PID
// 1's goroutines: the console and the kernel log, with the stack for the
// bug report.
func (p *PID1) reportPanic(e *safego.PanicError) {
	p.panics.Add(1)
	p.logger().Error("recovered from a panic; the boot goes on", "in", e.Name, "panic", fmt.Sprint(e.Value), "stack", string(e.Stack))
}

func (p *PID1) boot() {
	err := MountEarly(p.Mounter, EarlyMounts)
	if errors.Is(err, unix.EROFS) && !p.Initramfs {
		// A read-only root without /proc or /sys to mount on: make it
		// writable for the mount points; the handoff puts it back.
		if p.Mounter.Mount("", "/", "", unix.MS_REMOUNT, "") == nil {
			p.remountedRW = true
			err = MountEarly(p.Mounter, EarlyMounts)
		}
	}
	if err != nil {
		// Without /proc and /sys little below works; log and go on.
		fmt.Fprintf(os.Stderr, "seedinit: %v\n", err)
	}
	p.self = openSelf()
	p.consoleFile = setupConsole()
	level := slog.LevelInfo
	cmd := ParseCmdline(readCmdline())
	opts, optErrs := ParseOptions(cmd)
	p.Opts = opts
	if opts.Debug {
		level = slog.LevelDebug
	}
	// Neither output may hold PID 1: each is written from a bounded queue.
	var kmsg io.Writer
	if k := openKmsg(); k != nil {
		kmsg = k
	}
	var kmsgNote string
	if kmsg != nil {
		p.restoreKmsg, kmsgNote = keepAllKmsg()
	}
	p.outputs = newLogOutputs(p.consoleFile, kmsg)
	p.Console = p.outputs.console
	p.Log = slog.New(slog.NewTextHandler(p.outputs.log, &slog.HandlerOptions{Level: level}))
	if kmsgNote != "" {
		p.Log.Warn("the kernel log", "keeps", kmsgNote)
	}
	safego.SetReporter(p.reportPanic)
	// From here, block devices are probed where a stuck one can be
	// abandoned (see internal/devprobe); the handoff turns it off.
	devprobe.Enable(samefile.SelfExe, func(msg string, args ...any) { p.Log.Warn(msg, args...) })
	p.Timeline = NewTimeline(p.Start, p.Log)
	p.Reaper = NewReaper()
	safego.Go("reaper", p.Reaper.Run, nil)
	if os.Getpid() == 1 {
		handleSignals(p.Log)
	}
	p.Log.Info("seedinit starting", "version", apply.Version, "pid", os.Getpid(), "initramfs", p.Initramfs)
	for _, err := range optErrs {
		p.Log.Warn("kernel command line", "error", err.Error())
	}
	// The root's disk may need a module even when nothing is provisioned.
	// Its module loads beside the others: the root is mounted as soon as
	// its disk is there, while slower buses are still probed.
	p.Timeline.Do("kernel modules", p.startModules)
	if !opts.Disable {
		// The seed disks' labels are read while the root is mounted and
		// the other buses probed, for the search to find them read.
		p.labels = ds.StartEarlyLabels("", "")
	}
	if p.Initramfs && opts.Root == "" {
		// A u-root image or a rescue system: the initramfs is the whole
		// system, provisioned where it is.
		p.Log.Warn("no root= on the kernel command line: the initramfs is the system, provisioned in place")
		p.Initramfs = false
	}
	if p.Initramfs {
		if err := p.Timeline.Do("mount root", p.mountRoot); err != nil {
			p.rescue(err)
			return
		}
		p.ownCertDir = trustTargetCerts(sysroot)
	}
	// The target's other filesystems and the seed disks may be on any
	// bus: everything the machine has must be there from now on.
	p.Timeline.Do("kernel modules settled", p.settleModules)
	if opts.Disable {
		p.Log.Info("seedinit.disable: handing off without provisioning")
		return
	}
	if !p.Initramfs {
		p.Timeline.Do("remount root read-write", p.remountRootRW)
	}
	// Before anything reads or writes the target: its /var holds the
	// random seed and the state, its /home the keys.
	p.Timeline.Do("mount the target's own filesystems", p.mountTarget)
	if p.Initramfs {
		p.Timeline.Do("API filesystems for commands in the target", p.bindAPIFilesystems)
	}
	p.Timeline.Do("random seed", func() error {
		root, err := rootfs.Open(p.targetDir())
		if err != nil {
			return err
		}
		defer root.Close()
		seedEntropyFromRoot(p.Log, root, machineIdentity())
		return nil
	})
	p.startEarlyHostKey()
	p.runProvision(p.provision)
	if opts.Strict {
		p.enforceStrict()
	}
	if p.Opts.Kexec != "" {
		p.Timeline.Do("kexec", func() error {
			k, err := ParseKexec(p.Opts.Kexec)
			if err != nil {
				return err
			}
			// No real init follows to keep seedinit after: the kexec'd
			// kernel's boot finds it in the root.
			if p.keepsSelfAfterHandoff() && p.self != nil {
				if err := KeepSelf(p.targetDir(), p.self, p.Log); err != nil {
					p.Log.Warn("keep seedinit in the root", "error", err.Error())
				}
			}
			// The kexec is a handoff too: its state and its mounts are
			// decided as the handoff's are.
			h := planHandoff(p.takeHandoffSnapshot())
			if h.KeepState {
				p.keepStateInTarget()
			}
			// The target is let go once the kernel is read (it may be on
			// /boot). Kexec returns only on failure.
			return Kexec(p.targetDir(), k, func() { p.releaseTarget(h.Mounts) })
		})
	}
}

// mountTarget mounts the target's own local filesystems that provisioning
// writes to, noting first what was mounted before so that the handoff
// can take them away again.
func (p *PID1) mountTarget() error {
	before, err := takeMountSnapshot()
	if err != nil {
		return fmt.Errorf("nothing mounted: %w", err)
	}
	p.mountsBefore = before
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	defer root.Close()
	return p.mountTargetFilesystems(root)
}

// loadModule loads a kernel module by name or alias when the kernel has
// modules; a failure is only logged (the driver may be built in).
func (p *PID1) loadModule(name string) {
	if p.modules == nil {
		return
	}
	if err := p.modules.Load(name); err != nil {
		p.Log.Debug("module", "name", name, "error", err.Error())
	}
}

// EarlyHostKeyStep names the early RSA host key in the timeline.
const EarlyHostKeyStep = "early RSA host key"

// startEarlyHostKey starts the RSA host key the ssh module makes by
// default (seconds of a slow CPU) before the datasource is found, on a
// machine with a CPU to spare for it, when the root has never been
// provisioned (no /var/lib/cloud/instance), the boot on which the ssh
// module makes its keys. The module takes it when the config asks for an
// RSA key; a config that does not costs that spare CPU's time. On one CPU
// it would slow everything else down: the key waits for the config there.
func (p *PID1) startEarlyHostKey() {
	if runtime.NumCPU() < 2 {
		return
	}
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return
	}
	defer root.Close()
	if _, err := root.Lstat(apply.Path("instance")); err == nil {
		return
	}
	ssh.StartEarlyRSA(func(start time.Time, d time.Duration, err error) {
		p.Timeline.Record(EarlyHostKeyStep, start, d)
	})
	p.Log.Info("RSA host key started before the datasource is found", "cpus", runtime.NumCPU(), "why", "the root's first boot")
}

// loadFilesystemModules loads fsModules, those already loaded aside.
func (p *PID1) loadFilesystemModules() {
	for _, m := range fsModules {
		p.loadModule(m)
	}
}

func (p *PID1) targetDir() string {
	if p.Initramfs {
		return sysroot
	}
	return "/"
}

// startModules reads the kernel's module index and starts loading the
// modules of the devices there and of those that appear, and the
// filesystems' in the background. It returns at once.
func (p *PID1) startModules() error {
	extra := append([]string{}, p.Opts.Modules...)
	// The SMBIOS OEM strings are read from dmi_sysfs's entries: a driver
	// that no device asks for (built into Debian's kernels, a module in
	// some others).
	extra = append(extra, "dmi_sysfs")
	if p.Opts.RootFS != "" {
		extra = append(extra, "fs-"+p.Opts.RootFS)
	}
	l, plug, stop, err := startModules(p.Log, extra, func(name string, start time.Time, d time.Duration) {
		p.Timeline.Record(ModuleStepPrefix+name, start, d)
	})
	p.modules, p.plug, p.stopPlug = l, plug, stop
	return err
}

// settleModules waits until the devices' modules are loaded and the
// machine has gone quiet.
func (p *PID1) settleModules() error {
	if p.plug == nil {
		return nil
	}
	settleModules(p.Log, p.plug, p.stopPlug == nil)
	return nil
}

// stopModules stops listening for new devices and waits for the loads
// under way, which read the initramfs that switch_root is about to empty.
// The real root's own udev or mdev handles what comes later.
func (p *PID1) stopModules() error {
	p.labels.Stop()
	// No device is probed from here on; a helper stuck on one stays
	// behind, a process of its own, where it keeps nothing from the exec.
	if stalled := devprobe.Stalled(); len(stalled) > 0 {
		p.logger().Warn("devices that never answered were left out of this boot", "devices", strings.Join(stalled, " "))
	}
	devprobe.Disable()
	if p.stopPlug != nil {
		p.stopPlug()
		p.stopPlug = nil
	}
	if p.plug != nil {
		p.plug.Stop()
		if _, _, settled := p.plug.Settle(0, 5*time.Second); !settled {
			return errors.New("module loads still under way after 5 s")
		}
	}
	return nil
}

// LoadModules loads what the machine's devices need (coldplug from their
// modalias, as udev would), the filesystems of roots and seed disks, and
// extra, from /lib/modules/<release>, indexing the directory itself when
// it has no modules.dep, and waits for the machine to settle. No such
// directory is a kernel with its drivers built in: nil and no error. The
// loader is returned for later loads.
func LoadModules(log *slog.Logger, extra []string) (*kmod.Loader, error) {
	l, plug, stop, err := startModules(log, append(append([]string{}, fsModules...), extra...), nil)
	if plug != nil {
		settleModules(log, plug, stop == nil)
	}
	if stop != nil {
		stop()
	}
	return l, err
}

// startModules opens the module index and starts a Plug on the kernel's
// device events (stop ends them; nil when the kernel's events cannot be
// had, and the devices are then scanned again until none is new).
func startModules(log *slog.Logger, extra []string, onLoad func(name string, start time.Time, d time.Duration)) (*kmod.Loader, *kmod.Plug, func(), error) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, nil, nil, err
	}
	dir := filepath.Join("/lib/modules", unix.ByteSliceToString(uts.Release[:]))
	idx, err := kmod.ReadDepmod(dir)
	if err != nil {
		if _, statErr := os.Stat(dir); statErr != nil {
			log.Info("no kernel modules for this kernel; relying on built-ins", "dir", dir)
			return nil, nil, nil, nil
		}
		if idx, err = kmod.BuildIndex(dir); err != nil {
			return nil, nil, nil, err
		}
	}
	l := &kmod.Loader{Index: idx, Dir: dir, Kernel: kmod.RealKernel{}, Log: log, Loaded: onLoad}
	// Listening starts before sysfs is read, so that no device falls
	// between the two.
	events, stop, err := kmod.Uevents()
	if err != nil {
		log.Warn("kernel device events unavailable; the devices are scanned until none is new", "error", err.Error())
		events, stop = nil, nil
	}
	plug := l.NewPlug(events)
	plug.Scan("/sys")
	for _, m := range extra {
		plug.Add(m)
	}
	return l, plug, stop, nil
}

// settleModules waits for plug and logs what it loaded. Without the
// kernel's events (rescan), sysfs is read again after each quiet spell
// for the devices the loads made, a few times at most.
func settleModules(log *slog.Logger, plug *kmod.Plug, rescan bool) {
	loaded, errs, settled := plug.Settle(moduleQuiet, moduleSettleMax)
	for pass := 0; rescan && pass < 3 && plug.Scan("/sys") > 0; pass++ {
		loaded, errs, settled = plug.Settle(moduleQuiet, moduleSettleMax)
	}
	if !settled {
		log.Warn("kernel modules still loading; going on", "after", moduleSettleMax)
	}
	log.Info("kernel modules", "coldplugged", strings.Join(loaded, ","), "errors", len(errs))
	for _, e := range errs {
		log.Debug("module", "error", e.Error())
	}
}

// LoadModulesInInitramfs is LoadModules for `seedinit run` on a running
// system that is an initramfs, as u-root's init runs its uinit: nothing
// there loads drivers (no udev), and without them the seed's disk and
// the NICs never appear. Elsewhere, or for a target other than "/", the
// OS has loaded them before its init system calls seedinit, and nothing
// is done. Loading needs root.
func LoadModulesInInitramfs(log *slog.Logger, targetDir string) {
	if os.Geteuid() != 0 || !IsInitramfs() {
		return
	}
	target, errT := os.Stat(targetDir)
	root, errR := os.Stat("/")
	if errT != nil || errR != nil || !os.SameFile(target, root) {
		return
	}
	if _, err := LoadModules(log, nil); err != nil {
		log.Warn("kernel modules", "error", err.Error())
	}
}

func (p *PID1) mountRoot() error {
	if p.Opts.Root == "" {
		return errors.New("no root= on the kernel command line")
	}
	if p.Opts.RootDelay > 0 {
		time.Sleep(p.Opts.RootDelay)
	}
	limit := 30 * time.Second
	if p.Opts.RootWait {
		limit = 5 * time.Minute
	}
	dev, err := WaitRoot(context.Background(), p.Opts.Root, newRootPoller(FindRoot).Find, limit)
	if err != nil {
		return err
	}
	// Its filesystem's module, by what its superblock says, before the
	// mount (it may still be loading beside the devices' modules).
	if fstype := p.Opts.RootFS; fstype != "" {
		p.loadModule("fs-" + fstype)
	} else if fstype := probeFSType(dev); fstype != "" {
		p.loadModule("fs-" + fstype)
	}
	// Mounted read-write to provision it; put back to read-only before the
	// handoff when the command line asks for ro, as the real init expects.
	return MountRoot(p.Mounter, dev, sysroot, p.Opts.RootFS, p.Opts.RootFlags, false)
}

// probeFSType is the type of the filesystem on dev by its superblock, or
// "" when it cannot be read (in time) or is not one seedinit knows.
func probeFSType(dev string) string {
	var a fstypeAnswer
	if devprobe.Call("fstype", dev, &a) != nil {
		return ""
	}
	return a.Type
}

// probeFSTypeHere is probeFSType in this process.
func probeFSTypeHere(dev string) string {
	f, err := os.Open(dev)
	if err != nil {
		return ""
	}
	defer f.Close()
	fs, err := disk.Probe(f)
	if err != nil {
		return ""
	}
	return fs.Type
}

// remountRootRW makes "/" writable when the kernel mounted it read-only
// (its default without "rw"); handoff puts it back for the real init.
func (p *PID1) remountRootRW() error {
	var st unix.Statfs_t
	if err := unix.Statfs("/", &st); err != nil {
		return err
	}
	if st.Flags&unix.ST_RDONLY == 0 {
		return nil
	}
	if err := p.Mounter.Mount("", "/", "", unix.MS_REMOUNT, ""); err != nil {
		return fmt.Errorf("remount / read-write: %w", err)
	}
	p.remountedRW = true
	return nil
}

// runProvision runs provision as the "provision" step and notes every
// way it failed for seedinit.strict: its error, a panic in it or in any
// goroutine it started (each recovered, so the boot goes on).
func (p *PID1) runProvision(provision func() error) {
	panicsBefore := p.panics.Load()
	if err := p.Timeline.Do("provision", provision); err != nil {
		p.provisionFailed("provision: " + err.Error())
	}
	if n := p.panics.Load() - panicsBefore; n > 0 {
		p.provisionFailed(fmt.Sprintf("%d panic(s) recovered while provisioning (see the log)", n))
	}
}

// provisionFailed notes a failure for seedinit.strict.
func (p *PID1) provisionFailed(reason string) {
	p.provisionFailures = append(p.provisionFailures, reason)
}

// strictStops says whether provisioning stops before the modules: under
// seedinit.strict, a seed that failed before them (refused parts, a
// failed measurement, no copy for the final stage) runs none, so that
// the instance's modules are still to run when the boot is tried again.
func (p *PID1) strictStops() bool {
	if !p.Opts.Strict || len(p.provisionFailures) == 0 {
		return false
	}
	p.Log.Error("seedinit.strict: no module runs", "because", strings.Join(p.provisionFailures, "; "))
	return true
}

func (p *PID1) provision() error {
	root, err := rootfs.Open(p.targetDir())
	if err != nil {
		return err
	}
	defer root.Close()
	sd, err := p.findSeed(root)
	if sd == nil {
		for _, f := range p.localSourcesFailed {
			p.provisionFailed("a seed source the machine has could not be read: " + f)
		}
		p.Log.Info("no datasource found: nothing to provision", "error", fmt.Sprint(err))
		return nil
	}
	p.foundSeed = true
	// Before anything of the seed is used, the network config included:
	// from here on, sd is what the decision lets through.
	sd, decision := p.decideSeedTrust(sd)
	p.Log.Info("datasource", "name", sd.Datasource, "where", sd.Subplatform, "instance_id", sd.InstanceID)
	seedErrs, seedWarns := decision.Report()
	if decision.Refused() {
		p.provisionFailed("the seed's trust decision (" + decision.Policy + ") left parts out: " + strings.Join(seedErrs, "; "))
	}
	if err := p.measureSeed(root, sd); err != nil {
		p.Log.Error("measure the seed", "error", err.Error())
		seedErrs = append(seedErrs, err.Error())
		p.provisionFailed(err.Error())
	}
	if p.strictStops() {
		return nil
	}
	p.Timeline.Do("network config, live", func() error { return p.applyNetworkLive(sd) })
	p.writeRootResolvConf(root)
	if err := kept.Save(sd, decision); err != nil {
		p.Log.Warn("keep seed for the final stage", "error", err.Error())
		p.provisionFailed("keep the seed for the final stage: " + err.Error())
	} else {
		p.seedSaved = true
	}
	if p.strictStops() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Whatever the modules did, the instance is up: a cloud that waits for
	// word of it (Azure) is told once they are over.
	if reporter, ok := ds.ReadyReporterFor(sd); ok {
		defer p.Timeline.Do("report ready", func() error { return p.reportReady(reporter, root, sd) })
	}
	p.stagesErr = p.Timeline.Do("stages local, network, config", func() error {
		rep, err := stages.Run(ctx, stages.Options{
			Root:    root,
			Seed:    sd,
			Stages:  []apply.Stage{apply.StageLocal, apply.StageNetwork, apply.StageConfig},
			Sys:     &apply.HostSystem{Root: root, Booting: true, Procs: p.Reaper, BeforeCommands: p.loadFilesystemModules, Log: p.Log},
			Log:     p.Log,
			Console: p.Console,
			Version: apply.Version,

			SeedErrors:   seedErrs,
			SeedWarnings: seedWarns,
			SeedTrust:    decision,

			CmdlineReportURL: p.Opts.Report,
		})
		if err != nil {
			return err
		}
		p.reportURL, p.reportFrom = rep.ReportURL, rep.ReportFrom
		if errs := rep.Errors(); len(errs) > 0 {
			return fmt.Errorf("%d module error(s): %s", len(errs), strings.Join(errs, "; "))
		}
		return nil
	})
	return nil
}

// readyBudget bounds telling the cloud the instance is up: the boot goes
// on without it.
const readyBudget = 30 * time.Second

// reportReady tells the datasource's cloud that provisioning is over, for
// the clouds that want to know (Azure fails a deployment that never
// hears it).
func (p *PID1) reportReady(reporter ds.ReadyReporter, root *rootfs.Root, sd *seed.Seed) error {
	env, err := ds.HostEnv(root, p.Log)
	if err != nil {
		p.Log.Warn("datasource configuration", "error", err.Error())
	}
	if len(p.ephemeral) > 0 {
		env.DHCPSiteOptions = p.ephemeral[0].SiteOptions
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyBudget)
	defer cancel()
	return reporter.ReportReady(ctx, env, sd)
}

// peakRSSKiB is this process's peak resident memory (VmHWM), for the log.
func peakRSSKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var n int
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &n)
			return n
		}
	}
	return 0
}

func setupConsole() *os.File {
	f, err := os.OpenFile("/dev/console", os.O_RDWR, 0)
	if err != nil {
		return os.Stderr
	}
	for _, fd := range []int{0, 1, 2} {
		unix.Dup2(int(f.Fd()), fd)
	}
	return f
}

func readCmdline() string {
	b, _ := os.ReadFile("/proc/cmdline")
	return strings.TrimSpace(string(b))
}
