package rootfs

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/seedinit/seedinit/internal/samefile"
)

// copyBlock is how much of a file a copy reads at a time.
const copyBlock = 64 << 10

// blocks recycles the buffers of copies: a module that writes hundreds
// of files would otherwise leave 64 KiB of garbage for each. The
// comparisons' own are samefile's.
var blocks = sync.Pool{New: func() any { return new([copyBlock]byte) }}

// copyFrom copies src to f through a pooled buffer. f is hidden behind a
// plain Writer: *os.File's ReadFrom would allocate a buffer of its own
// for a reader it cannot splice.
func copyFrom(f *os.File, src io.Reader) error {
	buf := blocks.Get().(*[copyBlock]byte)
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
	same, err := samefile.Content(f, bytes.NewReader(data))
	return err == nil && same
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
	same, err := samefile.Content(old, io.NewSectionReader(tmp, 0, fi.Size()))
	return err == nil && same
}

// sameMeta checks what a stat tells before any content is read.
func sameMeta(f *os.File, size int64, mode fs.FileMode, owner Owner) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size &&
		ModeBits(fi.Mode()) == ModeBits(mode) && ownerMatches(fi, owner)
}
