package initramfs

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// Mode bits of a cpio header: the file type in the high bits, as in
// stat(2).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeCharDev = 0o020000
)

// record is one archive member: a directory, a character device or a
// regular file with its whole content.
type record struct {
	Name           string // relative, "/"-separated
	Mode           uint32 // type and permission bits
	Data           []byte
	RMajor, RMinor uint32 // a device's numbers
}

func dirRecord(name string, perm uint32) record { return record{Name: name, Mode: modeDir | perm} }

func fileRecord(name string, perm uint32, data []byte) record {
	return record{Name: name, Mode: modeRegular | perm, Data: data}
}

func charDevRecord(name string, perm, major, minor uint32) record {
	return record{Name: name, Mode: modeCharDev | perm, RMajor: major, RMinor: minor}
}

// newcWriter writes the newc ("070701") cpio format the kernel unpacks as
// an initramfs: a header of thirteen 8-digit hex fields, the name with
// its NUL, the data, each padded to 4 bytes. Every member is owned by
// root with mtime 0 and numbered in write order, so the same records give
// the same bytes; the directories a name lies in are written before it,
// once.
type newcWriter struct {
	w       io.Writer
	written int64
	ino     uint32
	// names holds every member written, true for directories.
	names map[string]bool
}

func newNewcWriter(w io.Writer) *newcWriter {
	return &newcWriter{w: w, names: map[string]bool{}}
}

// implicitDirPerm is the mode of a directory written only because a
// member lies in it.
const implicitDirPerm = 0o755

// Write adds r after any of its parent directories not written yet.
func (cw *newcWriter) Write(r record) error {
	name := strings.Trim(path.Clean(r.Name), "/")
	if name == "." || name == "" || strings.HasPrefix(name, "../") || name == ".." {
		return fmt.Errorf("cpio: member name %q is not a relative path inside the archive", r.Name)
	}
	isDir := r.Mode&^0o7777 == modeDir
	if wasDir, written := cw.names[name]; written {
		if wasDir && isDir {
			return nil // written already, as the parent of an earlier member
		}
		return fmt.Errorf("cpio: %q is in the archive twice", name)
	}
	if parent := path.Dir(name); parent != "." {
		if wasDir, written := cw.names[parent]; written && !wasDir {
			return fmt.Errorf("cpio: %q lies in %q, which is not a directory", name, parent)
		} else if !written {
			if err := cw.Write(dirRecord(parent, implicitDirPerm)); err != nil {
				return err
			}
		}
	}
	cw.names[name] = isDir
	r.Name = name
	return cw.member(r)
}

// Close writes the trailer that ends the archive.
func (cw *newcWriter) Close() error {
	return cw.header(0, 0, 1, 0, 0, 0, "TRAILER!!!")
}

func (cw *newcWriter) member(r record) error {
	if int64(len(r.Data)) > 0xffffffff {
		return fmt.Errorf("cpio: %s is larger than the format's 4 GiB", r.Name)
	}
	cw.ino++
	nlink := uint32(1)
	if r.Mode&^0o7777 == modeDir {
		nlink = 2
	}
	if err := cw.header(cw.ino, r.Mode, nlink, uint32(len(r.Data)), r.RMajor, r.RMinor, r.Name); err != nil {
		return err
	}
	if len(r.Data) == 0 {
		return nil
	}
	if err := cw.write(r.Data); err != nil {
		return err
	}
	return cw.pad()
}

func (cw *newcWriter) header(ino, mode, nlink, size, rmajor, rminor uint32, name string) error {
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, rmajor, rminor, len(name)+1, 0)
	if err := cw.write([]byte(hdr + name + "\x00")); err != nil {
		return err
	}
	return cw.pad()
}

func (cw *newcWriter) write(b []byte) error {
	n, err := cw.w.Write(b)
	cw.written += int64(n)
	if err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	return nil
}

// pad aligns the next header or data to 4 bytes.
func (cw *newcWriter) pad() error {
	if rem := cw.written % 4; rem != 0 {
		return cw.write(make([]byte, 4-rem))
	}
	return nil
}
