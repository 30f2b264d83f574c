package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Online-resize ioctl numbers (linux/ext4.h, xfs_fs.h, btrfs.h); x/sys/unix
// does not carry them.
const (
	ioctlExt4ResizeFS   = 0x40086610 // _IOW('f', 16, __u64)
	ioctlXFSGeometry    = 0x8100587e // _IOR('X', 126, struct xfs_fsop_geom)
	ioctlXFSGeometryV1  = 0x80705864 // _IOR('X', 100, struct xfs_fsop_geom_v1)
	ioctlXFSGrowFSData  = 0x4010586e // _IOW('X', 110, struct xfs_growfs_data)
	ioctlBtrfsResize    = 0x50009403 // _IOW(0x94, 3, struct btrfs_ioctl_vol_args)
	capSysResource      = 24
	capSysAdmin         = 21
	btrfsVolArgsNameLen = 4088
)

// ErrUnsupportedFS marks filesystems seedinit cannot grow online.
var ErrUnsupportedFS = errors.New("cannot be grown online by seedinit (ext2/3/4, xfs and btrfs can)")

// FSResult is what GrowFS did. Sizes are the filesystem's own view in
// bytes (data blocks for ext4 and XFS, statfs total for btrfs).
type FSResult struct {
	MountPoint string
	FSType     string
	Device     string
	OldBytes   uint64
	NewBytes   uint64
	Changed    bool
}

// String is a one-line summary for logs and `seedinit resizefs`.
func (r FSResult) String() string {
	if !r.Changed {
		return fmt.Sprintf("NOCHANGE: %s filesystem on %s (%s) is %d bytes; it fills its device", r.FSType, r.MountPoint, r.Device, r.OldBytes)
	}
	return fmt.Sprintf("CHANGED: %s filesystem on %s (%s) grew from %d to %d bytes", r.FSType, r.MountPoint, r.Device, r.OldBytes, r.NewBytes)
}

// GrowFS grows the filesystem mounted at mountPoint to fill its device,
// online, with the kernel's resize ioctls (no resize2fs, xfs_growfs or
// btrfs tools).
func GrowFS(mountPoint string) (FSResult, error) { return DefaultHost.GrowFS(mountPoint) }

// GrowFS is the package-level GrowFS on h.
func (h Host) GrowFS(mountPoint string) (FSResult, error) {
	m, err := h.MountOf(mountPoint)
	if err != nil {
		return FSResult{MountPoint: mountPoint}, fmt.Errorf("grow filesystem on %s: %w", mountPoint, err)
	}
	res := FSResult{MountPoint: m.MountPoint, FSType: m.FSType, Device: m.Source}
	switch m.FSType {
	case "ext2", "ext3", "ext4":
		err = h.growExt(m, &res)
	case "xfs":
		err = h.growXFS(m, &res)
	case "btrfs":
		err = h.growBtrfs(m, &res)
	default:
		err = fmt.Errorf("%s filesystem %w", m.FSType, ErrUnsupportedFS)
	}
	if err != nil {
		return res, fmt.Errorf("grow %s filesystem on %s (%s): %w", m.FSType, m.MountPoint, m.Source, err)
	}
	return res, nil
}

// deviceBytes is the size of the device a mount sits on, from sysfs.
func (h Host) deviceBytes(m Mount) (uint64, BlockDev, error) {
	b, err := h.BlockDevice(m.Major, m.Minor)
	if err != nil {
		return 0, b, err
	}
	return b.Size * 512, b, nil
}

// hasCapability reads the effective capability set of this process.
func (h Host) hasCapability(bit uint) (bool, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "self", "status"))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, err
			}
			return caps&(1<<bit) != 0, nil
		}
	}
	return false, errors.New("no CapEff line")
}

// explainEPERM names the capability the kernel asked for when an ioctl
// was refused.
func (h Host) explainEPERM(err error, ioctl string, bit uint, capName, why string) error {
	if !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%s: %w", ioctl, err)
	}
	has, cerr := h.hasCapability(bit)
	switch {
	case cerr != nil:
		return fmt.Errorf("%s: %w: %s needs %s (could not read this process's capabilities: %v)", ioctl, err, why, capName, cerr)
	case !has:
		return fmt.Errorf("%s: %w: %s needs %s, which this process does not have (a container or sandbox dropped it)", ioctl, err, why, capName)
	}
	return fmt.Errorf("%s: %w: %s needs %s, which this process has; a security module may have refused it", ioctl, err, why, capName)
}

func openMountDir(mp string) (*os.File, error) {
	return os.OpenFile(mp, os.O_RDONLY|unix.O_DIRECTORY, 0)
}

// extSuper is what growExt needs from an ext2/3/4 superblock.
type extSuper struct {
	blockSize uint64
	blocks    uint64
}

func readExtSuper(r interface {
	ReadAt([]byte, int64) (int, error)
}) (extSuper, error) {
	sb, ok := readAt(r, 1024, 1024)
	if !ok {
		return extSuper{}, errors.New("read the ext superblock: short read")
	}
	le := binary.LittleEndian
	if le.Uint16(sb[56:58]) != 0xEF53 {
		return extSuper{}, errors.New("no ext superblock magic")
	}
	logBS := le.Uint32(sb[24:28])
	if logBS > 6 {
		return extSuper{}, fmt.Errorf("ext block size 2^(10+%d) out of range", logBS)
	}
	s := extSuper{blockSize: 1024 << logBS, blocks: uint64(le.Uint32(sb[4:8]))}
	if le.Uint32(sb[0x60:])&0x80 != 0 { // 64bit
		s.blocks |= uint64(le.Uint32(sb[0x150:])) << 32
	}
	return s, nil
}

