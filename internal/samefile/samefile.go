// Package samefile says whether two files are the same: the same file
// (its identity: filesystem and inode, whatever the path), the same bytes,
// the same program as the one running, or the same Go build. PID 1 decides
// whether an init candidate is itself, the child after the handoff whether
// the copy it keeps in the root is already this build, the lease keeper
// whether the root's copy is the program it may exec, and the target-root
// writer whether a file already holds what it would write: each through
// the one helper here, never by comparing path strings (on a usrmerge root
// /sbin/seedinit is /usr/sbin/seedinit, and u-root makes /init a symlink).
package samefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// SelfExe is this process's executable; it names the running binary even
// after the initramfs that held it was emptied.
const SelfExe = "/proc/self/exe"

// ID is a file's identity: the device of its filesystem and its inode.
type ID struct{ Dev, Ino uint64 }

// Identify stats path, following symlinks: its identity and its size.
func Identify(path string) (ID, int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ID{}, 0, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, st.Size, nil
}

// identifyFile is Identify for an open file.
func identifyFile(f *os.File) (ID, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ID{}, 0, err
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, st.Size, nil
}

// block is how much of each file a comparison reads at a time.
const block = 64 << 10

// blocks recycles the comparisons' buffers: the target-root writer
// compares every file it would write (a module may write hundreds), and
// each comparison would otherwise leave two blocks of garbage.
var blocks = sync.Pool{New: func() any { return new([block]byte) }}

// Content reports whether a and b hold the same bytes, reading both to
// their ends a block at a time. A read that fails is the error, unless
// what the two gave before already differs: then they are not the same.
func Content(a, b io.Reader) (bool, error) {
	bufA, bufB := blocks.Get().(*[block]byte), blocks.Get().(*[block]byte)
	defer blocks.Put(bufA)
	defer blocks.Put(bufB)
	for {
		n, errA := io.ReadFull(a, bufA[:])
		m, errB := io.ReadFull(b, bufB[:])
		if n != m || !bytes.Equal(bufA[:n], bufB[:m]) {
			return false, nil
		}
		endA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		endB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA == endB, nil
		}
	}
}

// Program reports whether the program at path is self (this seedinit's
// executable): the same file by any name (hard link, symlink, /sbin on a
// usrmerge root), or a copy of the same binary (the same size and every
// byte), which would run this very program again. Without self to
// compare with, nothing is seedinit: exec'ing is better than no boot.
func Program(path string, self *os.File) (bool, error) {
	id, size, err := Identify(path)
	if err != nil {
		return false, err
	}
	if self == nil {
		return false, nil
	}
	selfID, selfSize, err := identifyFile(self)
	if err != nil {
		return false, fmt.Errorf("identify seedinit itself: %w", err)
	}
	if id == selfID {
		return true, nil
	}
	if size != selfSize {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return Content(f, io.NewSectionReader(self, 0, selfSize))
}

// IsSelf reports whether the program at path is this process's own
// executable, by identity or by every byte (Program).
func IsSelf(path string) (bool, error) {
	self, err := os.Open(SelfExe)
	if err != nil {
		return false, err
	}
	defer self.Close()
	return Program(path, self)
}

// buildHead is how much of two programs SameBuild compares. Go's linker
// writes the build ID in an ELF note among the leading headers, in the
// first few KiB (the go command's cmd/internal/buildid reads 32 KiB to
// find it), and the build ID ends with a hash of the whole linked output:
// two builds that differ anywhere, or by an -X value, differ there.
const buildHead = 64 << 10

// SameBuild reports whether a and b are the same Go build: the same size
// and the same first 64 KiB, which hold the build ID. It is the cheap
// check, for where reading the whole program (12 MB of a root's disk,
// at every boot) is not worth it: it trusts the build ID, so a copy
// changed after the head (by hand, by a bad disk) passes. Where the file
// is about to be run in this program's place, Program or IsSelf compare
// every byte.
func SameBuild(a, b *os.File) (bool, error) {
	_, sizeA, err := identifyFile(a)
	if err != nil {
		return false, err
	}
	_, sizeB, err := identifyFile(b)
	if err != nil {
		return false, err
	}
	if sizeA != sizeB {
		return false, nil
	}
	head := min(sizeA, buildHead)
	return Content(io.NewSectionReader(a, 0, head), io.NewSectionReader(b, 0, head))
}
