package boot

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/safego"
)

// PID 1 never calls sync(2) where it must go on after it: sync takes
// every block device's open mutex in turn, and a device whose open never
// returns (a CD-ROM whose backend stalls) holds its mutex for good, so
// sync(2) sleeps, uninterruptibly, for as long; and a process with such a
// thread cannot exec its real init. It flushes the filesystems it wrote
// to instead, each by syncfs(2), which touches no other device.

// syncFS flushes the filesystem that dir is on.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("flush %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("flush %s: %w", dir, err)
	}
	return nil
}

// syncMounts flushes dir's filesystem and every one mounted below it.
func syncMounts(dir string) error {
	errs := []error{syncFS(dir)}
	top, err := mountID(dir)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("identify the mount at %s: %w", dir, err))...)
	}
	table, err := readMountTable()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, m := range mountsBelow(table, top) {
		if !isVirtualFS(m.FSType) {
			errs = append(errs, syncFS(m.Point))
		}
	}
	return errors.Join(errs...)
}

// rebootSyncWait bounds the flush before a reboot or kexec.
const rebootSyncWait = 10 * time.Second

// syncBounded is sync(2) waited for at most limit, before a reboot: what
// it has not flushed by then is lost as on a power cut, and the reboot
// needs nothing more of the thread it leaves behind. It reports whether
// sync finished.
func syncBounded(limit time.Duration) bool {
	done := make(chan struct{})
	safego.Go("sync", func() {
		unix.Sync()
		close(done)
	}, nil)
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
