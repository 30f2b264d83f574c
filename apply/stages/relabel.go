package stages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// SELinux labels what a run wrote. cloud-init runs restorecon after each
// write when the kernel has SELinux enabled; seedinit often runs before the
// real init has loaded a policy (from the initramfs against /sysroot, or as
// /sbin/init), when the kernel gives new files no label and a restorecon
// could not give one either. Files it replaces keep their labels (the
// target package copies them), so only what the run made anew needs one:
// on the live system with a policy loaded the target's restorecon labels
// exactly those paths, otherwise /.autorelabel asks the image's own SELinux
// boot (selinux-autorelabel) for a relabel, as RHEL's tools do.

// AutorelabelPath is the file whose presence makes an SELinux boot relabel
// every filesystem and reboot.
const AutorelabelPath = "/.autorelabel"

// autorelabelSem is the per-instance semaphore of an /.autorelabel request.
// A relabel costs a reboot: asking again on every boot, if something made
// a new file on every boot, would never let the machine come up.
const autorelabelSem = "seedinit_autorelabel"

// selinuxConfigPath is where libselinux reads the SELinux mode; RHEL's
// /etc/sysconfig/selinux links to it.
const selinuxConfigPath = "/etc/selinux/config"

// relabelBatch bounds the paths given to one restorecon.
const relabelBatch = 256

// relabelTimeout bounds the relabel, which also runs when the run is being
// stopped: an unlabelled authorized_keys is a machine no one can log in to.
const relabelTimeout = 2 * time.Minute

// selinuxConfig is the target's SELinux configuration.
type selinuxConfig struct {
	Mode string // "enforcing", "permissive", "disabled" or "" (no file, no SELINUX=)
	Type string // SELINUXTYPE, the policy's directory under /etc/selinux
}

// readSELinuxConfig reads the target's /etc/selinux/config as libselinux
// does: the first SELINUX= and SELINUXTYPE= lines, values compared without
// regard to case. Quotes, which libselinux does not expect, are taken off
// rather than taken for a disabled SELinux.
func readSELinuxConfig(root *rootfs.Root) (selinuxConfig, error) {
	var c selinuxConfig
	b, err := root.ReadFile(selinuxConfigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"'`)
		switch strings.TrimSpace(key) {
		case "SELINUX":
			if c.Mode == "" {
				c.Mode = strings.ToLower(value)
			}
		case "SELINUXTYPE":
			if c.Type == "" {
				c.Type = value
			}
		}
	}
	if c.Type == "" {
		c.Type = "targeted"
	}
	return c, nil
}

// enabled: enforcing or permissive both label files; anything else is
// SELinux off, as libselinux treats a value it does not know.
func (c selinuxConfig) enabled() bool { return c.Mode == "enforcing" || c.Mode == "permissive" }

// policyLoaded reports whether the running kernel has an SELinux policy
// loaded, as seen from root: selinuxfs is mounted where libselinux looks
// for it in the target, and its class directory, which a policy load
// fills, is not empty. A restorecon chrooted into a target without it (the
// initramfs's /sysroot) would find SELinux disabled and label nothing.
func policyLoaded(root *rootfs.Root) bool {
	for _, mnt := range []string{"/sys/fs/selinux", "/selinux"} {
		p, err := root.HostPath(mnt)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(p, &st) != nil || uint32(st.Type) != unix.SELINUX_MAGIC {
			continue
		}
		entries, err := os.ReadDir(p + "/class")
		return err == nil && len(entries) > 0
	}
	return false
}

// apiMounts are directories that the booted system mounts its own
// filesystems on (and labels itself): what a run wrote there from the
// initramfs is hidden or gone by then, and no relabel reaches it.
var apiMounts = []string{"/dev", "/proc", "/run", "/sys"}

