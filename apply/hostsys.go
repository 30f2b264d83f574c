package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// ProcessStarter starts a child and forgets it after its Wait.
type ProcessStarter interface {
	Start(*exec.Cmd) error
	Done(*exec.Cmd)
}

// HostSystem is the real System: it changes the running kernel's state when
// the target is "/" and runs commands chrooted into any other target.
type HostSystem struct {
	Root *rootfs.Root
	// Booting says the target is the root this kernel is booting into
	// (PID 1 working on /sysroot): the kernel's state is the target's even
	// though the target is not "/" yet.
	Booting bool
	// Procs, when set, starts and forgets children: PID 1's reaper, so
	// that it never reaps a command before that command's Wait does.
	Procs ProcessStarter
	// BeforeCommands, when set, is called once, before the first command
	// starts: PID 1 loads the filesystems' modules there, which a
	// command's mount would find missing (an initramfs has no modprobe
	// for the kernel to ask), and which a boot that runs no command never
	// pays for.
	BeforeCommands func()
	beforeOnce     sync.Once

	// Log, when set, hears what a command did that its exit status does not say.
	Log *slog.Logger

	pendingPower *PowerRequest
}

// Live reports whether the kernel's state belongs to the target.
func (h *HostSystem) Live() bool { return h.Booting || h.Root.IsHostRoot() }

// SetHostname sets the kernel's hostname; refused for another root.
func (h *HostSystem) SetHostname(name string) error {
	if !h.Live() {
		return fmt.Errorf("set kernel hostname %q: the target %s is not the running system", name, h.Root.Dir())
	}
	if err := unix.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("set kernel hostname %q: %w", name, err)
	}
	return nil
}

