package disk

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctlBLKPG is _IO(0x12, 105); x/sys/unix has the argument types but not
// the request number.
const ioctlBLKPG = 0x1269

// BLKPG does one BLKPG ioctl on the block device f: op is
// unix.BLKPG_ADD_PARTITION, _DEL_ or _RESIZE_; offsets in bytes.
func BLKPG(f *os.File, op int32, pno int, start, length int64) error {
	part := unix.BlkpgPartition{Start: start, Length: length, Pno: int32(pno)}
	arg := unix.BlkpgIoctlArg{
		Op:      op,
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

// resizeKernelPartition is BLKPG_RESIZE_PARTITION: the kernel's view of
// partition pno changes size live, mounted or not. Offsets in bytes.
func resizeKernelPartition(f *os.File, pno int, start, length int64) error {
	return BLKPG(f, unix.BLKPG_RESIZE_PARTITION, pno, start, length)
}

// addKernelPartition is BLKPG_ADD_PARTITION (what partx -a does).
func addKernelPartition(f *os.File, pno int, start, length int64) error {
	return BLKPG(f, unix.BLKPG_ADD_PARTITION, pno, start, length)
}

// syncKernelPartition makes the kernel's partition partnum of dev match the
// table after a grow. It returns a note for the log; a kernel that has no
// such partition is not an error (it will read the table at the next boot
// or partx), a kernel that disagrees on the start is.
func syncKernelPartition(h Host, dev *File, partnum int, res Result) (string, error) {
	disk, err := h.BlockDevice(unix.Major(dev.rdev), unix.Minor(dev.rdev))
	if err != nil {
		return "", err
	}
	parts, err := h.partitionsOf(disk)
	if err != nil {
		return "", err
	}
	ss := uint64(res.SectorSize)
	start, size := res.Start*ss, res.NewSize*ss
	for _, p := range parts {
		if p.Partition != partnum {
			continue
		}
		if p.Start*512 != start {
			return "", fmt.Errorf("the kernel has partition %d (%s) at byte %d but the table at byte %d: not resizing it live, reboot to re-read the table",
				partnum, p.Name, p.Start*512, start)
		}
		if p.Size*512 == size {
			return fmt.Sprintf("kernel already sees %s with %d bytes", p.Name, size), nil
		}
		if err := resizeKernelPartition(dev.f, partnum, int64(start), int64(size)); err != nil {
			return "", fmt.Errorf("tell the kernel %s is now %d bytes (BLKPG_RESIZE_PARTITION): %w", p.Name, size, err)
		}
		after, err := h.BlockDevice(p.Major, p.Minor)
		if err != nil {
			return "", err
		}
		if after.Size*512 != size {
			return "", fmt.Errorf("tell the kernel %s is now %d bytes: it still reports %d", p.Name, size, after.Size*512)
		}
		return fmt.Sprintf("kernel told %s is now %d bytes", p.Name, size), nil
	}
	return fmt.Sprintf("the kernel has no partition %d on %s; it sees the new size after partx -u or a reboot", partnum, disk.Name), nil
}
