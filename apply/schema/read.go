package schema

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// MaxConfigSize is the largest file schema reads: the most user-data
// seedinit applies (all parts together), so no config it could apply is
// refused. cloud-init reads a file of any size, and holds it several
// times over while it parses it: seedinit took 410 MiB for a 50 MiB
// scalar and still called it valid.
const MaxConfigSize = seed.DefaultMaxSize

// errTooLarge is wrapped by the error for a file over MaxConfigSize.
var errTooLarge = fmt.Errorf("cloud-config over %d MiB is not read: seedinit applies no user-data that large", MaxConfigSize>>20)

// ValidateFile reads the cloud-config file name, up to MaxConfigSize, and
// checks it as Validate does.
func ValidateFile(name string) (*Report, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readConfig(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return Validate(data, name)
}

// readConfig reads f whole up to MaxConfigSize. A regular file's size
// is known first, so a large one is refused without being read, and a
// small one read into a buffer of its size.
func readConfig(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() {
		if fi.Size() > MaxConfigSize {
			return nil, fmt.Errorf("the file is %d bytes: %w", fi.Size(), errTooLarge)
		}
		data := make([]byte, fi.Size())
		n, err := io.ReadFull(f, data)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		data = data[:n]
		// A file that grew since the stat: read the rest, to the limit.
		rest, err := io.ReadAll(io.LimitReader(f, MaxConfigSize-int64(n)+1))
		if err != nil {
			return nil, err
		}
		data = append(data, rest...)
		if int64(len(data)) > MaxConfigSize {
			return nil, fmt.Errorf("the file grew past %d bytes: %w", MaxConfigSize, errTooLarge)
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > MaxConfigSize {
		return nil, fmt.Errorf("more than %d bytes: %w", MaxConfigSize, errTooLarge)
	}
	return data, nil
}

// readTargetConfig is readConfig for a file in the target.
func readTargetConfig(root *rootfs.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readConfig(f)
}