func underAPIMount(p string) bool {
	for _, m := range apiMounts {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

// relabel gives SELinux labels to what the run changed since the since-th
// change, where the target has SELinux configured. It returns warnings and
// errors for the run's report; what it did and why goes to the log.
func relabel(ctx context.Context, opts Options, st *apply.State, since int) (warnings, errs []string) {
	log := opts.Log.With("step", "selinux relabel")
	cfg, err := readSELinuxConfig(opts.Root)
	if err != nil {
		return nil, []string{fmt.Sprintf("selinux relabel: read %s: %v", selinuxConfigPath, err)}
	}
	if !cfg.enabled() {
		why := "SELINUX=" + cfg.Mode
		if cfg.Mode == "" {
			why = "no SELINUX= in " + selinuxConfigPath
		}
		log.Debug("nothing to do: SELinux is not configured in the target", "why", why)
		return nil, nil
	}
	touched := opts.Root.Touched(since)
	if len(touched) == 0 {
		log.Debug("nothing to do: the run changed nothing")
		return nil, nil
	}
	loaded := opts.SELinuxLoaded
	if loaded == nil {
		loaded = policyLoaded
	}
	var why string
	tool, hasTool := relabelTool(opts.Root, cfg)
	switch {
	case !opts.Sys.Live():
		why = "the target is not the running system, whose policy labels nothing in it"
	case !loaded(opts.Root):
		why = "no SELinux policy loaded, or none the target sees (initramfs, or before the real init)"
	case !hasTool:
		why = "the target has neither restorecon nor setfiles"
	default:
		paths := make([]string, len(touched))
		for i, t := range touched {
			paths[i] = t.Path
		}
		err := runRelabelTool(ctx, opts.Sys, tool, paths)
		if err == nil {
			log.Info("relabelled what the run changed", "tool", tool[0], "paths", len(paths),
				"why", "SELinux "+cfg.Mode+" in the target, policy loaded, target live")
			return nil, nil
		}
		why = err.Error()
		warnings = append(warnings, fmt.Sprintf("selinux relabel: %v; asking for a relabel at the next boot instead", err))
	}
	var fresh []string
	for _, t := range touched {
		if t.Fresh && !underAPIMount(t.Path) {
			fresh = append(fresh, t.Path)
		}
	}
	switch {
	case len(fresh) == 0:
		log.Info("nothing to relabel: every file the run replaced kept its label, and it made none", "why_not_restorecon", why)
		return warnings, nil
	case opts.Root.Exists(AutorelabelPath):
		log.Info("a relabel is already pending", "file", AutorelabelPath, "unlabelled", len(fresh), "why_not_restorecon", why)
		return warnings, nil
	case st.HasRun(autorelabelSem, apply.PerInstance):
		warnings = append(warnings, fmt.Sprintf("selinux relabel: %d new path(s) have no label (%s), but this instance had its relabel already; not asking again, which could make every boot a relabel: run restorecon on them",
			len(fresh), abbreviate(fresh, 5)))
		return warnings, nil
	}
	if err := opts.Root.WriteFile(AutorelabelPath, nil, 0o644, rootfs.KeepOwner); err != nil {
		return warnings, []string{fmt.Sprintf("selinux relabel: %v", err)}
	}
	if err := st.MarkRun(autorelabelSem, apply.PerInstance); err != nil {
		warnings = append(warnings, fmt.Sprintf("selinux relabel: record the request: %v", err))
	}
	log.Info("asked for a relabel at the next boot", "file", AutorelabelPath, "unlabelled", len(fresh), "why_not_restorecon", why)
	return warnings, nil
}

// relabelTool is the target's restorecon, or its setfiles with the policy's
// file contexts, as an argv prefix.
func relabelTool(root *rootfs.Root, cfg selinuxConfig) ([]string, bool) {
	if p, ok := apply.LookPath(root, "restorecon"); ok {
		return []string{p, "-i"}, true
	}
	if p, ok := apply.LookPath(root, "setfiles"); ok {
		return []string{p, "/etc/selinux/" + cfg.Type + "/contexts/files/file_contexts"}, true
	}
	return nil, false
}

// runRelabelTool runs tool on paths, a batch at a time. It gets its own
// deadline: a run that is being stopped still labels what it wrote.
func runRelabelTool(ctx context.Context, sys apply.System, tool, paths []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), relabelTimeout)
	defer cancel()
	for len(paths) > 0 {
		n := min(len(paths), relabelBatch)
		var out bytes.Buffer
		argv := append(append([]string{}, tool...), paths[:n]...)
		if err := sys.Run(ctx, apply.Command{Argv: argv, Output: &out}); err != nil {
			if msg := strings.TrimSpace(out.String()); msg != "" {
				return fmt.Errorf("%s: %w: %s", tool[0], err, abbreviate(strings.Split(msg, "\n"), 3))
			}
			return fmt.Errorf("%s: %w", tool[0], err)
		}
		paths = paths[n:]
	}
	return nil
}

// abbreviate joins the first n items and says how many more there are.
func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
