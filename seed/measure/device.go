package measure

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Device is a TPM 2.0 character device (/dev/tpmrm0, /dev/tpm0), whose
// every answer is waited for, within a bound.
//
// It is opened non-blocking, so that a TPM that never answers cannot hold
// PID 1: Linux then queues each command and answers it asynchronously,
// and a read before the answer is ready returns 0 bytes. Go's os.File
// takes those 0 bytes for the end of the file (the "read
// TPM2_PCR_Extend's answer: EOF" of a loaded machine, after the TPM had
// extended the PCR), so the descriptor is used raw: poll(2) for the
// answer, then read it. On kernels before 4.20, which answer in write(2)
// and have no poll for the device, poll returns at once and the answer
// is there.
type Device struct {
	fd      int
	path    string
	timeout time.Duration
}

// AnswerTimeout bounds the wait for one answer: a PCR extend takes
// milliseconds, a busy TPM's longest commands a couple of seconds.
const AnswerTimeout = 20 * time.Second

// OpenDevice opens a TPM device; timeout bounds each answer
// (AnswerTimeout when 0).
func OpenDevice(path string, timeout time.Duration) (*Device, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if timeout <= 0 {
		timeout = AnswerTimeout
	}
	return &Device{fd: fd, path: path, timeout: timeout}, nil
}

// Close closes the device.
func (d *Device) Close() error { return unix.Close(d.fd) }

// Transact sends cmd and waits for its whole answer. A *SendError means
// the command never reached the TPM.
func (d *Device) Transact(cmd []byte) ([]byte, error) {
	n, err := retryEINTR(func() (int, error) { return unix.Write(d.fd, cmd) })
	if err != nil {
		return nil, &SendError{Err: fmt.Errorf("write %s: %w", d.path, err)}
	}
	if n != len(cmd) {
		return nil, &SendError{Err: fmt.Errorf("write %s: %d of %d bytes", d.path, n, len(cmd))}
	}
	deadline := time.Now().Add(d.timeout)
	resp := make([]byte, maxResponseSize)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("no answer from %s within %s", d.path, d.timeout)
		}
		fds := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, fmt.Errorf("wait for %s's answer: %w", d.path, err)
		}
		if fds[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
			return nil, fmt.Errorf("wait for %s's answer: poll events %#x", d.path, fds[0].Revents)
		}
		n, err := retryEINTR(func() (int, error) { return unix.Read(d.fd, resp) })
		switch {
		case err == nil && n > 0:
			return resp[:n], nil
		case err == nil || errors.Is(err, unix.EAGAIN):
			// Not ready yet (a poll that returned early, or a kernel
			// without poll for the device): wait a little and look again.
			time.Sleep(min(10*time.Millisecond, time.Until(deadline)))
		default:
			return nil, fmt.Errorf("read %s's answer: %w", d.path, err)
		}
	}
}

func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}
