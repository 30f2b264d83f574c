package boot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// An appliance image often has /var, /home or /usr on filesystems of
// their own. Provisioning writes there (the keys under /home, the state
// under /var/lib/cloud, the logs under /var/log), so PID 1 mounts them
// first, from the target's own fstab, and takes them away again before
// the handoff: written under the bare mount points instead, the keys and
// the state would vanish once the real init mounts the filesystems over
// them, locking the admin out and provisioning again at the next boot.

// provisioningDirs are where provisioning writes: a filesystem mounted on
// one of them, or below one, is mounted for it.
var provisioningDirs = []string{"/boot", "/home", "/opt", "/root", "/srv", "/usr", "/var"}

// fstabEntry is one line of fstab(5).
type fstabEntry struct {
	Spec, File, Type, Options string
	Line                      int
}

// parseFstab reads fstab's fields; a line with fewer than three is
// reported by its number and skipped, as mount -a skips it.
func parseFstab(text string) ([]fstabEntry, []error) {
	var out []fstabEntry
	var errs []error
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			errs = append(errs, fmt.Errorf("/etc/fstab line %d: %q: want at least device, mount point and type", i+1, line))
			continue
		}
		e := fstabEntry{Spec: unescapeOctal(f[0]), File: unescapeOctal(f[1]), Type: f[2], Options: "defaults", Line: i + 1}
		if len(f) > 3 {
			e.Options = f[3]
		}
		out = append(out, e)
	}
	return out, errs
}

// virtualFSTypes are set up by the real init (or are not filesystems on
// a disk): never PID 1's to mount for provisioning.
var virtualFSTypes = map[string]bool{
	"swap": true, "tmpfs": true, "ramfs": true, "proc": true, "sysfs": true, "devpts": true,
	"devtmpfs": true, "cgroup": true, "cgroup2": true, "securityfs": true, "debugfs": true,
	"tracefs": true, "efivarfs": true, "mqueue": true, "hugetlbfs": true, "binfmt_misc": true,
	"configfs": true, "fusectl": true, "pstore": true, "bpf": true, "autofs": true,
	"overlay": true, "ignore": true,
}

// networkFSTypes need the network and a client the initramfs has not.
var networkFSTypes = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true, "ceph": true,
	"glusterfs": true, "9p": true, "afs": true, "davfs": true, "sshfs": true, "lustre": true,
	"ocfs2": true, "gfs2": true,
}

// skipReason says why PID 1 leaves an entry to the real init, or "" when
// it mounts it for provisioning.
func (e fstabEntry) skipReason() string {
	file := path.Clean(e.File)
	under := slices.ContainsFunc(provisioningDirs, func(d string) bool {
		return file == d || strings.HasPrefix(file, d+"/")
	})
	opts := strings.Split(e.Options, ",")
	t := strings.ToLower(e.Type)
	switch {
	case !strings.HasPrefix(file, "/") || !under:
		return "not where provisioning writes"
	case slices.Contains(opts, "noauto"):
		return "noauto"
	case slices.Contains(opts, "_netdev") || networkFSTypes[t] || strings.HasPrefix(t, "fuse") ||
		strings.HasPrefix(e.Spec, "//") || isHostColonPath(e.Spec):
		return "a network filesystem"
	case virtualFSTypes[t]:
		return "not a filesystem on a disk"
	case slices.Contains(opts, "loop"):
		return "a loop mount (needs losetup)"
	}
	return ""
}

// isHostColonPath spots NFS's "server:/export".
func isHostColonPath(spec string) bool {
	host, p, ok := strings.Cut(spec, ":")
	return ok && host != "" && !strings.Contains(host, "/") && !strings.Contains(host, "=") && strings.HasPrefix(p, "/")
}

// mountFlagOptions are the options mount(8) turns into mount(2) flags:
// set these, clear those.
var mountFlagOptions = map[string][2]uintptr{
	"defaults":    {0, unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_SYNCHRONOUS},
	"ro":          {unix.MS_RDONLY, 0},
	"rw":          {0, unix.MS_RDONLY},
	"nosuid":      {unix.MS_NOSUID, 0},
	"suid":        {0, unix.MS_NOSUID},
	"nodev":       {unix.MS_NODEV, 0},
	"dev":         {0, unix.MS_NODEV},
	"noexec":      {unix.MS_NOEXEC, 0},
	"exec":        {0, unix.MS_NOEXEC},
	"sync":        {unix.MS_SYNCHRONOUS, 0},
	"async":       {0, unix.MS_SYNCHRONOUS},
	"dirsync":     {unix.MS_DIRSYNC, 0},
	"noatime":     {unix.MS_NOATIME, 0},
	"atime":       {0, unix.MS_NOATIME},
	"nodiratime":  {unix.MS_NODIRATIME, 0},
	"diratime":    {0, unix.MS_NODIRATIME},
	"relatime":    {unix.MS_RELATIME, 0},
	"norelatime":  {0, unix.MS_RELATIME},
	"strictatime": {unix.MS_STRICTATIME, 0},
	"lazytime":    {unix.MS_LAZYTIME, 0},
	"nolazytime":  {0, unix.MS_LAZYTIME},
	"mand":        {unix.MS_MANDLOCK, 0},
	"nomand":      {0, unix.MS_MANDLOCK},
	"silent":      {unix.MS_SILENT, 0},
	"loud":        {0, unix.MS_SILENT},
	"bind":        {unix.MS_BIND, 0},
	"rbind":       {unix.MS_BIND | unix.MS_REC, 0},
}

