package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// appendsFile is the instance's record of the appends write_files made:
// one line per item, "INDEX SHA256 PATH", the digest being that of the
// whole file the append was to leave.
const appendsFile = "write_files.appended"

// appendOnce appends item e's content once per instance. An append is
// the one write of write_files that a run again would not find done: a
// power cut after it and before the module's semaphore reached the disk
// made the next boot append it a second time. So the file the append is
// to leave is recorded first (its digest, flushed), then the append is
// made; a run that finds the file already as recorded, for this item or
// a later append to the same file, appended it before and leaves it.
func appendOnce(env *apply.Env, e *Entry, src io.Reader, owner rootfs.Owner) error {
	data, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	env.NoteUnrepeatable()
	if env.State == nil {
		return env.Root.AppendFileFrom(e.Path, bytes.NewReader(data), e.Mode, owner)
	}
	old, err := env.Root.ReadFile(e.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	record := env.State.InstanceDir(appendsFile)
	done, err := readAppends(env.Root, record)
	if err != nil {
		return err
	}
	have := digest(old)
	if _, ok := done[e.Index]; ok {
		for _, a := range done {
			if a.index >= e.Index && a.path == e.Path && a.sum == have {
				env.Log.Info("write_files: appended before a power cut stopped the run; not appended again", "path", e.Path, "item", e.Index)
				return nil
			}
		}
	}
	done[e.Index] = appended{index: e.Index, path: e.Path, sum: digest(append(old, data...))}
	if err := env.Root.WriteFile(record, done.text(), 0o600, rootfs.KeepOwner); err != nil {
		return err
	}
	// The record reaches the disk before the append can.
	if err := env.Root.Sync(); err != nil {
		return err
	}
	return env.Root.AppendFileFrom(e.Path, bytes.NewReader(data), e.Mode, owner)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type appended struct {
	index     int
	path, sum string
}

type appendRecord map[int]appended

func readAppends(root *rootfs.Root, name string) (appendRecord, error) {
	data, err := root.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the record of appends: %w", err)
	}
	out := appendRecord{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		out[n] = appended{index: n, sum: f[1], path: f[2]}
	}
	return out, nil
}

func (r appendRecord) text() []byte {
	var b strings.Builder
	for _, i := range slices.Sorted(maps.Keys(r)) {
		a := r[i]
		fmt.Fprintf(&b, "%d %s %s\n", a.index, a.sum, a.path)
	}
	return []byte(b.String())
}
