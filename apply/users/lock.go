package users

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// lockFile is glibc's lckpwdf(3) lock, which shadow-utils (useradd,
// chpasswd, passwd) takes before it edits the account files.
const lockFile = "/etc/.pwd.lock"

// lockTimeout is lckpwdf's own patience.
const lockTimeout = 15 * time.Second

// Lock takes the target's account database lock as lckpwdf does (an fcntl
// write lock on /etc/.pwd.lock), waiting up to 15 seconds, so that a
// concurrent useradd in the target never interleaves with our rewrite.
// The returned func releases it.
func Lock(ctx context.Context, root *rootfs.Root) (func(), error) {
	if err := root.MkdirAll("/etc", 0o755, ownedBy(0, 0)); err != nil {
		return nil, fmt.Errorf("lock account database: %w", err)
	}
	// fcntl locks need a descriptor open for writing, which rootfs.Root
	// does not hand out; the path is resolved inside the root and the last
	// component is never followed.
	hostPath, err := root.HostPath(lockFile)
	if err != nil {
		return nil, fmt.Errorf("lock account database: %w", err)
	}
	f, err := os.OpenFile(hostPath, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock account database: open %s: %w", lockFile, err)
	}
	deadline := time.Now().Add(lockTimeout)
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	for {
		err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock account database: lock %s: %w", lockFile, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock account database: %s is held by another process after %s", lockFile, lockTimeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock account database: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() {
		unlock := syscall.Flock_t{Type: syscall.F_UNLCK}
		syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &unlock)
		f.Close()
	}, nil
}
