package boot

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/disktest"

	"github.com/seedinit/seedinit/internal/testenv"
)

// A daemon that a bootcmd started keeps a log open on /var. Unmounting
// /var at the handoff failed with EBUSY and fell back to a lazy unmount:
// the filesystem vanished from the mount table but stayed alive, its
// block device claimed, and Debian's checkfs (fsck -p) found it "in use"
// and dropped to sulogin. PID 1 must end the processes it started that
// hold the filesystem, then unmount it for real; what it cannot end
// (a process that is not its own) leaves the filesystem mounted where it
// is, which fsck -M and mount -a accept, never detached.
func TestReleaseEndsOwnHoldersAndNeverDetaches(t *testing.T) {
	disktest.NeedLoop(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		testenv.Skip(t, "needs mkfs.ext4 (e2fsprogs)")
	}
	for _, tc := range []struct {
		name string
		ours bool
	}{{"started by seedinit", true}, {"not seedinit's", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "var.img")
			if out, err := exec.Command("mkfs.ext4", "-q", "-F", img, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mkfs.ext4: %v\n%s", err, out)
			}
			dev := disktest.AttachLoop(t, img)
			rootDir := filepath.Join(dir, "root")
			varDir := filepath.Join(rootDir, "var")
			if err := os.MkdirAll(varDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount(rootDir, rootDir, "", unix.MS_BIND, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(rootDir, unix.MNT_DETACH) })
			before, err := takeMountSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount(dev, varDir, "ext4", 0, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(varDir, unix.MNT_DETACH) })

			// A command that leaves a daemon behind with a log open on
			// /var, in the command's own session, as HostSystem starts it.
			r := NewReaper()
			pidFile := filepath.Join(dir, "daemon.pid")
			cmd := exec.Command("sh", "-c", "exec 3>>"+varDir+"/daemon.log; sleep 300 </dev/null >/dev/null 2>&1 & echo $! >"+pidFile)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			start := cmd.Start
			if tc.ours {
				start = func() error { return r.Start(cmd) }
			}
			if err := start(); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			r.Done(cmd)
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			daemon, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
			// The shell's background child is still "sh" until it has
			// exec'd sleep: wait for that (a loaded machine ran the check
			// between the two), so the holder the log names is the daemon.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				comm, _ := os.ReadFile("/proc/" + strconv.Itoa(daemon) + "/comm")
				if strings.TrimSpace(string(comm)) == "sleep" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the daemon (pid %d) is %q, not sleep, after 10 s", daemon, comm)
				}
			}

			var logged strings.Builder
			log := slog.New(slog.NewTextHandler(&logged, nil))
			res := unmountNewBelow(rootDir, before, ownedBy(r), log)
			t.Logf("released %q, kept %q, errors %v\n%s", res.taken, res.kept, res.errs, logged.String())

			mounted := isMountPoint(varDir)
			claimed := deviceClaimed(dev)
			if tc.ours {
				if !slices.Contains(res.taken, "/var") || mounted || claimed {
					t.Errorf("/var held by seedinit's own daemon: released %q, still mounted %v, device claimed %v; want the daemon ended and /var unmounted for real", res.taken, mounted, claimed)
				}
				if alive(daemon) {
					t.Errorf("the daemon holding /var (pid %d) still runs", daemon)
				}
				return
			}
			if !mounted {
				t.Errorf("/var held by a process seedinit did not start is no longer mounted where it was (detached: device claimed %v); want it left mounted", claimed)
			}
			if !slices.Contains(res.kept, "/var") || !strings.Contains(logged.String(), "sleep") {
				t.Errorf("kept %q; the log does not say /var stays mounted because sleep holds it:\n%s", res.kept, logged.String())
			}
			if !alive(daemon) {
				t.Errorf("a process seedinit did not start (pid %d) was ended", daemon)
			}
		})
	}
}

// deviceClaimed reports whether a filesystem still holds dev: an
// exclusive open fails, as fsck's does.
func deviceClaimed(dev string) bool {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return false
	}
	return errors.Is(err, unix.EBUSY)
}

// alive reports whether pid is a running process, not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// unmountNewBelow is the handoff's release of what was mounted below dir
// since before, as planHandoff decides it from the mount table now.
func unmountNewBelow(dir string, before mountSnapshot, o ownership, log *slog.Logger) releaseResult {
	top, table, err := targetMounts(dir)
	if err != nil {
		return releaseResult{errs: []error{err}}
	}
	m := planMounts(handoffSnapshot{Target: dir, MountsBefore: before, Mounts: table, TargetMount: top})
	return unmountAll(dir, m.Unmount, o, log)
}
