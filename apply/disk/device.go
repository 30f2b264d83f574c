// Package disk grows partitions and filesystems the way cloud-utils'
// growpart and cloud-init's cc_growpart/cc_resizefs do, without running any
// external tool: it reads and rewrites GPT and MBR partition tables itself,
// tells the kernel about the new size with BLKPG, and grows mounted ext4,
// XFS and btrfs filesystems with the kernel's online-resize ioctls. It also
// finds the block device behind a mount point or a root= spec from
// /proc/self/mountinfo, sysfs and the filesystems' own superblocks.
package disk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is the raw I/O a partition-table grow needs. It is small on
// purpose: tests run the GPT and MBR arithmetic on plain image files (or
// wrappers that fail on cue) without root.
type Device interface {
	io.ReaderAt
	io.WriterAt
	// Size is the device's size in bytes.
	Size() int64
	// SectorSize is the logical sector size in bytes (512 or 4096).
	SectorSize() int
	// Sync makes written data durable.
	Sync() error
}

// File is a Device over an image file or a block device node.
type File struct {
	f          *os.File
	name       string
	size       int64
	sectorSize int
	// block is true for a block device node; only those have a kernel view
	// of their partitions that BLKPG updates.
	block bool
	rdev  uint64
}

// OpenFile opens an image file or block device for a grow. Block devices
// are locked (flock LOCK_EX, as systemd's block-device locking convention
// asks) so udev does not probe the disk halfway through a rewrite. Image
// files use 512-byte sectors unless they hold a GPT at 4096.
func OpenFile(name string, writable bool) (*File, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("open disk %s: %w", name, err)
	}
	d := &File{f: f, name: name}
	if err := d.init(); err != nil {
		f.Close()
		return nil, fmt.Errorf("open disk %s: %w", name, err)
	}
	if d.block && writable {
		if err := lockExclusive(f, 10*time.Second); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock disk %s: %w", name, err)
		}
	}
	return d, nil
}

func (d *File) init() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.f.Fd()), &st); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		d.block = true
		d.rdev = uint64(st.Rdev)
		size, err := ioctlGetUint64(d.f, unix.BLKGETSIZE64)
		if err != nil {
			return fmt.Errorf("BLKGETSIZE64: %w", err)
		}
		ss, err := unix.IoctlGetInt(int(d.f.Fd()), unix.BLKSSZGET)
		if err != nil {
			return fmt.Errorf("BLKSSZGET: %w", err)
		}
		d.size, d.sectorSize = int64(size), ss
	case unix.S_IFREG:
		d.size = st.Size
		d.sectorSize = guessImageSectorSize(d.f)
	default:
		return errors.New("not a block device or regular file")
	}
	if d.sectorSize < 512 || d.sectorSize > 65536 || d.sectorSize&(d.sectorSize-1) != 0 {
		return fmt.Errorf("unusable logical sector size %d", d.sectorSize)
	}
	return nil
}

// guessImageSectorSize finds 4Kn images: their GPT header sits at byte 4096.
func guessImageSectorSize(r io.ReaderAt) int {
	sig := make([]byte, 8)
	if _, err := r.ReadAt(sig, 512); err == nil && bytes.Equal(sig, gptSignature[:]) {
		return 512
	}
	if _, err := r.ReadAt(sig, 4096); err == nil && bytes.Equal(sig, gptSignature[:]) {
		return 4096
	}
	return 512
}

func ioctlGetUint64(f *os.File, req uintptr) (uint64, error) {
	var v uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(&v)))
	if errno != 0 {
		return 0, errno
	}
	return v, nil
}

func lockExclusive(f *os.File, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *File) ReadAt(p []byte, off int64) (int, error)  { return d.f.ReadAt(p, off) }
func (d *File) WriteAt(p []byte, off int64) (int, error) { return d.f.WriteAt(p, off) }
func (d *File) Size() int64                              { return d.size }
func (d *File) SectorSize() int                          { return d.sectorSize }
func (d *File) Sync() error                              { return d.f.Sync() }

// Name is the path the device was opened as.
func (d *File) Name() string { return d.name }

// IsBlock reports whether the device is a block device node.
func (d *File) IsBlock() bool { return d.block }

// Close releases the device (and its lock).
func (d *File) Close() error { return d.f.Close() }

// readFull reads exactly len(p) bytes at off; a short device is an error
// that names the offset.
func readFull(dev Device, p []byte, off int64) error {
	n, err := dev.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d bytes at byte %d: %w", len(p), off, err)
}
