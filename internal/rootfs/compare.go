package rootfs

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"sync"
)

// compareBlock is how much of each file a comparison or a copy reads at
// a time.
const compareBlock = 64 << 10

// blocks recycles the buffers of comparisons and copies: a module that
// writes hundreds of files would otherwise leave 64 KiB of garbage for
// each.
var blocks = sync.Pool{New: func() any { return new([compareBlock]byte) }}

// copyFrom copies src to f through a pooled buffer. f is hidden behind a
// plain Writer: *os.File's ReadFrom would allocate a buffer of its own
// for a reader it cannot splice.
func copyFrom(f *os.File, src io.Reader) error {
	buf := blocks.Get().(*[compareBlock]byte)
	defer blocks.Put(buf)
	_, err := io.CopyBuffer(struct{ io.Writer }{f}, src, buf[:])
	return err
}

// holds reports whether name (symlinks followed) is a regular file with
// exactly data, mode and owner, reading it a block at a time.
func (r *Root) holds(name string, data []byte, mode fs.FileMode, owner Owner) bool {
	f, err := r.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	if !sameMeta(f, int64(len(data)), mode, owner) {
		return false
	}
	return sameContent(f, bytes.NewReader(data))
}

// sameFile reports whether rel (resolved) is a regular file with the
// content of the temporary file tmp, mode and owner.
func sameFile(dir *os.Root, base string, tmp *os.File, mode fs.FileMode, owner Owner) bool {
	fi, err := tmp.Stat()
	if err != nil {
		return false
	}
	old, err := dir.Open(base)
	if err != nil {
		return false
	}
	defer old.Close()
	if !sameMeta(old, fi.Size(), mode, owner) {
		return false
	}
	return sameContent(old, io.NewSectionReader(tmp, 0, fi.Size()))
}

// sameMeta checks what a stat tells before any content is read.
func sameMeta(f *os.File, size int64, mode fs.FileMode, owner Owner) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size &&
		ModeBits(fi.Mode()) == ModeBits(mode) && ownerMatches(fi, owner)
}

// sameContent compares two readers to their ends a block at a time.
func sameContent(a, b io.Reader) bool {
	bufA, bufB := blocks.Get().(*[compareBlock]byte), blocks.Get().(*[compareBlock]byte)
	defer blocks.Put(bufA)
	defer blocks.Put(bufB)
	for {
		n, errA := io.ReadFull(a, bufA[:])
		m, errB := io.ReadFull(b, bufB[:])
		if n != m || !bytes.Equal(bufA[:n], bufB[:m]) {
			return false
		}
		endA := errA == io.EOF || errA == io.ErrUnexpectedEOF
		endB := errB == io.EOF || errB == io.ErrUnexpectedEOF
		switch {
		case endA && endB:
			return true
		case errA != nil || errB != nil:
			return false
		}
	}
}
