package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

func init() {
	apply.Register(apply.Module{Name: "growpart", Frequency: apply.PerBoot, Keys: []string{"growpart"}, Run: runGrowpart})
	apply.Register(apply.Module{Name: "resizefs", Frequency: apply.PerBoot, Keys: []string{"resize_rootfs"}, Run: runResizefs})
}

// growrootDisabled is cloud-initramfs-tools' marker that cc_growpart
// honours too.
const growrootDisabled = "/etc/growroot-disabled"

type growpartConfig struct {
	// off is true for mode off/false (growpart disabled).
	off bool
	// deprecatedMode is a spelling of off that cloud-init warns about.
	deprecatedMode string
	devices        []string
	ignoreMarker   bool
}

// parseGrowpart reads cc_growpart's keys: a missing growpart key means
// cloud-init's default (mode auto, devices ["/"]).
func parseGrowpart(cfg apply.Config) (growpartConfig, error) {
	gc := growpartConfig{devices: []string{"/"}}
	if !cfg.Has("growpart") {
		return gc, nil
	}
	m, _, err := cfg.Map("growpart")
	if err != nil {
		return gc, err
	}
	if m == nil {
		// cloud-init warns "'growpart' in config was not a dict" and does
		// nothing for null; so do we.
		return growpartConfig{off: true}, nil
	}
	if v, ok := m["mode"]; ok && v != nil {
		switch mode := v.(type) {
		case bool:
			if mode {
				return gc, errors.New("growpart: mode: true is not a mode (want auto, growpart or off)")
			}
			gc.off = true
		default:
			s, err := apply.AsString(v)
			if err != nil {
				return gc, fmt.Errorf("growpart: mode: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "off":
				gc.off = true
			case "false", "0", "no":
				gc.off, gc.deprecatedMode = true, s
			case "auto", "growpart":
			case "gpart":
				return gc, errors.New("growpart: mode: gpart is FreeBSD's resizer and not available on Linux (want auto, growpart or off)")
			default:
				return gc, fmt.Errorf("growpart: mode: unknown resize mode %q (want auto, growpart or off)", s)
			}
		}
	}
	if m.Has("devices") {
		if m["devices"] == nil {
			gc.devices = nil
		} else if gc.devices, _, err = m.StringList("devices", false); err != nil {
			return gc, fmt.Errorf("growpart: %w", err)
		}
	}
	if gc.ignoreMarker, err = m.Bool("ignore_growroot_disabled", false); err != nil {
		return gc, fmt.Errorf("growpart: %w", err)
	}
	return gc, nil
}

func runGrowpart(ctx context.Context, env *apply.Env) error {
	gc, err := parseGrowpart(env.Config)
	if err != nil {
		return err
	}
	if gc.deprecatedMode != "" {
		env.Warn("growpart: mode %q is deprecated, use 'off' instead", gc.deprecatedMode)
	}
	if gc.off {
		env.Log.Debug("growpart disabled by its mode")
		return nil
	}
	if !gc.ignoreMarker && env.Root.Exists(growrootDisabled) {
		env.Log.Debug("growpart disabled: " + growrootDisabled + " exists; set growpart.ignore_growroot_disabled to ignore it")
		return nil
	}
	if len(gc.devices) == 0 {
		env.Log.Debug("growpart: empty device list")
		return nil
	}
	if !env.Sys.Live() {
		return apply.Skip("growpart grows the running system's disks and the target %s is not the running system", env.Root.Dir())
	}
	var errs []error
	for i, entry := range gc.devices {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		hostEntry, err := hostMountPoint(env, entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("growpart: devices item %d (%s): %w", i, entry, err))
			continue
		}
		res, err := growEntry(DefaultHost, hostEntry)
		switch {
		case errors.Is(err, ErrUnsupportedDevice), errors.Is(err, ErrNotFound):
			// cloud-init reports these as SKIPPED, not failures.
			env.Warn("growpart: devices item %d (%s) skipped: %v", i, entry, err)
		case err != nil:
			errs = append(errs, fmt.Errorf("growpart: devices item %d (%s): %w", i, entry, err))
		case res.Changed:
			env.Log.Info(fmt.Sprintf("'%s' resized: changed (%s, %d) from %d to %d", entry, res.Disk, res.Partition,
				res.OldSize*uint64(res.SectorSize), res.NewSize*uint64(res.SectorSize)), "repaired", res.Repaired, "kernel", res.Kernel)
		case len(res.Repaired) > 0:
			// A damaged table put right is worth the log even when the
			// partition stays as it was.
			env.Log.Info(fmt.Sprintf("'%s' NOCHANGE: no change necessary (%s, %d); partition table repaired", entry, res.Disk, res.Partition),
				"line", res.String(), "repaired", res.Repaired, "kernel", res.Kernel)
		default:
			env.Log.Debug(fmt.Sprintf("'%s' NOCHANGE: no change necessary (%s, %d)", entry, res.Disk, res.Partition),
				"line", res.String(), "repaired", res.Repaired, "kernel", res.Kernel)
		}
	}
	return errors.Join(errs...)
}