// userspaceOptions are for mount(8) and the init system, not the kernel.
var userspaceOptions = map[string]bool{
	"auto": true, "noauto": true, "user": true, "nouser": true, "users": true, "owner": true,
	"group": true, "nofail": true, "_netdev": true, "noquota": true, "quota": true,
}

// mountArgs turns fstab options into mount(2)'s flags and data: what
// mount(8) would pass.
func mountArgs(options string) (flags uintptr, data string) {
	var rest []string
	for _, o := range strings.Split(options, ",") {
		if f, ok := mountFlagOptions[o]; ok {
			flags = flags&^f[1] | f[0]
			continue
		}
		if o == "" || userspaceOptions[o] || strings.HasPrefix(o, "x-") || strings.HasPrefix(o, "X-") ||
			strings.HasPrefix(o, "comment=") {
			continue
		}
		rest = append(rest, o)
	}
	return flags, strings.Join(rest, ",")
}

// fstabDeviceWait bounds the wait for the device of an fstab entry that
// is not nofail: module loading has run by then, so a device that is not
// there within it is missing, and the boot goes on without it.
const fstabDeviceWait = 5 * time.Second

// mountTargetFilesystems mounts the target's local fstab filesystems that
// provisioning writes to. Every entry is tried; the errors are joined.
func (p *PID1) mountTargetFilesystems(root *rootfs.Root) error {
	b, err := root.ReadFile("/etc/fstab")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	entries, errs := parseFstab(string(b))
	for _, e := range entries {
		if why := e.skipReason(); why != "" {
			p.Log.Debug("fstab entry left to the real init", "line", e.Line, "mount_point", e.File, "why", why)
			continue
		}
		if err := p.mountFstabEntry(root, e); err != nil {
			errs = append(errs, fmt.Errorf("/etc/fstab line %d (%s on %s): %w", e.Line, e.Spec, e.File, err))
		}
	}
	return errors.Join(errs...)
}

func (p *PID1) mountFstabEntry(root *rootfs.Root, e fstabEntry) error {
	dir, err := root.HostPath(e.File)
	if err != nil {
		return err
	}
	if root.Exists(e.File) && isMountPoint(dir) {
		return nil // mounted already (a real root the kernel was given with it)
	}
	flags, data := mountArgs(e.Options)
	nofail := slices.Contains(strings.Split(e.Options, ","), "nofail")
	var source string
	types := []string{e.Type}
	if flags&unix.MS_BIND != 0 {
		// A bind mount's source is a directory in the target itself.
		if source, err = root.HostPath(e.Spec); err != nil {
			return err
		}
		types = []string{""}
	} else {
		wait := fstabDeviceWait
		if nofail {
			wait = 0
		}
		source, err = WaitRoot(context.Background(), e.Spec, FindRoot, wait)
		if err != nil {
			if nofail {
				p.Log.Info("fstab device not there; it is nofail", "line", e.Line, "device", e.Spec, "mount_point", e.File)
				return nil
			}
			return err
		}
		switch e.Type {
		case "auto", "":
			types = candidateTypes()
		default:
			p.loadModule("fs-" + e.Type)
		}
	}
	if err := root.MkdirAll(e.File, 0o755, rootfs.Owner{UID: 0, GID: 0}); err != nil {
		return err
	}
	var tried []string
	for _, t := range types {
		err := p.Mounter.Mount(source, dir, t, flags, data)
		if err == nil {
			p.Log.Info("mounted the target's filesystem for provisioning", "device", source, "mount_point", e.File, "type", t)
			return nil
		}
		tried = append(tried, strings.TrimPrefix(t+": ", ": ")+err.Error())
	}
	return fmt.Errorf("mount %s on %s: %s", source, e.File, strings.Join(tried, "; "))
}
