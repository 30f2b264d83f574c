package seed

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadSeedFile reads one file of a seed directory, at most max bytes. A
// seed file that is not a regular file is refused by name: a named pipe
// nobody writes to would block the read, and with it PID 1, forever; a
// device could be read without end. The file is opened without blocking,
// so that one swapped for a pipe after the check cannot block either. A
// missing file is an error that matches fs.ErrNotExist.
func ReadSeedFile(name string, max int64) ([]byte, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := regular(name, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(name, st); err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("read %s: %d bytes is over the %d-byte limit", name, st.Size(), max)
	}
	// The file may grow while it is read: no more than max is taken.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s: more than the %d-byte limit", name, max)
	}
	return b, nil
}

// ErrNotRegular is wrapped by ReadSeedFile's error for a seed file that is
// a directory, a pipe, a socket or a device.
var ErrNotRegular = errors.New("not a regular file")

func regular(name string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("read %s: %w (%s)", name, ErrNotRegular, fileKind(st.Mode()))
}

// fileKind names what a non-regular file is, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}
