package ds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/devprobe"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// SysDMI reads SMBIOS fields from sysfs, each once: the firmware's
// tables do not change while the machine runs, and the sources' probes
// ask for the same fields again and again (a read of a DMI attribute
// took 1 to 2 ms of an emulated CPU).
type SysDMI struct {
	// Dir is /sys/class/dmi/id and EntriesDir /sys/firmware/dmi/entries
	// unless set.
	Dir, EntriesDir string

	mu   sync.Mutex
	read map[string]string
	oem  *[]string
}

// OEMStrings reads the SMBIOS OEM strings (type 11) once; none when the
// kernel does not show the tables' entries. A structure that cannot be
// read or parsed gives the strings before the fault, or none.
func (d *SysDMI) OEMStrings() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.oem == nil {
		dir := d.EntriesDir
		if dir == "" {
			dir = "/sys/firmware/dmi/entries"
		}
		strs, _ := readOEMStrings(dir)
		d.oem = &strs
	}
	return *d.oem
}

// Field reads one field; unreadable fields (product_serial needs root)
// are "".
func (d *SysDMI) Field(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.read[name]; ok {
		return v
	}
	v := d.readField(name)
	if d.read == nil {
		d.read = map[string]string{}
	}
	d.read[name] = v
	return v
}

func (d *SysDMI) readField(name string) string {
	dir := d.Dir
	if dir == "" {
		dir = "/sys/class/dmi/id"
	}
	if strings.ContainsAny(name, "/\x00") {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SysDevices finds block devices from sysfs and reads their labels from
// the device nodes, the way blkid would but only for ISO9660 and FAT.
type SysDevices struct {
	// SysBlock is /sys/class/block and Dev is /dev unless set.
	SysBlock string
	Dev      string
	// Early, when set, holds labels read as the devices appeared; it is
	// stopped before the list is read, and a device it read surely is
	// not read again.
	Early *EarlyLabels

	once sync.Once
	list []BlockDevice
	err  error
}

// List reads every device's label once and remembers the answer. It is
// not cut short by the context (see scan).
func (d *SysDevices) List(_ context.Context) ([]BlockDevice, error) {
	d.once.Do(func() { d.list, d.err = d.scan() })
	return d.list, d.err
}

func (d *SysDevices) scan() ([]BlockDevice, error) {
	sysBlock, dev := d.SysBlock, d.Dev
	if sysBlock == "" {
		sysBlock = "/sys/class/block"
	}
	if dev == "" {
		dev = "/dev"
	}
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, fmt.Errorf("list block devices in %s: %w", sysBlock, err)
	}
	// No deadline between devices: the search's budget is for sources
	// that do not answer, and a disk that is slow to read is still there.
	// Stopping at the budget skipped the devices after a slow one, and
	// with them a seed that was present: a cidata disk behind a disk read
	// at 2 KiB/s, or any disk of a TCG guest on a busy host, left the
	// instance unprovisioned. The list is read once per boot; a device
	// that hangs blocks its read whatever a context says.
	d.Early.Stop()
	var out []BlockDevice
	for _, e := range entries {
		name := e.Name()
		if skipDevice(name) {
			continue
		}
		probe, early := labelProbe{}, false
		if d.Early != nil {
			if id, ok := readDeviceID(sysBlock, name); ok {
				probe, early = d.Early.lookup(name, id)
			}
		}
		if !early {
			probe = readLabel(filepath.Join(dev, name))
		}
		if probe.found {
			out = append(out, probe.bd)
		}
	}
	return out, nil
}

// skipDevice says which devices are never read: floppy drives stall for
// seconds when empty (ds-identify leaves them out too), RAM disks hold no
// seed.
func skipDevice(name string) bool {
	return strings.HasPrefix(name, "fd") || strings.HasPrefix(name, "ram")
}

// labelProbe is what reading a device's label said.
type labelProbe struct {
	bd BlockDevice
	// found: a filesystem of a type ReadLabel knows is there.
	found bool
	// sure: the answer holds until the device changes (its number or
	// its size). Not sure: the node could not be opened (devtmpfs has
	// not made it yet), the drive is not ready, a read failed.
	sure bool
}

// CD-ROM drive status (linux/cdrom.h): CDROM_DRIVE_STATUS and its
// answers; a drive that answers CDS_NO_INFO or CDS_DISC_OK is read.
const (
	cdromDriveStatus = 0x5326
	cdsNoDisc        = 1
	cdsTrayOpen      = 2
	cdsDriveNotReady = 3
)

// labelAnswer is labelProbe as a device probe's answer.
type labelAnswer struct {
	Found, Sure         bool
	Path, FSType, Label string
}

func init() {
	devprobe.Handle("label", func(p string, opening func(string) bool) (any, error) {
		if !opening(filepath.Base(p)) {
			return labelAnswer{}, nil
		}
		l := probeLabelFunc(p)
		return labelAnswer{Found: l.found, Sure: l.sure, Path: l.bd.Path, FSType: l.bd.FSType, Label: l.bd.Label}, nil
	})
}

// probeLabelFunc is probeLabel; tests make it stall.
var probeLabelFunc = probeLabel

// readLabel is probeLabel where PID 1 can abandon it (internal/devprobe):
// a device that does not answer is not sure, and is left out while its
// read is stuck.
func readLabel(p string) labelProbe {
	var a labelAnswer
	if err := devprobe.Call("label", p, &a); err != nil {
		return labelProbe{}
	}
	return labelProbe{bd: BlockDevice{Path: a.Path, FSType: a.FSType, Label: a.Label}, found: a.Found, sure: a.Sure}
}

// probeLabel reads the filesystem label on the device p. It opens the
// device as blkid does (O_NONBLOCK): a CD-ROM drive then opens without a
// disc, and its status says whether there is one to read, where a plain
// open tries to close an open tray and fails the same way for an empty
// drive and one still spinning up.
func probeLabel(p string) labelProbe {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return labelProbe{}
	}
	defer f.Close()
	// Any other device or file refuses the request (ENOTTY). Its argument
	// 0, CDSL_NONE, asks for the drive's current slot as CDSL_CURRENT does.
	if status, err := unix.IoctlRetInt(int(f.Fd()), cdromDriveStatus); err == nil {
		switch status {
		case cdsNoDisc, cdsTrayOpen:
			return labelProbe{sure: true}
		case cdsDriveNotReady:
			return labelProbe{}
		}
	}
	typ, label, err := seed.ReadLabel(f)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return labelProbe{sure: true} // shorter than a boot sector
	case err != nil:
		return labelProbe{}
	case typ == "":
		return labelProbe{sure: true}
	}
	return labelProbe{bd: BlockDevice{Path: p, FSType: typ, Label: label}, found: true, sure: true}
}