// searchPath is the PATH of baseEnv, where bare command names are looked
// up inside the target.
var searchPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// LookPath finds an executable by name on the target's PATH, as
// exec.LookPath does on the host's (cloud-init's subp.which); a name with
// a slash is checked where it is.
func LookPath(root *rootfs.Root, name string) (string, bool) {
	if strings.Contains(name, "/") {
		fi, err := root.Stat(name)
		return name, err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
	}
	for _, dir := range searchPath {
		p := path.Join(dir, name)
		if fi, err := root.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// baseEnv is the environment commands get; cloud-init's subp passes its
// own environment on, which in a boot is as minimal as this.
var baseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"LANG=C.UTF-8",
	"TERM=linux",
}

// commandEnv is a command's environment: baseEnv; on the running system
// the PATH seedinit itself was given, which is the OS's own (cloud-init's
// subp passes its environment on; u-root's init puts its commands in
// /bbin, on no standard PATH, and a runcmd there finds none without it);
// then the command's own variables. Later entries win, in exec as in
// pathDirs. A chrooted target gets the standard PATH, as does PID 1,
// which the kernel starts without one.
func commandEnv(live bool, own []string) []string {
	env := append([]string{}, baseEnv...)
	if p := os.Getenv("PATH"); live && p != "" {
		env = append(env, "PATH="+p)
	}
	return append(env, own...)
}

// start runs c to its end, through Procs when PID 1 reaps orphans.
func (h *HostSystem) start(c *exec.Cmd) error {
	if h.BeforeCommands != nil {
		h.beforeOnce.Do(h.BeforeCommands)
	}
	if h.Procs == nil {
		return c.Run()
	}
	if err := h.Procs.Start(c); err != nil {
		return err
	}
	defer h.Procs.Done(c)
	return c.Wait()
}

// Run runs cmd inside the target. Commands in a target that is not "/"
// need root (for chroot), and every command needs the program inside the
// target with the interpreter of its #! line or its ELF loader; otherwise
// the error wraps ErrSkipped so the module reports a skip, not a failure.
func (h *HostSystem) Run(ctx context.Context, cmd Command) error {
	if len(cmd.Argv) == 0 {
		return errors.New("run: empty command")
	}
	prog := cmd.Argv[0]
	chroot := !h.Root.IsHostRoot()
	if chroot {
		if os.Geteuid() != 0 {
			return fmt.Errorf("run %s: %w: running commands in target %s needs root (for chroot)", prog, ErrSkipped, h.Root.Dir())
		}
	}
	env := commandEnv(!chroot, cmd.Env)
	dirs := pathDirs(env)
	if !strings.Contains(prog, "/") {
		// A bare name is looked up on the target's PATH, never the host's.
		found, ok := lookPathIn(h.Root, prog, dirs)
		if !ok {
			return fmt.Errorf("run %s: %w: no %s on the PATH of target %s", prog, ErrSkipped, prog, h.Root.Dir())
		}
		prog = found
	} else if !h.Root.Exists(prog) {
		return fmt.Errorf("run %s: %w: %s does not exist in target %s", prog, ErrSkipped, prog, h.Root.Dir())
	}
	// exec would fail with a bare "no such file or directory" when what
	// is missing is not prog but its interpreter or loader, and a module
	// would report that as a failure never retried.
	if err := checkInterpreters(h.Root, prog, cmd.Dir, dirs); err != nil {
		return fmt.Errorf("run %s: %w", prog, err)
	}
	c := exec.CommandContext(ctx, prog, cmd.Argv[1:]...)
	c.Env = env
	c.Dir = cmd.Dir
	if c.Dir == "" {
		c.Dir = "/"
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if chroot {
		c.SysProcAttr.Chroot = h.Root.Dir()
	}
	// The command's own children must not outlive a cancelled module.
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	// Once it is cancelled, Wait gives up on the process after the grace
	// too: nothing here waits without a bound.
	c.WaitDelay = OutputGrace
	var out *commandOutput
	if cmd.Output != nil {
		var err error
		if out, err = newCommandOutput(c, cmd.Output); err != nil {
			return fmt.Errorf("run %s: %w", prog, err)
		}
	}
	err := h.start(c)
	if out != nil {
		if held := out.finish(); held != "" {
			fmt.Fprintf(cmd.Output, "\nseedinit: stopped reading this command's output %s after it exited: %s keeps it open\n", OutputGrace, held)
			if h.Log != nil {
				h.Log.Warn("a command exited but a background process it started keeps its output open; not waiting for it", "command", prog, "held_by", held, "exit", exitStatus(c, err))
			}
		}
	}
	if err != nil {
		// %w keeps the *exec.ExitError: callers read the exit code (a
		// power_state condition's 1 means "do not").
		return fmt.Errorf("run %s: %w", prog, err)
	}
	return nil
}

// OutputGrace is how long a command's output is still read once the
// command itself has exited. Past it, what keeps the output open is a
// process the command left running in the background ("daemon &"), whose
// output nobody may wait for: PID 1 would never reach the handoff.
//
// Such a process is left running: it is the user's (cloud-init's bootcmd
// under systemd leaves it too). It outlives the handoff, the real init
// inheriting it, unless it holds a filesystem PID 1 must give back to the
// real init (see boot's releaseTarget). Once seedinit stops reading, what
// it writes to that output fails (EPIPE, SIGPIPE): a daemon that logs
// must be started with its output redirected, as the README says.
const OutputGrace = 2 * time.Second

// commandOutput is a command's stdout and stderr as a pipe that seedinit
// reads itself, rather than exec's, so that it knows whether it stopped
// reading because the output ended or because a background process of
// the command kept it open.
type commandOutput struct {
	r, w   *os.File
	copied chan struct{}
}

func newCommandOutput(c *exec.Cmd, dst io.Writer) (*commandOutput, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make a pipe for the output: %w", err)
	}
	o := &commandOutput{r: r, w: w, copied: make(chan struct{})}
	c.Stdout, c.Stderr = w, w
	go func() {
		defer close(o.copied)
		io.Copy(dst, r)
	}()
	return o, nil
}

// finish is called once the command was waited for: it closes this
// process's end of the pipe, reads on for OutputGrace, and then stops,
// naming what still held the output ("" when it ended in time).
func (o *commandOutput) finish() string {
	o.w.Close()
	select {
	case <-o.copied:
		o.r.Close()
		return ""
	case <-time.After(OutputGrace):
	}
	held := pipeHolders(o.r)
	// Closing the read end ends the copy (the pipe is in the poller);
	// the copy is waited for so that the caller's writer is its own again.
	o.r.Close()
	<-o.copied
	if held == "" {
		held = "a background process"
	}
	return held
}

// pipeHolders names the processes that hold the write end of the pipe r
// reads ("sleep (pid 123), a background process" style), for the log.
func pipeHolders(r *os.File) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		return ""
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	self := os.Getpid()
	procs, _ := os.ReadDir("/proc")
	var names []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + p.Name() + "/fd")
		for _, fd := range fds {
			if dest, _ := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); dest == want {
				comm, _ := os.ReadFile("/proc/" + p.Name() + "/comm")
				names = append(names, fmt.Sprintf("background process %s (pid %d)", strings.TrimSpace(string(comm)), pid))
				break
			}
		}
		if len(names) >= 5 {
			break
		}
	}
	return strings.Join(names, ", ")
}

// exitStatus is how a command ended, for the log.
func exitStatus(c *exec.Cmd, err error) string {
	if c.ProcessState != nil {
		return c.ProcessState.String()
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}
