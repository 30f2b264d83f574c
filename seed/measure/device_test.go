package measure

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketDevice is a Device over one end of a socket pair, the other end
// playing the TPM: a non-blocking descriptor whose answer comes later.
func socketDevice(t *testing.T, timeout time.Duration) (*Device, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return &Device{fd: fds[0], path: "/dev/tpmrm0", timeout: timeout}, fds[1]
}

// An answer that comes after the command's write returned is waited
// for, not taken for the end of the file.
func TestDeviceWaitsForALateAnswer(t *testing.T) {
	d, tpm := socketDevice(t, 10*time.Second)
	answer := []byte{0x80, 0x01, 0, 0, 0, 10, 0, 0, 0, 0}
	go func() {
		buf := make([]byte, 512)
		unix.Read(tpm, buf)
		time.Sleep(300 * time.Millisecond)
		unix.Write(tpm, answer)
	}()
	got, err := d.Transact([]byte("command"))
	if err != nil || !bytes.Equal(got, answer) {
		t.Fatalf("Transact = %x, %v", got, err)
	}
}

// A TPM that never answers holds nobody past the bound, and the error
// says the command reached it.
func TestDeviceBoundsTheWait(t *testing.T) {
	d, tpm := socketDevice(t, 200*time.Millisecond)
	go func() {
		buf := make([]byte, 512)
		unix.Read(tpm, buf)
	}()
	err := Extend(d, PCR, [32]byte{})
	if err == nil || !strings.Contains(err.Error(), "no answer from /dev/tpmrm0 within 200ms") || !Reached(err) {
		t.Fatalf("Extend: %v (reached %v)", err, Reached(err))
	}
}

// A command that could not be written never reached the TPM.
func TestDeviceSendError(t *testing.T) {
	d, tpm := socketDevice(t, time.Second)
	unix.Close(tpm)
	err := Extend(d, PCR, [32]byte{})
	if err == nil || Reached(err) {
		t.Fatalf("Extend to a closed TPM: %v (reached %v)", err, Reached(err))
	}
}
