// Package mounts is cloud-init's mounts module: /etc/fstab entries from
// cloud-config's mounts and mount_default_fields, the ephemeral and swap
// defaults, and a swap file made without external tools.
package mounts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/internal/rootfs"
	"golang.org/x/sys/unix"
)

// FstabPath is the file the module owns lines of.
const FstabPath = "/etc/fstab"

func init() {
	apply.Register(apply.Module{
		Name:      "mounts",
		Frequency: apply.PerInstance,
		Keys:      []string{"mounts", "mount_default_fields", "swap", "device_aliases"},
		Run: func(ctx context.Context, env *apply.Env) error {
			return Run(ctx, env, Host{})
		},
	})
}

// Host is what the module reads of the running machine rather than the
// target: its devices, memory, active swaps and mounts.
type Host struct {
	// Devices defaults to HostDevices{} (the host's /dev and /sys).
	Devices Devices
	// ReadProc reads a /proc file ("meminfo", "swaps", "self/mountinfo");
	// nil reads the host's.
	ReadProc func(name string) ([]byte, error)
}

func (h Host) devices() Devices {
	if h.Devices == nil {
		return HostDevices{}
	}
	return h.Devices
}

func (h Host) proc(name string) ([]byte, error) {
	if h.ReadProc != nil {
		return h.ReadProc(name)
	}
	return os.ReadFile("/proc/" + name)
}

