package disksetup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/fat32"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/disk"
)

// probeFS is blkid's TYPE and LABEL for the device at path; ok is false
// when no known signature is there.
func probeFS(path string) (disk.FS, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return disk.FS{}, false, fmt.Errorf("probe %s for a filesystem: %w", path, err)
	}
	defer f.Close()
	if fs, err := disk.Probe(f); err == nil {
		return fs, true, nil
	}
	if fs, ok := probeSwap(f); ok {
		return fs, true, nil
	}
	return disk.FS{}, false, nil
}

// probeSwap finds mkswap's signature at the end of the first page (4 KiB
// pages; 64 KiB ones are checked too) and its label.
func probeSwap(f *os.File) (disk.FS, bool) {
	for _, page := range []int64{4096, 8192, 16384, 65536} {
		sig := make([]byte, 10)
		if _, err := f.ReadAt(sig, page-10); err != nil {
			continue
		}
		if s := string(sig); s == "SWAPSPACE2" || s == "SWAP-SPACE" {
			hdr := make([]byte, 16+16)
			fs := disk.FS{Type: "swap"}
			if _, err := f.ReadAt(hdr, 1024+12); err == nil {
				fs.UUID = fmt.Sprintf("%x-%x-%x-%x-%x", hdr[0:4], hdr[4:6], hdr[6:8], hdr[8:10], hdr[10:16])
				fs.Label = strings.TrimRight(string(hdr[16:]), "\x00")
			}
			return fs, true
		}
	}
	return disk.FS{}, false
}

// candidate is a device fs_setup may put a filesystem on.
type candidate struct {
	path   string
	isDisk bool
	fs     disk.FS
	hasFS  bool
}

// partitionPath names partition n of the disk at path the kernel's way
// (sdb1, nvme0n1p1), where cloud-init appends the number as it is.
func partitionPath(diskPath string, n int) string {
	return filepath.Join(filepath.Dir(diskPath), disk.PartitionName(filepath.Base(diskPath), n))
}

