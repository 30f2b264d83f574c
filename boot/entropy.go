package boot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// A root keeps randomness from its last boot for the next one: PID 1
// starts with a pool the kernel may not have initialised yet, and host
// keys and DHCP want one. Crediting that randomness (telling the kernel it
// is entropy) is only right when nobody else has seen the bytes: a seed
// baked into a golden image is the same on every clone. So seedinit
// credits only its own file, and only when it was written on this machine
// (tagged with a hash of the machine's DMI product UUID); anything else
// (an image's seed, systemd's file, a machine without an identity) is
// mixed into the pool, which never hurts, and not credited.

// RandomSeedFile is seedinit's own seed; SystemdRandomSeedFile is
// systemd's, which appliances built on Debian may carry: it is mixed in
// and never deleted, since it is systemd's to manage.
const (
	RandomSeedFile        = "/var/lib/seedinit/random-seed"
	SystemdRandomSeedFile = "/var/lib/systemd/random-seed"
)

// randomSeedSize is the randomness saved for the next boot: 512 bytes, as
// systemd-random-seed keeps.
const randomSeedSize = 512

// seedMagic starts seedinit's seed file; the machine tag follows it.
const seedMagic = "seedinit-random-seed-v1\n"

// machineIdentity is this machine's tag for seed files: a hash of the DMI
// product UUID (hypervisors give each VM its own), or nil when there is
// none to trust (no DMI, or a placeholder UUID).
func machineIdentity() []byte {
	b, err := os.ReadFile("/sys/class/dmi/id/product_uuid")
	if err != nil {
		return nil
	}
	return machineTag(string(b))
}

func machineTag(uuid string) []byte {
	u := strings.ToLower(strings.TrimSpace(uuid))
	hex := strings.ReplaceAll(u, "-", "")
	if len(hex) != 32 || strings.Trim(hex, "0") == "" || strings.Trim(hex, "f") == "" {
		return nil
	}
	for _, c := range hex {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return nil
		}
	}
	sum := sha256.Sum256([]byte("seedinit random seed\x00" + u))
	return sum[:]
}

// encodeSeed and decodeSeed are seedinit's seed file: the magic, the
// 32-byte machine tag (zeros without an identity), the randomness.
func encodeSeed(tag, data []byte) []byte {
	out := append([]byte(seedMagic), make([]byte, sha256.Size)...)
	copy(out[len(seedMagic):], tag)
	return append(out, data...)
}

func decodeSeed(b []byte) (tag, data []byte, ok bool) {
	rest, found := bytes.CutPrefix(b, []byte(seedMagic))
	if !found || len(rest) <= sha256.Size {
		return nil, b, false
	}
	return rest[:sha256.Size], rest[sha256.Size:], true
}

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

// The pool's two doors, seams for the tests.
var (
	creditEntropy = creditToPool
	mixEntropy    = mixIntoPool
)

// creditToPool adds data to the kernel's pool and credits it
// (RNDADDENTROPY, root only).
func creditToPool(data []byte) error {
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

// mixIntoPool stirs data into the pool without crediting it: a write to
// /dev/urandom.
func mixIntoPool(data []byte) error {
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(data)
	return err
}

// seedEntropyFromRoot feeds the root's saved seeds to the pool: seedinit's
// own, written on this machine, is removed and then credited (removed
// first, so that the same bytes are never credited twice: a fresh seed is
// saved at the handoff); every other seed is only mixed in.
func seedEntropyFromRoot(log *slog.Logger, root *rootfs.Root, machine []byte) {
	if b, err := root.ReadFile(RandomSeedFile); err == nil && len(b) > 0 {
		tag, data, ours := decodeSeed(b)
		switch {
		case ours && machine != nil && bytes.Equal(tag, machine):
			if err := root.Remove(RandomSeedFile); err != nil {
				log.Warn("random seed file not removed, so only mixed in", "file", RandomSeedFile, "error", err.Error())
				mixEntropy(data)
				break
			}
			if err := creditEntropy(data); err != nil {
				log.Warn("random seed file not credited", "file", RandomSeedFile, "error", err.Error())
				break
			}
			log.Info("random pool seeded and credited", "file", RandomSeedFile, "bytes", len(data), "ready", PoolReady())
		default:
			// Another machine's (a golden image), an older format, or no
			// identity to check it against.
			if err := mixEntropy(data); err != nil {
				log.Warn("random seed file not mixed in", "file", RandomSeedFile, "error", err.Error())
				break
			}
			log.Info("random seed mixed in, not credited: not written on this machine", "file", RandomSeedFile, "bytes", len(data))
		}
	}
	if b, err := root.ReadFile(SystemdRandomSeedFile); err == nil && len(b) > 0 {
		if err := mixEntropy(b); err == nil {
			log.Info("systemd's random seed mixed in, not credited", "file", SystemdRandomSeedFile, "bytes", len(b))
		}
	}
	log.Info("random pool", "ready", PoolReady())
}

// saveRandomSeed writes a fresh seed for the next boot, tagged with this
// machine's identity, only from a ready pool: a seed from a weak pool
// would be worse than none.
func saveRandomSeed(root *rootfs.Root, machine []byte) error {
	if !PoolReady() {
		return errors.New("the random pool is not ready; no seed saved")
	}
	b := make([]byte, randomSeedSize)
	if _, err := unix.Getrandom(b, unix.GRND_NONBLOCK); err != nil {
		return fmt.Errorf("read random seed: %w", err)
	}
	if err := root.MkdirAll(path.Dir(RandomSeedFile), 0o755, rootfs.Owner{UID: 0, GID: 0}); err != nil {
		return err
	}
	return root.WriteFile(RandomSeedFile, encodeSeed(machine, b), 0o600, rootfs.Owner{UID: 0, GID: 0})
}
