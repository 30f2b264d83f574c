// Package disktest attaches image files to loop devices for tests that
// need a kernel block device.
//
// Partitions added with BLKPG outlive a loop device's detach (the kernel
// drops them only for devices attached with partition scanning), so a test
// that leaves one behind makes the next user of that loop device, in any
// package, fail with EBUSY. A partition's delete also fails with EBUSY
// while anything holds it open, as another package's label scan does for a
// moment. So every attach here clears what an earlier user left, every
// detach deletes what the test added, both retry a busy partition, and the
// tests of all packages take their loop devices one at a time.
package disktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// lockPath serializes loop-device tests across the packages go test runs
// at once.
const lockPath = "/tmp/seedinit-loop-tests.lock"

// ioctlBLKPG is BLKPG from linux/blkpg.h; x/sys/unix has the structures
// but not the request number.
const ioctlBLKPG = 0x1269

var (
	lockMu    sync.Mutex
	lockFile  *os.File
	lockUsers int
)

// NeedLoop skips t unless it runs as root on a machine with loop devices
// and losetup.
func NeedLoop(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root for loop devices")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.Skipf(t, "loop devices are unavailable: %v", err)
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		testenv.Skip(t, "losetup (util-linux) is not installed")
	}
}

// AttachLoop attaches img to a free loop device with no partitions and
// returns its node. Cleanups delete the partitions the test added and
// detach the device, even when the test fails.
func AttachLoop(t testing.TB, img string) string {
	t.Helper()
	NeedLoop(t)
	if err := lock(); err != nil {
		t.Fatalf("lock %s: %v", lockPath, err)
	}
	t.Cleanup(unlock)
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		testenv.Skipf(t, "cannot attach a loop device: %v: %s", err, out)
	}
	loop := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if err := DropPartitions(loop); err != nil {
			t.Errorf("%v (the next user of %s will find it)", err, loop)
		}
		if out, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", loop, err, out)
		}
	})
	if err := DropPartitions(loop); err != nil {
		t.Fatalf("%s carries a partition an earlier user left: %v", loop, err)
	}
	return loop
}

// DropPartitions deletes every partition the kernel knows on dev, waiting
// up to five seconds for one that something still holds open.
func DropPartitions(dev string) error {
	name := filepath.Base(dev)
	parts, err := filepath.Glob(filepath.Join("/sys/block", name, name+"p*", "partition"))
	if err != nil || len(parts) == 0 {
		return err
	}
	f, err := os.Open(dev)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // deleted since the glob
		}
		pno, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			err = deletePartition(f, pno)
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, unix.ENXIO) {
			return fmt.Errorf("BLKPG_DEL_PARTITION %s %d: %w", dev, pno, err)
		}
	}
	return nil
}

func deletePartition(f *os.File, pno int) error {
	part := unix.BlkpgPartition{Pno: int32(pno)}
	arg := unix.BlkpgIoctlArg{
		Op:      unix.BLKPG_DEL_PARTITION,
		Datalen: int32(unsafe.Sizeof(part)),
		Data:    (*byte)(unsafe.Pointer(&part)),
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), ioctlBLKPG, uintptr(unsafe.Pointer(&arg)))
	runtime.KeepAlive(&part)
	runtime.KeepAlive(f)
	if errno != 0 {
		return errno
	}
	return nil
}

// lock takes the cross-package lock for the first loop device this test
// process holds; a test attaching several devices holds it once.
func lock() error {
	lockMu.Lock()
	defer lockMu.Unlock()
	if lockUsers == 0 {
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return err
		}
		lockFile = f
	}
	lockUsers++
	return nil
}

func unlock() {
	lockMu.Lock()
	defer lockMu.Unlock()
	lockUsers--
	if lockUsers == 0 {
		lockFile.Close() // releases the flock
		lockFile = nil
	}
}
