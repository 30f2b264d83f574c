package boot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// RootFinder turns a root= spec into a device node path, or says it is not
// there yet.
type RootFinder func(spec string) (string, error)

// ErrNoDevice means the device has not appeared (yet).
var ErrNoDevice = errors.New("no such device yet")

// FindDevPath resolves "/dev/..." specs; others are left to finders that
// read labels and UUIDs.
func FindDevPath(spec string) (string, error) {
	if !strings.HasPrefix(spec, "/dev/") {
		return "", fmt.Errorf("root=%s: not a /dev path", spec)
	}
	if _, err := os.Stat(spec); err != nil {
		return "", ErrNoDevice
	}
	return spec, nil
}

// WaitRoot polls find until the device is there, ctx ends, or (without
// rootwait) limit passes. The kernel's rootwait waits forever; seedinit
// waits as long as ctx allows, so a missing disk still ends in a rescue
// rather than a hang.
func WaitRoot(ctx context.Context, spec string, find RootFinder, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	delay := 10 * time.Millisecond
	for {
		dev, err := find(spec)
		if err == nil {
			return dev, nil
		}
		if !errors.Is(err, ErrNoDevice) {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("root=%s: no such device after %s", spec, limit)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("root=%s: %w", spec, ctx.Err())
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// rootFSTypes are tried in order when rootfstype= is not given.
var rootFSTypes = []string{"ext4", "xfs", "btrfs", "ext3", "ext2", "vfat", "squashfs", "iso9660"}

// MountRoot mounts dev on dir. Without fstype, the types the kernel knows
// (from /proc/filesystems) are tried in a sensible order.
func MountRoot(m Mounter, dev, dir, fstype, flags string, readOnly bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mount root %s: %w", dev, err)
	}
	var mflags uintptr
	if readOnly {
		mflags |= unix.MS_RDONLY
	}
	types := []string{fstype}
	if fstype == "" {
		types = candidateTypes()
	}
	var errs []string
	for _, t := range types {
		err := m.Mount(dev, dir, t, mflags, flags)
		if err == nil {
			return nil
		}
		errs = append(errs, t+": "+err.Error())
	}
	return fmt.Errorf("mount root %s on %s: %s", dev, dir, strings.Join(errs, "; "))
}

func candidateTypes() []string {
	known := map[string]bool{}
	if f, err := os.Open("/proc/filesystems"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 1 {
				known[fields[0]] = true
			}
		}
		f.Close()
	}
	var out []string
	for _, t := range rootFSTypes {
		if len(known) == 0 || known[t] {
			out = append(out, t)
		}
	}
	return out
}