// Run applies the mounts configuration to env's target.
func Run(ctx context.Context, env *apply.Env, host Host) error {
	var errs []error
	systemd := usesSystemd(env)
	defaults, err := defaultFields(env.Config, systemd)
	if err != nil {
		errs = append(errs, err)
	}
	resolver := Resolver{Devices: host.devices(), MetaDevice: metaDeviceFunc(env)}
	if aliases, ok, err := env.Config.Map("device_aliases"); err != nil {
		errs = append(errs, fmt.Errorf("read device_aliases: %w", err))
	} else if ok {
		resolver.Aliases = map[string]string{}
		for k, v := range aliases {
			if s, err := apply.AsString(v); err == nil {
				resolver.Aliases[k] = s
			} else {
				errs = append(errs, fmt.Errorf("read device_aliases: %s: %w", k, err))
			}
		}
	}

	var current Fstab
	data, err := env.Root.ReadFile(FstabPath)
	switch {
	case err == nil:
		current = ParseFstab(string(data))
	case errors.Is(err, fs.ErrNotExist):
		current = ParseFstab("")
	default:
		return errors.Join(append(errs, fmt.Errorf("read %s: %w", FstabPath, err))...)
	}

	raw, _, err := env.Config.List("mounts")
	if err != nil {
		errs = append(errs, fmt.Errorf("read mounts: %w", err))
	}
	entries, planErrs := Plan(raw, defaults, current, resolver, env.Log)
	errs = append(errs, planErrs...)

	swapFile, err := setupSwap(env, host)
	if err != nil {
		errs = append(errs, err)
	}
	if swapFile != "" {
		entries = append(entries, Entry{swapFile, "none", "swap", "sw", "0", "0"})
	}
	if len(entries) == 0 {
		env.Log.Debug("mounts: no fstab entries to write")
		return errors.Join(errs...)
	}

	needSwap, mountAll := false, false
	var dirs []string
	for _, e := range entries {
		if e[2] == "swap" {
			needSwap = true
		}
		if strings.HasPrefix(e[1], "/") {
			dirs = append(dirs, e[1])
		}
	}
	for _, d := range dirs {
		if err := env.Root.MkdirAll(d, 0o755, rootfs.Owner{}); err != nil {
			errs = append(errs, fmt.Errorf("create mount point %s: %w", d, err))
		}
	}
	if len(dirs) > 0 {
		mountAll = true
		if env.Sys.Live() {
			if mi, err := host.proc("self/mountinfo"); err == nil {
				mountAll = !allMounted(env.Root, dirs, mi)
			}
		}
	}

	contents := Render(current.Kept, entries)
	changed := !sameLines(current.Owned, entries)
	if changed {
		mountAll = true
	}
	if _, err := env.Root.WriteFileIfChanged(FstabPath, []byte(contents), 0o644, rootfs.Owner{}); err != nil {
		errs = append(errs, fmt.Errorf("write %s: %w", FstabPath, err))
	}

	var cmds [][]string
	if needSwap {
		cmds = append(cmds, []string{"swapon", "-a"})
	}
	if mountAll {
		cmds = append(cmds, []string{"mount", "-a"})
		if systemd {
			cmds = append(cmds, []string{"systemctl", "daemon-reload"})
		}
	}
	if len(cmds) > 0 && !env.Sys.Live() {
		env.Log.Info("mounts: target is not the running system, not activating", "skipped", joinCmds(cmds))
		return errors.Join(errs...)
	}
	for _, argv := range cmds {
		var out strings.Builder
		if err := env.Sys.Run(ctx, apply.Command{Argv: argv, Output: &out}); err != nil {
			// cloud-init only warns here: the fstab is written and the
			// next boot mounts it.
			env.Warn("mounts: activate with %s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(out.String()))
		}
	}
	return errors.Join(errs...)
}

func joinCmds(cmds [][]string) string {
	var s []string
	for _, c := range cmds {
		s = append(s, strings.Join(c, " "))
	}
	return strings.Join(s, "; ")
}

// sameLines reports whether the owned lines already in fstab are the ones
// about to be written, compared with runs of whitespace collapsed as
// cloud-init compares them.
func sameLines(owned []string, entries []Entry) bool {
	norm := func(s string) string { return whitespace().ReplaceAllString(s, " ") }
	have := map[string]bool{}
	for _, l := range owned {
		have[norm(l)] = true
	}
	want := map[string]bool{}
	for _, e := range entries {
		want[norm(e.Line())] = true
	}
	if len(have) != len(want) {
		return false
	}
	for l := range want {
		if !have[l] {
			return false
		}
	}
	return true
}

// allMounted reports whether every directory of the target in dirs is a
// mount point now. The target's paths are the running system's through
// HostPath: under an initramfs the target's /srv/data is mounted on
// /sysroot/srv/data.
func allMounted(root *rootfs.Root, dirs []string, mountinfo []byte) bool {
	mounts, err := disk.ParseMountInfo(bytes.NewReader(mountinfo))
	if err != nil {
		return false
	}
	mounted := map[string]bool{}
	for _, m := range mounts {
		mounted[m.MountPoint] = true
	}
	for _, d := range dirs {
		if hp, err := root.HostPath(d); err != nil || !mounted[hp] {
			return false
		}
	}
	return true
}

// usesSystemd is cloud-init's distro.uses_systemd for the target: the
// running system's /run/systemd/system when live, else systemd installed
// in the target.
func usesSystemd(env *apply.Env) bool {
	if env.Sys.Live() {
		return env.Root.Exists("/run/systemd/system")
	}
	for _, p := range []string{"/run/systemd/system", "/lib/systemd/systemd", "/usr/lib/systemd/systemd"} {
		if env.Root.Exists(p) {
			return true
		}
	}
	return false
}

// builtinDefaults are cloud-init 22.4's fields for entries that leave some
// out; the options depend on whether the target runs systemd.
func builtinDefaults(systemd bool) [6]*string {
	opts := "defaults,nobootwait"
	if systemd {
		opts = "defaults,nofail,x-systemd.requires=cloud-init.service,_netdev"
	}
	s := func(v string) *string { return &v }
	return [6]*string{nil, nil, s("auto"), s(opts), s("0"), s("2")}
}

// defaultFields reads mount_default_fields over the built-in defaults; a
// null field stays null (the entry's own value, or nothing, is used).
func defaultFields(cfg apply.Config, systemd bool) ([6]*string, error) {
	defs := builtinDefaults(systemd)
	list, ok, err := cfg.List("mount_default_fields")
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("read mount_default_fields: %w", err)
		}
		return defs, err
	}
	var errs []error
	for i, v := range list {
		if i >= len(defs) {
			break
		}
		if v == nil {
			defs[i] = nil
			continue
		}
		s, err := apply.AsString(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("read mount_default_fields: item %d: %w", i, err))
			continue
		}
		defs[i] = &s
	}
	return defs, errors.Join(errs...)
}

// metaDeviceFunc maps metadata device names (ephemeral0, swap, ebs1) with
// the metadata's block-device-mapping (EC2 and OpenStack's EC2 tree), as
// their datasources do; other datasources know no such names.
func metaDeviceFunc(env *apply.Env) func(string) string {
	return func(name string) string {
		if env.Seed == nil {
			return ""
		}
		bdm, ok := env.Seed.Metadata["block-device-mapping"].(map[string]any)
		if !ok {
			return ""
		}
		dev, _ := bdm[name].(string)
		return dev
	}
}

