package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

const (
	debianLocaleFile  = "/etc/default/locale"
	systemdLocaleFile = "/etc/locale.conf"
	defaultLocale     = "en_US.UTF-8"
)

func runLocale(ctx context.Context, env *apply.Env) error {
	family := readOSRelease(env.Root).family()
	file, _, err := env.Config.String("locale_configfile")
	if err != nil {
		return fmt.Errorf("read locale_configfile: %w", err)
	}
	if file == "" {
		file = localeFileFor(env.Root, family)
	}
	locale, asked := "", false
	if v, ok := env.Config["locale"]; ok && v != nil {
		asked = true
		if b, isBool := v.(bool); isBool && !b {
			return apply.Skip("locale is false")
		}
		s, err := apply.AsString(v)
		if err != nil {
			return fmt.Errorf("read locale: %w", err)
		}
		if off, err := apply.AsBool(s); err == nil && !off {
			return apply.Skip("locale is %q", s)
		}
		locale = s
	}
	if locale == "" {
		// Without a locale in the config cloud-init keeps the one the image
		// has, or sets its default when the image has none.
		locale = readShellVar(env.Root, file, "LANG")
		if locale == "" {
			locale = defaultLocale
		}
	}
	if family == "debian" && !isBuiltinLocale(locale) && compiledLocale(env.Root, locale) != localeCompiled {
		if _, ok := apply.LookPath(env.Root, "locale-gen"); !ok {
			// Writing a LANG the C library lacks would make every login
			// complain (Cannot set LC_CTYPE); the system stays as it is.
			// Only a locale the user asked for is worth a warning.
			if asked {
				env.Warn("locale %q: the image has no locale-gen (Debian's locales package) to compile it; %s keeps its LANG", locale, file)
				return nil
			}
			return apply.Skip("the default locale %q is not compiled and the image has no locale-gen to compile it; %s left as it is", locale, file)
		}
		if err := generateLocale(ctx, env, locale); err != nil {
			env.Warn("%v; %s keeps its LANG", err, file)
			return nil
		} else if compiledLocale(env.Root, locale) == localeMissing {
			// A LANG naming a locale the C library lacks makes every
			// program's setlocale fail; update-locale refuses it too.
			env.Warn("locale %q is not compiled even after locale-gen (not a locale this image supports?); %s keeps its LANG", locale, file)
			return nil
		}
	}
	changed, err := SetShellVar(env.Root, file, "LANG", locale)
	if err != nil {
		return fmt.Errorf("set locale %q: %w", locale, err)
	}
	if changed {
		env.Log.Info("locale set", "locale", locale, "file", file)
	}
	return nil
}

// localeFileFor is where the target keeps its LANG: Debian's
// /etc/default/locale, systemd's /etc/locale.conf elsewhere, and on a
// target of unknown family whichever of the two it already has.
func localeFileFor(root *rootfs.Root, family string) string {
	switch family {
	case "debian":
		return debianLocaleFile
	case "rhel", "suse", "arch", "gentoo":
		return systemdLocaleFile
	}
	if root.Exists(systemdLocaleFile) && !root.Exists(debianLocaleFile) {
		return systemdLocaleFile
	}
	return debianLocaleFile
}

func isBuiltinLocale(l string) bool {
	switch strings.ToLower(l) {
	case "c", "c.utf-8", "c.utf8", "posix":
		return true
	}
	return false
}

// generateLocale compiles a locale the target lacks with its locale-gen,
// given the locale as cloud-init gives it (Ubuntu's locale-gen builds its
// arguments) and enabled in /etc/locale.gen first (Debian's builds what
// that file lists and ignores its arguments, so cloud-init 22.4's call
// builds nothing there and its update-locale then refuses the locale).
func generateLocale(ctx context.Context, env *apply.Env, locale string) error {
	bin, ok := apply.LookPath(env.Root, "locale-gen")
	if !ok {
		return fmt.Errorf("generate locale %q: locale-gen is not available on this image", locale)
	}
	if err := enableLocaleGen(env.Root, locale); err != nil {
		return fmt.Errorf("generate locale %q: %w", locale, err)
	}
	var out bytes.Buffer
	if err := env.Sys.Run(ctx, apply.Command{Argv: []string{bin, locale}, Output: &out}); err != nil {
		return fmt.Errorf("generate locale %q: %s: %w: %s", locale, bin, err, strings.TrimSpace(out.String()))
	}
	return nil
}

const (
	localeGenFile   = "/etc/locale.gen"
	supportedLocale = "/usr/share/i18n/SUPPORTED"
)

// enableLocaleGen makes /etc/locale.gen list locale: its commented line
// is uncommented, or the line the C library's list of supported locales
// has for it is added. A target without locale.gen (Ubuntu keeps its
// list elsewhere) or a locale in neither file is left alone for
// locale-gen to judge.
func enableLocaleGen(root *rootfs.Root, locale string) error {
	data, err := root.ReadFile(localeGenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", localeGenFile, err)
	}
	want := normalizeLocale(locale)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		fields := strings.Fields(strings.TrimLeft(line, "# \t"))
		if len(fields) != 2 || normalizeLocale(fields[0]) != want {
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			return nil
		}
		lines[i] = fields[0] + " " + fields[1]
		return writeLocaleGen(root, lines)
	}
	supported, err := root.ReadFile(supportedLocale)
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(supported), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 && normalizeLocale(fields[0]) == want {
			return writeLocaleGen(root, append(lines, fields[0]+" "+fields[1]))
		}
	}
	return nil
}

func writeLocaleGen(root *rootfs.Root, lines []string) error {
	if _, err := root.WriteFileIfChanged(localeGenFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("enable the locale in %s: %w", localeGenFile, err)
	}
	return nil
}

// readShellVar reads KEY=value from a shell-style file; a missing file or
// key reads as "".
func readShellVar(root *rootfs.Root, file, key string) string {
	data, err := root.ReadFile(file)
	if err != nil {
		return ""
	}
	value := ""
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimPrefix(k, "export ") == key {
			value = unquoteShell(strings.TrimSpace(v))
		}
	}
	return value
}

// SetShellVar sets KEY=value in a shell-style file the way update-locale
// does: the key's line is replaced in place, other lines are kept, and the
// key is appended when missing.
func SetShellVar(root *rootfs.Root, file, key, value string) (bool, error) {
	data, err := root.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	if strings.ContainsAny(value, "\n\x00") {
		return false, fmt.Errorf("set %s in %s: the value holds a newline", key, file)
	}
	entry := key + "=" + shellQuote(value)
	var kept []string
	found := false
	if text := strings.TrimSuffix(string(data), "\n"); text != "" {
		for _, line := range strings.Split(text, "\n") {
			k, _, ok := strings.Cut(strings.TrimSpace(line), "=")
			if ok && strings.TrimPrefix(k, "export ") == key {
				if found {
					continue // a second assignment would override ours
				}
				line, found = entry, true
			}
			kept = append(kept, line)
		}
	}
	if !found {
		kept = append(kept, entry)
	}
	changed, err := root.WriteFileIfChanged(file, []byte(strings.Join(kept, "\n")+"\n"), 0o644, rootfs.KeepOwner)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", file, err)
	}
	return changed, nil
}

// shellQuote quotes a value only when the shell would split or expand it.
func shellQuote(v string) string {
	if v != "" && !strings.ContainsFunc(v, unicode.IsSpace) && !strings.ContainsAny(v, "'\"\\$`;&|<>()*?[]#~!{}=") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(v) + `"`
}
