package boot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply/target"
)

// RandomSeedFiles are where a root keeps randomness from its last boot:
// seedinit's own file, then systemd's, which appliances built on Debian
// may already carry.
var RandomSeedFiles = []string{"/var/lib/seedinit/random-seed", "/var/lib/systemd/random-seed"}

// randomSeedSize is what is saved for the next boot: 512 bytes, as
// systemd-random-seed keeps.
const randomSeedSize = 512

// PoolReady reports, without blocking, whether the kernel's random pool is
// initialised: getrandom with GRND_NONBLOCK fails with EAGAIN until it is.
// Go's crypto/rand would block PID 1 instead (a test boot here stalled for
// two minutes without a hardware RNG).
func PoolReady() bool {
	var b [1]byte
	_, err := unix.Getrandom(b[:], unix.GRND_NONBLOCK)
	return !errors.Is(err, unix.EAGAIN)
}

// waitPoolReady polls PoolReady until ctx ends.
func waitPoolReady(ctx context.Context) bool {
	for !PoolReady() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// creditEntropy adds data to the kernel's pool and credits it
// (RNDADDENTROPY, root only): used for a seed file this machine wrote
// itself at its last boot, which is as trustworthy as the disk.
func creditEntropy(data []byte) error {
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// struct rand_pool_info { int entropy_count; int buf_size; __u32 buf[]; }
	req := make([]byte, 8+len(data))
	*(*int32)(unsafe.Pointer(&req[0])) = int32(len(data) * 8)
	*(*int32)(unsafe.Pointer(&req[4])) = int32(len(data))
	copy(req[8:], data)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.RNDADDENTROPY, uintptr(unsafe.Pointer(&req[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// seedEntropyFromRoot credits the saved seed of the root at dir, if any,
// and removes it so the same bytes are never credited twice (a clone of
// the image would otherwise start from the same pool state); a fresh seed
// is saved at the handoff.
func seedEntropyFromRoot(log *slog.Logger, root *target.Root) {
	for _, name := range RandomSeedFiles {
		b, err := root.ReadFile(name)
		if err != nil || len(b) == 0 {
			continue
		}
		// Removed before it is credited: a seed that cannot be removed
		// would be credited again at every boot.
		if err := root.Remove(name); err != nil {
			log.Warn("random seed file not removed, so not credited", "file", name, "error", err.Error())
			continue
		}
		if err := creditEntropy(b); err != nil {
			log.Warn("random seed file not credited", "file", name, "error", err.Error())
			continue
		}
		log.Info("random pool seeded", "file", name, "bytes", len(b), "ready", PoolReady())
		return
	}
	log.Info("no random seed file in the root", "ready", PoolReady())
}

// saveRandomSeed writes a fresh seed for the next boot, only from a ready
// pool: a seed from a weak pool would be worse than none.
func saveRandomSeed(root *target.Root) error {
	if !PoolReady() {
		return errors.New("the random pool is not ready; no seed saved")
	}
	b := make([]byte, randomSeedSize)
	if _, err := unix.Getrandom(b, unix.GRND_NONBLOCK); err != nil {
		return fmt.Errorf("read random seed: %w", err)
	}
	if err := root.MkdirAll(path.Dir(RandomSeedFiles[0]), 0o700, target.Owner{UID: 0, GID: 0}); err != nil {
		return err
	}
	return root.WriteFile(RandomSeedFiles[0], b, 0o600, target.Owner{UID: 0, GID: 0})
}
