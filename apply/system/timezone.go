package system

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

const (
	zoneinfoDir   = "/usr/share/zoneinfo"
	timezoneFile  = "/etc/timezone"
	localtimeFile = "/etc/localtime"
)

func runTimezone(ctx context.Context, env *apply.Env) error {
	tz, ok, err := env.Config.String("timezone")
	if err != nil {
		return fmt.Errorf("read timezone: %w", err)
	}
	if !ok || tz == "" {
		return apply.Skip("no timezone in the config")
	}
	return SetTimezone(env.Root, tz, readOSRelease(env.Root).family())
}

// SetTimezone points /etc/localtime at the zone's file inside the target
// (a link, or a copy when /etc/localtime is a regular file, as cloud-init
// does) and writes /etc/timezone on the distros that keep one.
func SetTimezone(root *rootfs.Root, tz, family string) error {
	if tz != strings.TrimSpace(tz) || strings.HasPrefix(tz, "/") || strings.Contains("/"+tz+"/", "/../") {
		return fmt.Errorf("set timezone %q: not a zone name", tz)
	}
	zoneFile := path.Join(zoneinfoDir, tz)
	fi, err := root.Stat(zoneFile)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("set timezone %q: invalid timezone, no file found at %s in the target", tz, zoneFile)
	}
	// systemd-based RHEL and SUSE set only /etc/localtime (timedatectl);
	// Debian, Ubuntu and Alpine also keep the name in /etc/timezone.
	if family != "rhel" && family != "suse" && family != "arch" {
		if _, err := root.WriteFileIfChanged(timezoneFile, []byte(tz+"\n"), 0o644, rootfs.Owner{}); err != nil {
			return fmt.Errorf("set timezone %q: write %s: %w", tz, timezoneFile, err)
		}
	}
	lfi, err := root.Lstat(localtimeFile)
	switch {
	case err == nil && lfi.Mode()&fs.ModeSymlink != 0:
		if dest, err := root.Readlink(localtimeFile); err == nil && dest == zoneFile {
			return nil
		}
		if err := root.Remove(localtimeFile); err != nil {
			return fmt.Errorf("set timezone %q: remove the old %s: %w", tz, localtimeFile, err)
		}
	case err == nil:
		data, err := root.ReadFile(zoneFile)
		if err != nil {
			return fmt.Errorf("set timezone %q: read %s: %w", tz, zoneFile, err)
		}
		if _, err := root.WriteFileIfChanged(localtimeFile, data, 0o644, rootfs.KeepOwner); err != nil {
			return fmt.Errorf("set timezone %q: copy %s to %s: %w", tz, zoneFile, localtimeFile, err)
		}
		return nil
	}
	if err := root.Symlink(zoneFile, localtimeFile); err != nil {
		return fmt.Errorf("set timezone %q: link %s: %w", tz, localtimeFile, err)
	}
	return nil
}
