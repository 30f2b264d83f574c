package disksetup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/disk"
)

func init() {
	apply.Register(apply.Module{Name: "disk_setup", Frequency: apply.PerInstance, Keys: []string{"disk_setup", "fs_setup"}, Run: run})
}

func run(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("disk_setup") && !env.Config.Has("fs_setup") {
		return nil
	}
	if !env.Sys.Live() {
		return apply.Skip("disk_setup partitions and formats the running system's disks and the target %s is not the running system", env.Root.Dir())
	}
	aliases, err := parseAliases(env.Config)
	if err != nil {
		return err
	}
	var errs []error
	disks, err := ParseDiskSetup(env.Config)
	if err != nil {
		errs = append(errs, err)
	}
	for _, d := range disks {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		path, err := resolveDevice(aliases, d.Device)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk_setup: %w", err))
			continue
		}
		note, err := SetupDisk(d, path, env.EarlyRand())
		if err != nil {
			errs = append(errs, fmt.Errorf("disk_setup: %s: %w", d.Device, err))
			continue
		}
		env.Log.Info("disk_setup", "device", path, "result", note)
	}
	fss, err := ParseFSSetup(env.Config)
	if err != nil {
		errs = append(errs, err)
	}
	for i, s := range fss {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		path, err := resolveDevice(aliases, s.Device)
		if err != nil {
			errs = append(errs, fmt.Errorf("fs_setup item %d: %w", i, err))
			continue
		}
		note, err := SetupFS(ctx, env, s, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("fs_setup item %d (%s): %w", i, s.Device, err))
			continue
		}
		env.Log.Info("fs_setup", "device", path, "result", note)
	}
	return errors.Join(errs...)
}

func parseAliases(cfg apply.Config) (map[string]string, error) {
	m, ok, err := cfg.Map("device_aliases")
	if err != nil || !ok {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range m.Keys() {
		v, err := apply.AsString(m[k])
		if err != nil {
			return nil, fmt.Errorf("device_aliases: %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// resolveDevice maps a disk_setup/fs_setup device name to a host path:
// device_aliases first, then the name must be a path. Cloud names such
// as ephemeral0 or swap need the datasource's block-device mapping, which
// seedinit does not have, so they are errors naming the alias to add.
func resolveDevice(aliases map[string]string, name string) (string, error) {
	dev := name
	if a, ok := aliases[name]; ok {
		dev = a
	}
	if !strings.HasPrefix(dev, "/") {
		return "", fmt.Errorf("device %s: not a /dev path, and seedinit has no block-device mapping for cloud names; add device_aliases: {%s: /dev/...}", name, name)
	}
	real, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return "", fmt.Errorf("device %s: %w", name, err)
	}
	return real, nil
}

// checkWholeDisk refuses partitions: disk_setup writes tables on disks.
// Image files pass, for offline use and tests.
func checkWholeDisk(path string) (block bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return false, nil
	case unix.S_IFBLK:
		sys := fmt.Sprintf("/sys/dev/block/%d:%d/partition", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		if _, err := os.Stat(sys); err == nil {
			return true, fmt.Errorf("%s is a partition, not a disk", path)
		}
		return true, nil
	}
	return false, fmt.Errorf("%s is not a disk device", path)
}

// SetupDisk is cloud-init's mkpart for one disk_setup entry on the disk
// or image at path. A disk whose table already matches the layout, or
// that is in use (partitions, a filesystem, an unreadable table) without
// overwrite: true, is left alone; the returned note says which.
func SetupDisk(spec DiskSpec, path string, random io.Reader) (string, error) {
	if spec.Layout.Empty() {
		return "no layout: not partitioning", nil
	}
	block, err := checkWholeDisk(path)
	if err != nil {
		return "", err
	}
	dev, err := disk.OpenFile(path, false)
	if err != nil {
		return "", err
	}
	found := Inspect(dev)
	size, ss := dev.Size(), dev.SectorSize()
	dev.Close()
	if found.Matches(spec.TableType, spec.Layout) {
		return "partition layout already matches", nil
	}
	if !spec.Overwrite && found.InUse() {
		return "disk in use (" + describe(found) + "); not partitioning without overwrite: true", nil
	}
	var plan []Extent
	if spec.TableType == GPT {
		plan, err = PlanGPT(size, ss, spec.Layout)
	} else {
		plan, err = PlanMBR(size, ss, spec.Layout)
	}
	if err != nil {
		return "", err
	}
	flag := os.O_RDWR
	if block {
		// O_EXCL on a block device fails while anything (a mounted
		// partition) holds the disk.
		flag |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return "", fmt.Errorf("open %s to write its partition table: %w", path, err)
	}
	defer f.Close()
	if err := WriteTable(f, size, ss, spec.TableType, plan, random); err != nil {
		return "", fmt.Errorf("partition %s: %w", path, err)
	}
	note := fmt.Sprintf("wrote a %s table with %d partitions", spec.TableType, len(plan))
	if block {
		k, err := TellKernel(f, ss, plan)
		if err != nil {
			return "", fmt.Errorf("%s: %w", note, err)
		}
		note += "; " + k
	}
	return note, nil
}

func describe(f Found) string {
	switch {
	case f.Unreadable != nil:
		return "unreadable partition table: " + f.Unreadable.Error()
	case f.FS != nil:
		return fmt.Sprintf("a %s filesystem on the bare disk", f.FS.Type)
	default:
		return fmt.Sprintf("%s table with %d partitions", f.Table, len(f.Parts))
	}
}
