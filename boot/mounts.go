package boot

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// Mounter is the seam for mount(2) and friends.
type Mounter interface {
	Mount(source, target, fstype string, flags uintptr, data string) error
}

// SysMounter calls the kernel.
type SysMounter struct{}

// Mount calls mount(2).
func (SysMounter) Mount(source, target, fstype string, flags uintptr, data string) error {
	return unix.Mount(source, target, fstype, flags, data)
}

// EarlyMount is one of PID 1's own mounts.
type EarlyMount struct {
	Source, Target, FSType string
	Flags                  uintptr
	Data                   string
	Mode                   os.FileMode
}

// EarlyMounts are what an initramfs PID 1 needs before anything else.
var EarlyMounts = []EarlyMount{
	{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, "", 0o555},
	{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV, "", 0o555},
	{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755", 0o755},
	{"devpts", "/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "gid=5,mode=0620,ptmxmode=0666", 0o755},
	{"tmpfs", "/run", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=0755", 0o755},
}

// MountEarly mounts the table; one already mounted (EBUSY, as on a real
// root where the kernel mounted devtmpfs) is fine. Only /proc and /sys are
// fatal: without them nothing else works.
func MountEarly(m Mounter, mounts []EarlyMount) error {
	var errs []error
	for _, e := range mounts {
		if err := os.MkdirAll(e.Target, e.Mode); err != nil {
			errs = append(errs, fmt.Errorf("mount %s: %w", e.Target, err))
			continue
		}
		err := m.Mount(e.Source, e.Target, e.FSType, e.Flags, e.Data)
		if err == nil || errors.Is(err, unix.EBUSY) {
			continue
		}
		err = fmt.Errorf("mount %s on %s: %w", e.FSType, e.Target, err)
		if e.Target == "/proc" || e.Target == "/sys" {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// bindAPIFilesystems lends the initramfs's /dev, /proc, /sys and /run to
// the target for the time of provisioning: the commands that run chrooted
// there (bootcmd, mkfs for disk_setup, swapon and mount for mounts,
// package installs) expect a whole system. The handoff takes them away
// again before it moves the originals in.
func (p *PID1) bindAPIFilesystems() error {
	if err := p.makeAPIMountPoints(); err != nil {
		return err
	}
	root, err := rootfs.Open(sysroot)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, d := range apiDirs {
		dst, err := root.HostPath(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.Mounter.Mount(d, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			errs = append(errs, fmt.Errorf("bind %s into the target: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