// Open opens a device node read-only.
func (d *SysDevices) Open(p string) (io.ReaderAt, int64, io.Closer, error) {
	return openFile(p)
}

// FileDevices are image files standing in for devices: tests, and
// `seedinit fetch` on a disk image. The key is the device path to report,
// the value the image file.
type FileDevices map[string]string

// List reads each image's label.
func (d FileDevices) List(ctx context.Context) ([]BlockDevice, error) {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []BlockDevice
	for _, n := range names {
		if probe := probeLabel(d[n]); probe.found {
			probe.bd.Path = n
			out = append(out, probe.bd)
		}
	}
	return out, nil
}

// Open opens the image behind a device path.
func (d FileDevices) Open(p string) (io.ReaderAt, int64, io.Closer, error) {
	img, ok := d[p]
	if !ok {
		return nil, 0, nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return openFile(img)
}

func openFile(p string) (io.ReaderAt, int64, io.Closer, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, nil, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("size of %s: %w", p, err)
	}
	return f, size, f, nil
}

// HostEnv builds the Env of the running machine over a target root (nil
// for none): sysfs DMI and block devices, /proc/cmdline, and the
// target's datasource config. A config that does not parse is returned as
// an error beside a usable Env.
func HostEnv(root *rootfs.Root, log *slog.Logger) (*Env, error) {
	cmdline, _ := os.ReadFile("/proc/cmdline")
	cfg, err := LoadConfig(root)
	hvUUID, _ := os.ReadFile("/sys/hypervisor/uuid")
	env := &Env{
		HypervisorUUID: strings.TrimSpace(string(hvUUID)),
		Root:           root,
		DMI:            &SysDMI{},
		Cmdline:        strings.TrimSpace(string(cmdline)),
		Devices:        &SysDevices{},
		Config:         cfg,
		Log:            log,
	}
	return env, err
}

// fileTree is a read-only set of seed files: a disk image, or a directory
// of the target root.
type fileTree interface {
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]string, error)
}

// rootTree reads a directory inside the target root, with the size cap
// disk images have.
type rootTree struct {
	root *rootfs.Root
	dir  string
}

func (t rootTree) ReadFile(name string) ([]byte, error) {
	p := path.Join(t.dir, path.Clean("/"+name))
	st, err := t.root.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("is a directory")}
	}
	if !st.Mode().IsRegular() {
		// A named pipe nobody writes to would block the read, and PID 1
		// with it, forever.
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w (mode %s)", seed.ErrNotRegular, st.Mode().Type())}
	}
	if st.Size() > maxImageFile {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: %d bytes", ErrTooLarge, st.Size())}
	}
	return t.root.ReadFile(p)
}

func (t rootTree) ReadDir(name string) ([]string, error) {
	entries, err := t.root.ReadDir(path.Join(t.dir, path.Clean("/"+name)))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// openDevice reads a device's filesystem tree without mounting.
func openDevice(env *Env, dev string) (*ImageFS, func(), error) {
	if env.Devices == nil {
		return nil, nil, fmt.Errorf("open %s: no block devices", dev)
	}
	r, size, closer, err := env.Devices.Open(dev)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", dev, err)
	}
	fsys, err := OpenImage(r, size)
	if err != nil {
		closer.Close()
		return nil, nil, fmt.Errorf("read filesystem on %s: %w", dev, err)
	}
	return fsys, func() { closer.Close() }, nil
}