// hostMountPoint turns a mount point of the target into the running
// system's path: "/" is /sysroot while PID 1 provisions the root it is
// about to switch to. Device paths are the kernel's and stay as they are.
func hostMountPoint(env *apply.Env, p string) (string, error) {
	if strings.HasPrefix(p, "/dev/") {
		return p, nil
	}
	// Never fall back to p itself: with the target at /sysroot, "/" would
	// be the initramfs's own root.
	hp, err := env.Root.HostPath(p)
	if err != nil {
		return "", fmt.Errorf("find %s in the target: %w", p, err)
	}
	return hp, nil
}

// EntryDevice finds the partition a growpart devices entry names: a mount
// point (the device it is mounted from), or a /dev path; /dev/root is the
// kernel command line's root=.
func EntryDevice(h Host, entry string) (BlockDev, error) {
	if strings.HasPrefix(entry, "/dev/") {
		if entry == "/dev/root" {
			return h.rootDevice()
		}
		return h.Resolve(entry)
	}
	m, err := h.MountOf(entry)
	if err != nil {
		return BlockDev{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if m.Major != 0 {
		return h.BlockDevice(m.Major, m.Minor)
	}
	// btrfs reports an anonymous device number; its source names the device.
	if m.Source == "/dev/root" {
		return h.rootDevice()
	}
	if strings.HasPrefix(m.Source, "/dev/") {
		return h.Resolve(m.Source)
	}
	return BlockDev{}, fmt.Errorf("%s is on %s (%s), not a block device: %w", entry, m.Source, m.FSType, ErrUnsupportedDevice)
}

func (h Host) rootDevice() (BlockDev, error) {
	cmdline, err := os.ReadFile(filepath.Join(h.Proc, "cmdline"))
	if err != nil {
		return BlockDev{}, fmt.Errorf("read the kernel command line for /dev/root: %w", err)
	}
	spec, ok := RootFromCmdline(string(cmdline))
	if !ok {
		return BlockDev{}, fmt.Errorf("/dev/root: no root= on the kernel command line: %w", ErrNotFound)
	}
	return h.Resolve(spec)
}

// growEntry grows the partition behind one growpart devices entry.
func growEntry(h Host, entry string) (Result, error) {
	b, err := EntryDevice(h, entry)
	if err != nil {
		return Result{}, err
	}
	if err := b.CheckGrowable(); err != nil {
		return Result{}, err
	}
	node, done, err := h.Node(b.Disk, b.DiskMajor, b.DiskMinor)
	if err != nil {
		return Result{}, err
	}
	defer done()
	res, err := GrowPart(node, b.Partition, false)
	res.Disk = "/dev/" + b.Disk
	return res, err
}

// resizeRootfs reads resize_rootfs as cloud-init does: missing means
// true; otherwise its string form must be a true spelling or "noblock".
func resizeRootfs(cfg apply.Config) (enabled, noblock bool) {
	v, ok := cfg["resize_rootfs"]
	if !ok {
		return true, false
	}
	if b, isBool := v.(bool); isBool {
		return b, false
	}
	s, err := apply.AsString(v)
	if err != nil {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "on", "yes":
		return true, false
	case "noblock":
		return true, s == "noblock"
	}
	return false, false
}

// isFalseSpelling reports whether v says "off" in one of cloud-init's
// ways, as opposed to being something else altogether.
func isFalseSpelling(v any) bool {
	b, err := apply.AsBool(v)
	return err == nil && !b
}

func runResizefs(ctx context.Context, env *apply.Env) error {
	enabled, noblock := resizeRootfs(env.Config)
	if !enabled {
		if v, ok := env.Config["resize_rootfs"]; ok && !isFalseSpelling(v) {
			env.Warn("resizefs: resize_rootfs %v is neither a boolean nor \"noblock\"; not resizing", v)
		} else {
			env.Log.Debug("resizefs: resizing disabled by resize_rootfs")
		}
		return nil
	}
	if !env.Sys.Live() {
		return apply.Skip("resizefs grows the running system's root filesystem and the target %s is not the running system", env.Root.Dir())
	}
	if noblock {
		// cloud-init forks the resize; the ioctls return in moments, and a
		// goroutine would not survive the handoff to the real init.
		env.Log.Debug("resizefs: noblock: resizing in the foreground, the online resize does not block for long")
	}
	mp, err := hostMountPoint(env, "/")
	if err != nil {
		return fmt.Errorf("resizefs: %w", err)
	}
	res, err := GrowFS(mp)
	if errors.Is(err, ErrUnsupportedFS) {
		return apply.Skip("%v", err)
	}
	if err != nil {
		return fmt.Errorf("resizefs: %w", err)
	}
	if res.Changed {
		env.Log.Info("resizefs: " + res.String())
	} else {
		env.Log.Debug("resizefs: " + res.String())
	}
	return nil
}
