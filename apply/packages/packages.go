// Package packages holds the package-manager modules:
// package_update_upgrade_install (apt, apk, dnf/yum, zypper run chrooted
// in the target), apk_configure (/etc/apk/repositories), apt_configure
// (proxy, apt.conf and sources.list.d entries) and yum_add_repo
// (/etc/yum.repos.d). A target without the package manager gets a clear
// "not available on this image" warning rather than a failure.
package packages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/console"
)

func init() {
	apply.Register(apply.Module{Name: "package_update_upgrade_install", Frequency: apply.PerInstance,
		Keys: []string{"packages", "package_update", "package_upgrade", "package_reboot_if_required",
			"apt_update", "apt_upgrade", "apt_reboot_if_required"},
		Run: runPackages})
	apply.Register(apply.Module{Name: "apk_configure", Frequency: apply.PerInstance, Keys: []string{"apk_repos"}, Run: runAPKConfigure})
	apply.Register(apply.Module{Name: "apt_configure", Frequency: apply.PerInstance, Keys: []string{"apt"}, Run: runAPTConfigure})
	apply.Register(apply.Module{Name: "yum_add_repo", Frequency: apply.PerInstance, Keys: []string{"yum_repos", "yum_repo_dir"}, Run: runYumAddRepo})
}

// rebootRequiredFile is where Debian's packages ask for a reboot.
const rebootRequiredFile = "/var/run/reboot-required"

// Manager is a package manager's command lines, as cloud-init's distro
// classes build them.
type Manager struct {
	Name string
	// Update refreshes the package index, Upgrade upgrades everything,
	// Install is followed by the packages.
	Update, Upgrade, Install []string
	// VersionFormat joins a [name, version] pair ("%s=%s" for apt).
	VersionFormat string
	Env           []string
}

// DetectManager finds the target's package manager: apt-get, apk, dnf,
// yum or zypper, in that order.
func DetectManager(env *apply.Env) (Manager, bool) {
	if apt, ok := apply.LookPath(env.Root, "apt-get"); ok {
		base := []string{apt, "--option=Dpkg::Options::=--force-confold", "--option=Dpkg::options::=--force-unsafe-io", "--assume-yes", "--quiet"}
		if emd, ok := apply.LookPath(env.Root, "eatmydata"); ok {
			base = append([]string{emd}, base...)
		}
		return Manager{
			Name: "apt", Update: cat(base, "update"), Upgrade: cat(base, "dist-upgrade"), Install: cat(base, "install"),
			VersionFormat: "%s=%s", Env: []string{"DEBIAN_FRONTEND=noninteractive"},
		}, true
	}
	if apk, ok := apply.LookPath(env.Root, "apk"); ok {
		return Manager{
			Name: "apk", Update: []string{apk, "--quiet", "update"}, Upgrade: []string{apk, "--quiet", "upgrade", "--update-cache", "--available"},
			Install: []string{apk, "--quiet", "add"}, VersionFormat: "%s-%s",
		}, true
	}
	for _, name := range []string{"dnf", "yum"} {
		if bin, ok := apply.LookPath(env.Root, name); ok {
			base := []string{bin}
			if name == "yum" {
				base = append(base, "-t")
			}
			base = append(base, "-y")
			return Manager{Name: name, Update: cat(base, "makecache"), Upgrade: cat(base, "upgrade"), Install: cat(base, "install"), VersionFormat: "%s-%s"}, true
		}
	}
	if z, ok := apply.LookPath(env.Root, "zypper"); ok {
		base := []string{z, "--non-interactive"}
		return Manager{Name: "zypper", Update: cat(base, "refresh"), Upgrade: cat(base, "update"), Install: cat(base, "install", "--auto-agree-with-licenses"), VersionFormat: "%s=%s"}, true
	}
	return Manager{}, false
}

func cat(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}