func (h Host) growExt(m Mount, res *FSResult) error {
	devBytes, b, err := h.deviceBytes(m)
	if err != nil {
		return err
	}
	f, done, err := h.openDev(b)
	if err != nil {
		return fmt.Errorf("open %s: %w", b.Name, err)
	}
	sb, err := readExtSuper(f)
	done()
	if err != nil {
		return fmt.Errorf("read %s: %w", b.Name, err)
	}
	res.OldBytes = sb.blocks * sb.blockSize
	res.NewBytes = res.OldBytes
	newBlocks := devBytes / sb.blockSize
	if newBlocks <= sb.blocks {
		return nil
	}
	dir, err := openMountDir(m.MountPoint)
	if err != nil {
		return err
	}
	defer dir.Close()
	// The growth is committed at once, on a filesystem with nothing else
	// pending: a power cut in the seconds after the ioctl, before the
	// journal's commit, left the next boot's completed growth with a
	// group's backup descriptor block in use but free in its bitmap
	// (make crash, cuts at resizefs+7 and +12). Best effort: an error
	// here changes nothing the ioctl does.
	unix.Syncfs(int(dir.Fd()))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ioctlExt4ResizeFS, uintptr(unsafe.Pointer(&newBlocks)))
	if errno != 0 {
		return h.explainEPERM(errno, "EXT4_IOC_RESIZE_FS", capSysResource, "CAP_SYS_RESOURCE", "online ext4 growth")
	}
	unix.Syncfs(int(dir.Fd()))
	f, done, err = h.openDev(b)
	if err != nil {
		return fmt.Errorf("re-open %s: %w", b.Name, err)
	}
	after, err := readExtSuper(f)
	done()
	if err != nil {
		return fmt.Errorf("re-read %s: %w", b.Name, err)
	}
	res.NewBytes = after.blocks * after.blockSize
	res.Changed = res.NewBytes != res.OldBytes
	return nil
}

// xfsGeometry is the prefix of struct xfs_fsop_geom that growXFS needs;
// the ioctl fills the whole 256-byte v5 structure.
type xfsGeometry struct {
	BlockSize  uint32
	RTExtSize  uint32
	AGBlocks   uint32
	AGCount    uint32
	LogBlocks  uint32
	SectSize   uint32
	InodeSize  uint32
	IMaxPct    uint32
	DataBlocks uint64
	_          [256 - 40]byte
}

func xfsGeometryOf(dir *os.File) (xfsGeometry, error) {
	var g xfsGeometry
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ioctlXFSGeometry, uintptr(unsafe.Pointer(&g)))
	if errno == unix.ENOTTY || errno == unix.EINVAL {
		// Kernels before 5.1 know only the 112-byte v1 structure, a
		// prefix of the v5 one.
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ioctlXFSGeometryV1, uintptr(unsafe.Pointer(&g)))
	}
	if errno != 0 {
		return g, fmt.Errorf("XFS_IOC_FSGEOMETRY: %w", errno)
	}
	if g.BlockSize == 0 {
		return g, errors.New("XFS_IOC_FSGEOMETRY: block size 0")
	}
	return g, nil
}

func (h Host) growXFS(m Mount, res *FSResult) error {
	devBytes, _, err := h.deviceBytes(m)
	if err != nil {
		return err
	}
	dir, err := openMountDir(m.MountPoint)
	if err != nil {
		return err
	}
	defer dir.Close()
	g, err := xfsGeometryOf(dir)
	if err != nil {
		return err
	}
	bs := uint64(g.BlockSize)
	res.OldBytes = g.DataBlocks * bs
	res.NewBytes = res.OldBytes
	newBlocks := devBytes / bs
	if newBlocks <= g.DataBlocks {
		return nil
	}
	arg := struct {
		NewBlocks uint64
		IMaxPct   uint32
		_         uint32
	}{NewBlocks: newBlocks, IMaxPct: g.IMaxPct}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ioctlXFSGrowFSData, uintptr(unsafe.Pointer(&arg)))
	runtime.KeepAlive(&arg)
	if errno != 0 {
		return h.explainEPERM(errno, "XFS_IOC_FSGROWFSDATA", capSysAdmin, "CAP_SYS_ADMIN", "online XFS growth")
	}
	after, err := xfsGeometryOf(dir)
	if err != nil {
		return err
	}
	res.NewBytes = after.DataBlocks * bs
	res.Changed = res.NewBytes != res.OldBytes
	return nil
}

func statfsBytes(mp string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mp, &st); err != nil {
		return 0, fmt.Errorf("statfs: %w", err)
	}
	return st.Blocks * uint64(st.Bsize), nil
}

// growBtrfs asks btrfs to grow device 1 to its maximum, as `btrfs
// filesystem resize max` does; a filesystem that already fills its device
// is left as it is by the kernel.
func (h Host) growBtrfs(m Mount, res *FSResult) error {
	before, err := statfsBytes(m.MountPoint)
	if err != nil {
		return err
	}
	res.OldBytes, res.NewBytes = before, before
	dir, err := openMountDir(m.MountPoint)
	if err != nil {
		return err
	}
	defer dir.Close()
	var args struct {
		FD   int64
		Name [btrfsVolArgsNameLen]byte
	}
	copy(args.Name[:], "max")
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, dir.Fd(), ioctlBtrfsResize, uintptr(unsafe.Pointer(&args)))
	runtime.KeepAlive(&args)
	if errno != 0 {
		return h.explainEPERM(errno, "BTRFS_IOC_RESIZE", capSysAdmin, "CAP_SYS_ADMIN", "online btrfs growth")
	}
	after, err := statfsBytes(m.MountPoint)
	if err != nil {
		return err
	}
	res.NewBytes = after
	res.Changed = after != before
	return nil
}
