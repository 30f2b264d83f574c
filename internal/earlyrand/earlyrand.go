// Package earlyrand gives random bytes that never block, for what needs to
// be unique or unguessable but is not a key: temporary file names, password
// salts, MIME boundaries. Go's crypto/rand waits until the kernel's pool is
// initialised, which in PID 1 on a machine without a hardware RNG can be
// minutes; a temporary name must not wait for that. Keys and generated
// passwords keep crypto/rand.
package earlyrand

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Reader is an io.Reader over Read.
var Reader io.Reader = reader{}

type reader struct{}

func (reader) Read(b []byte) (int, error) {
	Read(b)
	return len(b), nil
}

// Read fills b. From an initialised pool the bytes are crypto/rand's; before
// that they are the kernel's best effort (GRND_INSECURE, or /dev/urandom on
// kernels older than 5.6), which is still unpredictable to an outsider
// though not yet credited.
func Read(b []byte) {
	for len(b) > 0 {
		n, err := getrandom(b)
		if err != nil {
			fill(b)
			return
		}
		b = b[n:]
	}
}

// getrandom takes from the initialised pool, else the insecure one.
func getrandom(b []byte) (int, error) {
	for _, flags := range []int{unix.GRND_NONBLOCK, unix.GRND_INSECURE} {
		n, err := unix.Getrandom(b, flags)
		switch {
		case err == nil && n > 0:
			return n, nil
		case errors.Is(err, unix.EINTR):
			return 0, nil
		case err == nil, errors.Is(err, unix.EAGAIN):
			continue // not initialised: try the insecure pool
		default:
			return 0, err // EINVAL (no GRND_INSECURE), ENOSYS
		}
	}
	return 0, unix.EAGAIN
}

// fill reads /dev/urandom, which never blocks; when even that is missing
// (a chroot without /dev) the bytes come from the clock and the process,
// enough for a temporary name, which is all that reaches here in practice.
func fill(b []byte) {
	if f, err := os.Open("/dev/urandom"); err == nil {
		_, err = io.ReadFull(f, b)
		f.Close()
		if err == nil {
			return
		}
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	x := uint64(ts.Nano()) ^ uint64(os.Getpid())<<32
	for i := range b {
		// xorshift64: spreads the few bits there are over the whole name.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}
