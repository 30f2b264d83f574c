package users

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// settings is a key-value file of shadow-utils: /etc/login.defs
// ("KEY value") or /etc/default/useradd ("KEY=value").
type settings map[string]string

// parseSettings reads both spellings; comments and blank lines are skipped
// and, as shadow-utils does, the last setting of a key wins.
func parseSettings(data []byte) settings {
	out := settings{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, found := strings.Cut(line, "=")
		if !found || strings.ContainsAny(key, " \t") {
			fields := strings.Fields(line)
			key, value = fields[0], ""
			if len(fields) > 1 {
				value = strings.Join(fields[1:], " ")
			}
		}
		out[strings.TrimSpace(key)] = strings.Trim(strings.TrimSpace(value), `"`)
	}
	return out
}

// number reads key like getdef_num: C's strtol with base 0 (so "022" is
// octal), def when absent or unparsable.
func (s settings) number(key string, def int) int {
	v, ok := s[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return def
	}
	return int(n)
}

func (s settings) str(key, def string) string {
	if v, ok := s[key]; ok && v != "" {
		return v
	}
	return def
}

func (s settings) boolean(key string, def bool) bool {
	v, ok := s[key]
	if !ok {
		return def
	}
	return strings.EqualFold(v, "yes")
}

// Policy is what useradd and groupadd read from /etc/login.defs and
// /etc/default/useradd, with shadow-utils' defaults (as Debian builds
// them) for what is missing.
type Policy struct {
	UIDMin, UIDMax, SysUIDMin, SysUIDMax int
	GIDMin, GIDMax, SysGIDMin, SysGIDMax int
	// UserGroups is USERGROUPS_ENAB: a user gets a group of its own name.
	UserGroups bool
	// HomeMode is the mode of a home directory useradd -m creates.
	HomeMode                              fs.FileMode
	PassMinDays, PassMaxDays, PassWarnAge int

	DefaultGroup    int
	HomeBase        string
	DefaultShell    string
	Skel            string
	DefaultInactive int
	DefaultExpire   string
}

// LoadPolicy reads the target's login.defs and useradd defaults; missing
// files mean the built-in defaults.
func LoadPolicy(root *rootfs.Root) (Policy, error) {
	read := func(name string) (settings, error) {
		data, err := root.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return settings{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read useradd settings: %w", err)
		}
		return parseSettings(data), nil
	}
	defs, err := read("/etc/login.defs")
	if err != nil {
		return Policy{}, err
	}
	useradd, err := read("/etc/default/useradd")
	if err != nil {
		return Policy{}, err
	}
	p := Policy{
		UIDMin: defs.number("UID_MIN", 1000),
		UIDMax: defs.number("UID_MAX", 60000),
		GIDMin: defs.number("GID_MIN", 1000),
		GIDMax: defs.number("GID_MAX", 60000),
	}
	p.SysUIDMin = defs.number("SYS_UID_MIN", 101)
	p.SysUIDMax = defs.number("SYS_UID_MAX", p.UIDMin-1)
	p.SysGIDMin = defs.number("SYS_GID_MIN", 101)
	p.SysGIDMax = defs.number("SYS_GID_MAX", p.GIDMin-1)
	p.UserGroups = defs.boolean("USERGROUPS_ENAB", true)
	umask := defs.number("UMASK", 0o22)
	// useradd chmods the home with HOME_MODE as it is, setgid included.
	p.HomeMode = rootfs.UnixMode(uint32(defs.number("HOME_MODE", 0o777&^umask)) & 0o7777)
	p.PassMinDays = defs.number("PASS_MIN_DAYS", -1)
	p.PassMaxDays = defs.number("PASS_MAX_DAYS", -1)
	p.PassWarnAge = defs.number("PASS_WARN_AGE", -1)

	p.DefaultGroup = useradd.number("GROUP", 100)
	p.HomeBase = useradd.str("HOME", "/home")
	// Debian ships SHELL=/bin/sh; a root without the file (busybox) has
	// /bin/sh too, where bash may be missing.
	p.DefaultShell = useradd.str("SHELL", "/bin/sh")
	p.Skel = useradd.str("SKEL", "/etc/skel")
	p.DefaultInactive = useradd.number("INACTIVE", -1)
	p.DefaultExpire = useradd.str("EXPIRE", "")
	return p, nil
}