// setupSwap makes the swap file that swap asks for and returns its target
// path for fstab, or "" when there is none.
func setupSwap(env *apply.Env, host Host) (string, error) {
	if !env.Config.Has("swap") {
		return "", nil
	}
	swap, _, err := env.Config.Map("swap")
	if err != nil {
		// cloud-init warns and goes on without swap.
		env.Warn("mounts: swap: want a mapping, ignoring it")
		return "", nil
	}
	filename := "/swap.img"
	if swap.Has("filename") {
		if filename, err = apply.AsString(swap["filename"]); err != nil || filename == "" {
			return "", nil
		}
	}
	sizeRaw := swap["size"]
	if sizeRaw == nil || sizeRaw == false || sizeRaw == int64(0) || sizeRaw == "" {
		return "", nil
	}
	if env.Root.Exists(filename) {
		if !env.Sys.Live() {
			// cloud-init keeps an existing file when it cannot tell
			// whether it is in use (no /proc/swaps).
			return filename, nil
		}
		swaps, err := host.proc("swaps")
		if err != nil {
			return filename, nil
		}
		for _, line := range strings.Split(string(swaps), "\n") {
			if strings.HasPrefix(line, filename+" ") {
				return filename, nil
			}
		}
	}
	size, err := swapSize(env, host, filename, sizeRaw, swap["maxsize"])
	if err != nil {
		env.Warn("mounts: swap %s: %v", filename, err)
		return "", nil
	}
	// cloud-init makes the file in whole MiB.
	size = size / mib * mib
	if size == 0 {
		return "", nil
	}
	if err := createSwap(env, filename, size); err != nil {
		env.Warn("mounts: create swap file %s: %v", filename, err)
		return "", nil
	}
	return filename, nil
}

func sizeValue(v any) (int64, bool, error) {
	switch s := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return s, true, nil
	case int:
		return int64(s), true, nil
	case float64:
		return int64(s), true, nil
	case string:
		n, err := HumanToBytes(s)
		return n, true, err
	}
	return 0, false, fmt.Errorf("want a size, got %s", apply.TypeName(v))
}

func swapSize(env *apply.Env, host Host, filename string, sizeRaw, maxRaw any) (int64, error) {
	maxSize, _, err := sizeValue(maxRaw)
	if err != nil {
		return 0, fmt.Errorf("read maxsize: %w", err)
	}
	if s, ok := sizeRaw.(string); !ok || s != "auto" {
		size, _, err := sizeValue(sizeRaw)
		if err != nil {
			return 0, fmt.Errorf("read size: %w", err)
		}
		return size, nil
	}
	meminfo, err := host.proc("meminfo")
	if err != nil {
		return 0, fmt.Errorf("read meminfo for size auto: %w", err)
	}
	mem, err := memTotal(string(meminfo))
	if err != nil {
		return 0, fmt.Errorf("read meminfo for size auto: %w", err)
	}
	dir := path.Dir(filename)
	if err := env.Root.MkdirAll(dir, 0o755, rootfs.Owner{}); err != nil {
		return 0, fmt.Errorf("create %s: %w", dir, err)
	}
	free, err := freeBytes(env.Root, dir)
	if err != nil {
		return 0, fmt.Errorf("measure free space in %s: %w", dir, err)
	}
	return SuggestedSwapSize(mem, maxSize, free), nil
}

func createSwap(env *apply.Env, filename string, size int64) error {
	uuid, err := randomUUID(env.EarlyRand())
	if err != nil {
		return fmt.Errorf("make swap UUID: %w", err)
	}
	header, err := SwapHeader(os.Getpagesize(), size, uuid, "")
	if err != nil {
		return err
	}
	var method string
	err = env.Root.WriteFileWith(filename, 0o600, rootfs.KeepOwner, func(f *os.File) (err error) {
		method, err = fillSwapFile(f, size, header)
		return err
	})
	if err != nil {
		return err
	}
	env.Log.Info("mounts: created swap file", "file", filename, "bytes", size, "method", method)
	return nil
}

// freeBytes is the free space of the filesystem holding dir, counted as
// cloud-init counts it (f_frsize * f_bfree, blocks reserved for root
// included).
func freeBytes(root *rootfs.Root, dir string) (int64, error) {
	f, err := root.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return int64(st.Frsize) * int64(st.Bfree), nil
}
