package seedimg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/fat16"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/seedinit/seedinit/seed"
)

const mib = 1 << 20

// configDriveSize is the FAT config drive's size in Nova
// (CONFIGDRIVESIZE_BYTES), which some guests' tools expect.
const configDriveSize = 64 * mib

// fat16Max is the largest image we make FAT16; beyond it FAT32.
const fat16Max = 2000 * mib

// Build writes the seed image to out (replaced atomically: a partly
// written image is never left under out's name).
func Build(out string, o Options) error {
	o = o.withDefaults()
	files, err := Layout(o)
	if err != nil {
		return fmt.Errorf("build seed image %s: %w", out, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return fmt.Errorf("build seed image %s: %w", out, err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	// go-diskfs creates the file itself and wants it absent.
	os.Remove(tmpName)
	defer os.Remove(tmpName)

	if o.Kind == OVF && o.Format == VFAT || o.Kind != OVF && o.Format == XML {
		return fmt.Errorf("build seed image %s: an OVF environment is an ISO9660 disc or its XML alone; --format xml is for --kind ovf", out)
	}
	switch o.Format {
	case XML:
		err = os.WriteFile(tmpName, files["ovf-env.xml"], 0o600)
	case ISO:
		err = buildISO(tmpName, o.label(), files, o.Bootstrap)
	case VFAT:
		err = buildFAT(tmpName, o.label(), o.fatSize(files), files)
		if err == nil {
			err = tidyFAT16(tmpName)
		}
	default:
		err = fmt.Errorf("unknown format %q", o.Format)
	}
	if err != nil {
		return fmt.Errorf("build %s %s seed image %s: %w", o.Kind, o.Format, out, err)
	}
	if err := os.Chmod(tmpName, 0o600); err != nil {
		return fmt.Errorf("build seed image %s: %w", out, err)
	}
	if err := os.Rename(tmpName, out); err != nil {
		return fmt.Errorf("build seed image %s: %w", out, err)
	}
	return nil
}

func buildISO(out, label string, files map[string][]byte, tree []seed.BootstrapFile) (err error) {
	workspace, err := os.MkdirTemp("", "seedimg-iso-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workspace)
	// Rock Ridge records the workspace's own mode for the root: MkdirTemp's
	// 0700 would hide the seed from non-root readers of the mounted image.
	if err := os.Chmod(workspace, 0o755); err != nil {
		return err
	}
	if err := writeTree(workspace, files); err != nil {
		return fmt.Errorf("stage files: %w", err)
	}
	if err := stageBootstrap(workspace, tree); err != nil {
		return fmt.Errorf("stage the bootstrap tree: %w", err)
	}
	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeIgnoringClosed(f)) }()
	fs, err := iso9660.Create(file.New(f, false), 0, 0, 2048, workspace)
	if err != nil {
		return fmt.Errorf("create iso9660: %w", err)
	}
	// Rock Ridge (and Joliet) keep lower-case, long names (meta-data,
	// network_data.json) as genisoimage -J -r does; plain ISO9660 would
	// turn them into META_DAT.;1. go-diskfs v1.9.4 points Joliet entries of
	// subdirectories at the primary tree's extents, so a nested layout (a
	// config drive) gets Rock Ridge only: Linux reads Rock Ridge first, and
	// no Joliet beats a Joliet tree of garbage for readers that prefer it.
	opts := iso9660.FinalizeOptions{RockRidge: true, Joliet: isFlat(files) && len(tree) == 0, VolumeIdentifier: label}
	if err := fs.Finalize(opts); err != nil {
		return fmt.Errorf("write iso9660: %w", err)
	}
	return f.Sync()
}

func isFlat(files map[string][]byte) bool {
	for name := range files {
		if strings.Contains(name, "/") {
			return false
		}
	}
	return true
}

func closeIgnoringClosed(f *os.File) error {
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// fatSize is the image size: the option, else Nova's 64 MiB for a config
// drive, else room for the files and FAT16's minimum cluster count.
func (o Options) fatSize(files map[string][]byte) int64 {
	if o.Size > 0 {
		return o.Size
	}
	var content int64
	for _, b := range files {
		// Each file takes whole clusters; 4 KiB is the largest FAT16
		// cluster below 256 MiB.
		content += (int64(len(b)) + 4095) / 4096 * 4096
	}
	size := int64(8 * mib)
	if o.Kind == ConfigDrive {
		size = configDriveSize
	}
	for size < 2*content+mib {
		size *= 2
	}
	return size
}

func buildFAT(out, label string, size int64, files map[string][]byte) (err error) {
	b, err := file.CreateFromPath(out, size)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	var fs filesystem.FileSystem
	if size <= fat16Max {
		fs, err = fat16.Create(b, size, 0, 512, label, true)
	} else {
		fs, err = fat32.Create(b, size, 0, 512, label, true)
	}
	if err != nil {
		return fmt.Errorf("create FAT: %w", err)
	}
	dirs, names := sortedNames(files)
	for _, d := range dirs {
		if err := fs.Mkdir("/" + d); err != nil {
			return fmt.Errorf("create directory %s: %w", d, err)
		}
	}
	for _, name := range names {
		if err := writeFATFile(fs, "/"+name, files[name]); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := fs.Close(); err != nil && !errors.Is(err, filesystem.ErrNotSupported) && !errors.Is(err, filesystem.ErrNotImplemented) {
		return fmt.Errorf("close FAT: %w", err)
	}
	return nil
}

func writeFATFile(fs filesystem.FileSystem, name string, data []byte) error {
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