// candidates is cloud-init's enumerate_disk: the disk, then its
// partitions from its table.
func candidates(diskPath string) ([]candidate, error) {
	c := candidate{path: diskPath, isDisk: true}
	var err error
	if c.fs, c.hasFS, err = probeFS(diskPath); err != nil {
		return nil, err
	}
	out := []candidate{c}
	dev, err := disk.OpenFile(diskPath, false)
	if err != nil {
		return nil, err
	}
	found := Inspect(dev)
	dev.Close()
	for i := range found.Parts {
		p := candidate{path: partitionPath(diskPath, i+1)}
		if p.fs, p.hasFS, err = probeFS(p.path); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// pickDevice is cloud-init's find_device_node for partition auto/any: the
// first device holding the wanted filesystem (and label, for auto) is
// reused, the first one holding replace_fs (any only) or no filesystem is
// formatted, and the bare disk only when nothing on it is used.
func pickDevice(cands []candidate, s FSSpec) (path string, reuse bool, err error) {
	labelMatch := s.Partition == "auto"
	rawUsed := false
	for _, c := range cands {
		if s.ReplaceFS != "" && !labelMatch && c.hasFS && c.fs.Type == s.ReplaceFS {
			return c.path, false, nil
		}
		if c.hasFS && c.fs.Type == s.Filesystem && (!labelMatch || c.fs.Label == s.Label) {
			return c.path, true, nil
		}
		if !c.isDisk || c.hasFS {
			rawUsed = true
		}
		if !c.isDisk && !c.hasFS {
			return c.path, false, nil
		}
	}
	if !rawUsed {
		return cands[0].path, false, nil
	}
	return "", false, errors.New("no partition without a filesystem and none with the wanted one")
}

func findMkfs(env *apply.Env, fsType string) string {
	for _, name := range []string{"mkfs." + fsType, "mk" + fsType} {
		if p, ok := apply.LookPath(env.Root, name); ok {
			return p
		}
	}
	return ""
}

// forceFlag is cloud-init's lookup_force_flag.
func forceFlag(fsType string) string {
	t := strings.ToLower(fsType)
	switch {
	case strings.Contains(t, "ext"):
		return "-F"
	case t == "btrfs", t == "xfs", t == "reiserfs", t == "swap":
		return "-f"
	}
	return ""
}

// MkfsArgv is the command cloud-init builds: mkfs.FS [-L label] [force]
// [extra_opts...] device. The force flag goes in for overwrite or a bare
// disk, as cloud-init does.
func MkfsArgv(mkfs string, s FSSpec, device string, bareDisk bool) []string {
	argv := []string{mkfs}
	if s.Label != "" {
		argv = append(argv, "-L", s.Label)
	}
	if s.Overwrite || bareDisk {
		if f := forceFlag(s.Filesystem); f != "" {
			argv = append(argv, f)
		}
	}
	argv = append(argv, s.ExtraOpts...)
	return append(argv, device)
}

// ExpandCmd fills cloud-init's %(label)s, %(filesystem)s and %(device)s
// in a cmd, Python %-formatting style (%% is a percent sign). A None
// label prints as "None" in cloud-init; an empty one is what we print.
func ExpandCmd(cmd string, s FSSpec, device string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(cmd); i++ {
		if cmd[i] != '%' {
			b.WriteByte(cmd[i])
			continue
		}
		rest := cmd[i+1:]
		if strings.HasPrefix(rest, "%") {
			b.WriteByte('%')
			i++
			continue
		}
		matched := false
		for key, val := range map[string]string{"label": s.Label, "filesystem": s.Filesystem, "device": device} {
			tok := "(" + key + ")s"
			if strings.HasPrefix(rest, tok) {
				b.WriteString(val)
				i += len(tok)
				matched = true
				break
			}
		}
		if !matched {
			return "", fmt.Errorf("cmd: unsupported format at byte %d (want %%(label)s, %%(filesystem)s, %%(device)s or %%%%)", i)
		}
	}
	return b.String(), nil
}

var fatNames = map[string]bool{"vfat": true, "fat": true, "fat32": true}

// makeFAT32 formats device with go-diskfs when the image has no
// mkfs.vfat.
func makeFAT32(device, label string) error {
	f, err := os.OpenFile(device, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s for FAT32: %w", device, err)
	}
	defer f.Close()
	size, err := f.Seek(0, 2)
	if err != nil {
		return fmt.Errorf("size of %s: %w", device, err)
	}
	if _, err := fat32.Create(file.New(f, false), size, 0, 512, label, false); err != nil {
		return fmt.Errorf("make FAT32 on %s: %w", device, err)
	}
	return f.Sync()
}

// SetupFS is cloud-init's mkfs for one fs_setup item whose device is the
// host path diskPath. It returns what it did for the log.
func SetupFS(ctx context.Context, env *apply.Env, s FSSpec, diskPath string) (string, error) {
	device := diskPath
	bareDisk := true
	switch s.Partition {
	case "auto", "any":
		cands, err := candidates(diskPath)
		if err != nil {
			return "", err
		}
		path, reuse, err := pickDevice(cands, s)
		if err != nil {
			return "", fmt.Errorf("find a device for %s on %s: %w", s.Filesystem, diskPath, err)
		}
		if reuse {
			return fmt.Sprintf("%s already has %s, not formatting", path, s.Filesystem), nil
		}
		device, bareDisk = path, path == diskPath
		// pickDevice only picks empty devices or replace_fs ones.
	default:
		if n, err := strconv.Atoi(s.Partition); err == nil {
			if n < 1 {
				return "", fmt.Errorf("partition %d: partitions count from 1", n)
			}
			device, bareDisk = partitionPath(diskPath, n), false
		}
		have, ok, err := probeFS(device)
		if err != nil {
			return "", err
		}
		if ok && have.Label == s.Label && have.Type == s.Filesystem && !s.Overwrite {
			return fmt.Sprintf("%s already has %s labelled %q, not formatting", device, s.Filesystem, s.Label), nil
		}
		if ok && !s.Overwrite && !(s.ReplaceFS != "" && have.Type == s.ReplaceFS) {
			return "", fmt.Errorf("%s holds a %s filesystem labelled %q, not %s %q: not formatting it without overwrite: true or replace_fs: %s", device, have.Type, have.Label, s.Filesystem, s.Label, have.Type)
		}
	}
	if s.Cmd != "" {
		line, err := ExpandCmd(s.Cmd, s, device)
		if err != nil {
			return "", err
		}
		if s.Overwrite || len(s.ExtraOpts) > 0 {
			env.Warn("fs_setup: overwrite and extra_opts are ignored because cmd was given")
		}
		var out strings.Builder
		if err := env.Sys.Run(ctx, apply.Command{Argv: []string{"/bin/sh", "-c", line}, Output: &out}); err != nil {
			return "", fmt.Errorf("run cmd for %s: %w: %s", device, err, strings.TrimSpace(out.String()))
		}
		return "ran cmd for " + device, nil
	}
	mkfs := findMkfs(env, s.Filesystem)
	if mkfs == "" {
		if fatNames[strings.ToLower(s.Filesystem)] {
			if err := makeFAT32(device, s.Label); err != nil {
				return "", err
			}
			return fmt.Sprintf("made FAT32 on %s with go-diskfs (no mkfs.%s in this image)", device, s.Filesystem), nil
		}
		return "", fmt.Errorf("filesystem %s: no mkfs.%s in this image", s.Filesystem, s.Filesystem)
	}
	var out strings.Builder
	argv := MkfsArgv(mkfs, s, device, bareDisk)
	if err := env.Sys.Run(ctx, apply.Command{Argv: argv, Output: &out}); err != nil {
		return "", fmt.Errorf("%s on %s: %w: %s", filepath.Base(mkfs), device, err, strings.TrimSpace(out.String()))
	}
	return fmt.Sprintf("made %s on %s", s.Filesystem, device), nil
}