// ExpandPackages turns the packages list into arguments: names as they
// are, [name, version] pairs joined with format, [name] as the name.
func ExpandPackages(list []any, format string) ([]string, error) {
	var out []string
	var errs []error
	for i, item := range list {
		switch v := item.(type) {
		case []any:
			if len(v) < 1 || len(v) > 2 {
				errs = append(errs, fmt.Errorf("read packages: item %d: want [name] or [name, version]", i))
				continue
			}
			name, err := apply.AsString(v[0])
			if err != nil {
				errs = append(errs, fmt.Errorf("read packages: item %d: %w", i, err))
				continue
			}
			if len(v) == 2 && v[1] != nil && v[1] != "" {
				version, err := apply.AsString(v[1])
				if err != nil {
					errs = append(errs, fmt.Errorf("read packages: item %d: %w", i, err))
					continue
				}
				name = fmt.Sprintf(format, name, version)
			}
			out = append(out, name)
		default:
			s, err := apply.AsString(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("read packages: item %d: want a name or [name, version], got %s", i, apply.TypeName(item)))
				continue
			}
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

func anyTrue(cfg apply.Config, keys ...string) (bool, error) {
	for _, k := range keys {
		v, err := cfg.Bool(k, false)
		if err != nil {
			return false, fmt.Errorf("read %w", err)
		}
		if v {
			return true, nil
		}
	}
	return false, nil
}

func runPackages(ctx context.Context, env *apply.Env) error {
	update, err := anyTrue(env.Config, "apt_update", "package_update")
	if err != nil {
		return err
	}
	upgrade, err := anyTrue(env.Config, "package_upgrade", "apt_upgrade")
	if err != nil {
		return err
	}
	rebootIfRequired, err := anyTrue(env.Config, "apt_reboot_if_required", "package_reboot_if_required")
	if err != nil {
		return err
	}
	var list []any
	if v, ok := env.Config["packages"]; ok && v != nil {
		if l, isList := v.([]any); isList {
			list = l
		} else {
			list = []any{v}
		}
	}
	if !update && !upgrade && len(list) == 0 {
		return apply.Skip("no packages, package_update or package_upgrade")
	}
	m, ok := DetectManager(env)
	if !ok {
		env.Warn("package_update_upgrade_install: no package manager (apt-get, apk, dnf, yum, zypper) is available on this image; packages not installed: %v", list)
		return apply.Skip("no package manager on this image")
	}
	pkgs, err := ExpandPackages(list, m.VersionFormat)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	run := func(what string, argv []string) {
		var out bytes.Buffer
		if err := env.Sys.Run(ctx, apply.Command{Argv: argv, Env: m.Env, Output: &out}); err != nil {
			errs = append(errs, fmt.Errorf("%s with %s: %w: %s", what, m.Name, err, lastLines(out.String(), 5)))
		}
	}
	// The index is refreshed for installs and upgrades too, as cloud-init does.
	run("update the package index", m.Update)
	if upgrade {
		run("upgrade packages", m.Upgrade)
	}
	if len(pkgs) > 0 {
		run("install "+strings.Join(pkgs, " "), cat(m.Install, pkgs...))
	}
	if (upgrade || len(pkgs) > 0) && rebootIfRequired && env.Root.Exists(rebootRequiredFile) {
		if err := requestReboot(ctx, env); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// requestReboot asks the System to reboot after seedinit's work, as
// cloud-init reboots when a package left /var/run/reboot-required.
func requestReboot(ctx context.Context, env *apply.Env) error {
	ps, ok := env.Sys.(console.PowerScheduler)
	if !ok {
		env.Warn("package_update_upgrade_install: %s asks for a reboot, but this system cannot reboot the machine", rebootRequiredFile)
		return nil
	}
	env.Log.Warn("rebooting after package upgrade or install", "file", rebootRequiredFile)
	req := console.PowerRequest{Mode: "reboot", Command: []string{"shutdown", "-r", "now"}}
	if err := ps.SchedulePowerState(ctx, req); err != nil {
		return fmt.Errorf("reboot as %s asks: %w", rebootRequiredFile, err)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// urlCredentials finds user:password@ in URLs (apt sources, proxies, yum
// baseurls), which must reach neither messages nor world-readable files.
var urlCredentials = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(://)[^/@\s]+@`) })

// hideCredentials masks the credentials of every URL in s.
func hideCredentials(s string) string { return urlCredentials().ReplaceAllString(s, "${1}REDACTED@") }

// fileMode is 0600 for a file that holds credentials, 0644 otherwise.
func fileMode(text string, secret bool) fs.FileMode {
	if secret || urlCredentials().MatchString(text) {
		return 0o600
	}
	return 0o644
}
