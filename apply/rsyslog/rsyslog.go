// Package rsyslog is cloud-init's rsyslog module: rsyslog configuration
// snippets and remote forwarding rules written under /etc/rsyslog.d, then
// rsyslog reloaded on a live system.
package rsyslog

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// cloud-init 22.4.2's defaults.
const (
	DefaultDir      = "/etc/rsyslog.d"
	DefaultFilename = "20-cloud-config.conf"
	DefaultReload   = "auto"

	remotesHeader = "# begin remotes"
	remotesFooter = "# end remotes"
	serviceName   = "rsyslog"
)

func init() {
	apply.Register(apply.Module{
		Name:      "rsyslog",
		Frequency: apply.PerInstance,
		// rsyslog_filename and rsyslog_dir go with the legacy list form.
		Keys: []string{"rsyslog", "rsyslog_filename", "rsyslog_dir"},
		Run:  run,
	})
}

// Config is the rsyslog key after cloud-init's load_config: the legacy
// list form turned into the dict form and the defaults filled in.
type Config struct {
	// Configs are strings or {filename, content} maps, in order.
	Configs  []any
	Dir      string
	Filename string
	// Reload is "auto", another string (run as one program name, as
	// cloud-init's subp does with a string) or an argv.
	Reload any
	// Remotes maps a name to a "[selector] [@|@@]host[:port]" line.
	Remotes map[string]any
}

// LoadConfig reads cfg's rsyslog key (and, for the legacy list form, the
// top-level rsyslog_filename and rsyslog_dir) as cloud-init's load_config
// does. A key of the wrong type is an error, as it is for cloud-init.
func LoadConfig(cfg apply.Config) (Config, error) {
	raw := map[string]any{}
	switch v := cfg["rsyslog"].(type) {
	case map[string]any:
		raw = v
	case []any:
		raw["configs"] = v
		if fn, ok := cfg["rsyslog_filename"]; ok {
			raw["config_filename"] = fn
		}
		if dir, ok := cfg["rsyslog_dir"]; ok {
			raw["config_dir"] = dir
		}
	default:
		return Config{}, fmt.Errorf("read rsyslog: want a dict or a list, got %s", apply.TypeName(v))
	}
	out := Config{Configs: []any{}, Dir: DefaultDir, Filename: DefaultFilename, Reload: DefaultReload, Remotes: map[string]any{}}
	var errs []error
	wrongType := func(key, want string, v any) {
		errs = append(errs, fmt.Errorf("read rsyslog.%s: want %s, got %s", key, want, apply.TypeName(v)))
	}
	if v, ok := raw["configs"]; ok {
		if l, ok := v.([]any); ok {
			out.Configs = l
		} else {
			wrongType("configs", "a list", v)
		}
	}
	if v, ok := raw["config_dir"]; ok {
		if s, ok := v.(string); ok {
			out.Dir = s
		} else {
			wrongType("config_dir", "a string", v)
		}
	}
	if v, ok := raw["config_filename"]; ok {
		if s, ok := v.(string); ok {
			out.Filename = s
		} else {
			wrongType("config_filename", "a string", v)
		}
	}
	if v, ok := raw["service_reload_command"]; ok {
		switch v.(type) {
		case string, []any:
			out.Reload = v
		default:
			wrongType("service_reload_command", "a string or a list", v)
		}
	}
	if v, ok := raw["remotes"]; ok {
		if m, ok := v.(map[string]any); ok {
			out.Remotes = m
		} else {
			wrongType("remotes", "a dict", v)
		}
	}
	return out, errors.Join(errs...)
}

// RenderRemotes is cloud-init's remotes_to_rsyslog_cfg with its header and
// footer: one line per remote in names' order. Empty values are left out
// as cloud-init leaves them out; a line that does not parse is reported in
// skipped (cloud-init warns and goes on) and a value that is not a string
// in errs (cloud-init fails there).
func RenderRemotes(names []string, remotes map[string]any) (text string, skipped, errs []error) {
	lines := []string{remotesHeader}
	for _, name := range names {
		v := remotes[name]
		if !yaml11.Truthy(v) {
			continue
		}
		line, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("read rsyslog.remotes.%s: want a string, got %s", name, apply.TypeName(v)))
			continue
		}
		r, err := ParseRemote(line, name)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("read rsyslog.remotes.%s: %w", name, err))
			continue
		}
		lines = append(lines, r.String())
	}
	lines = append(lines, remotesFooter)
	return strings.Join(lines, "\n") + "\n", skipped, errs
}

// File is one file the configs produce, with its content in order.
type File struct {
	Path    string
	Content string
}

// BuildFiles is cloud-init's apply_rsyslog_changes without the writing:
// each entry's content, newline-terminated, goes into its file (the
// default file unless the entry names one), files in the order first
// named. Entries that cannot be used are left out, the others still
// count: in warnings where cloud-init warns, in errs where it fails.
func BuildFiles(configs []any, defaultFilename, dir string) (files []File, warnings, errs []error) {
	index := map[string]int{}
	for i, entry := range configs {
		pos := i + 1
		var content any = entry
		var filenameValue any = defaultFilename
		if m, ok := entry.(map[string]any); ok {
			c, ok := m["content"]
			if !ok {
				warnings = append(warnings, fmt.Errorf("read rsyslog.configs entry %d: no 'content' entry", pos))
				continue
			}
			content = c
			if fn, ok := m["filename"]; ok {
				filenameValue = fn
			}
		}
		filename, ok := filenameValue.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("read rsyslog.configs entry %d: filename: want a string, got %s", pos, apply.TypeName(filenameValue)))
			continue
		}
		filename = strings.TrimFunc(filename, isPySpace)
		if filename == "" {
			warnings = append(warnings, fmt.Errorf("read rsyslog.configs entry %d: empty filename", pos))
			continue
		}
		text, ok := content.(string)
		if !ok {
			warnings = append(warnings, fmt.Errorf("read rsyslog.configs entry %d: content: want a string, got %s", pos, apply.TypeName(content)))
			continue
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		name := joinPath(dir, filename)
		if at, seen := index[name]; seen {
			files[at].Content += text
			continue
		}
		index[name] = len(files)
		files = append(files, File{Path: name, Content: text})
	}
	return files, warnings, errs
}

// joinPath is os.path.join as cloud-init uses it: an absolute filename
// replaces the directory. Relative directories are taken from the target's
// root, since there is no working directory to be relative to.
func joinPath(dir, filename string) string {
	if strings.HasPrefix(filename, "/") {
		return path.Clean(filename)
	}
	return path.Join("/", dir, filename)
}

func run(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("rsyslog") {
		return apply.Skip("no rsyslog in the config")
	}
	cfg, err := LoadConfig(env.Config)
	if err != nil {
		return err
	}
	var errs []error
	configs := cfg.Configs
	if len(cfg.Remotes) > 0 {
		text, skipped, remoteErrs := RenderRemotes(remoteOrder(env, cfg.Remotes), cfg.Remotes)
		for _, e := range skipped {
			env.Warn("rsyslog: skipping remote: %v", e)
		}
		errs = append(errs, remoteErrs...)
		configs = append(append([]any{}, configs...), text)
	}
	if len(configs) == 0 {
		env.Log.Debug("rsyslog: no configs and no remotes, nothing to do")
		return errors.Join(errs...)
	}
	files, warnings, fileErrs := BuildFiles(configs, cfg.Filename, cfg.Dir)
	for _, w := range warnings {
		env.Warn("rsyslog: skipping entry: %v", w)
	}
	errs = append(errs, fileErrs...)
	var written []string
	for _, f := range files {
		if err := writeConfig(env.Root, f); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, f.Path)
	}
	if len(written) == 0 {
		env.Log.Debug("rsyslog: no files written, not reloading")
		return errors.Join(errs...)
	}
	env.Log.Info("rsyslog: configured", "files", written)
	if err := reload(ctx, env, cfg.Reload); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func writeConfig(root *rootfs.Root, f File) error {
	if err := root.MkdirAll(path.Dir(f.Path), 0o755, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write rsyslog config %s: %w", f.Path, err)
	}
	if _, err := root.WriteFileIfChanged(f.Path, []byte(f.Content), 0o644, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write rsyslog config %s: %w", f.Path, err)
	}
	return nil
}

// reload restarts rsyslog on a live system. A reload that fails is a
// warning, as in cloud-init: the files are in place for the next start.
func reload(ctx context.Context, env *apply.Env, command any) error {
	argv, err := ReloadCommand(command, env.Root.Exists("/run/systemd/system"))
	if err != nil {
		return err
	}
	if !env.Sys.Live() {
		env.Log.Info("rsyslog: not reloading rsyslog, the target is not the running system", "command", argv)
		return nil
	}
	var out strings.Builder
	if err := env.Sys.Run(ctx, apply.Command{Argv: argv, Output: &out}); err != nil {
		env.Warn("rsyslog: reload with %q failed: %v: %s", argv, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ReloadCommand is the argv cloud-init runs for service_reload_command:
// "auto" means systemctl reload-or-try-restart with systemd, the service
// script otherwise; another string is a single program name (cloud-init
// runs it without a shell); a list is the argv.
func ReloadCommand(command any, systemd bool) ([]string, error) {
	switch c := command.(type) {
	case string:
		if c != DefaultReload {
			return []string{c}, nil
		}
		if systemd {
			return []string{"systemctl", "reload-or-try-restart", serviceName}, nil
		}
		return []string{"service", serviceName, "restart"}, nil
	case []any:
		if len(c) == 0 {
			return nil, errors.New("read rsyslog.service_reload_command: empty list")
		}
		argv := make([]string, 0, len(c))
		for i, a := range c {
			s, ok := a.(string)
			if !ok {
				return nil, fmt.Errorf("read rsyslog.service_reload_command item %d: want a string, got %s", i, apply.TypeName(a))
			}
			argv = append(argv, s)
		}
		return argv, nil
	}
	return nil, fmt.Errorf("read rsyslog.service_reload_command: want a string or a list, got %s", apply.TypeName(command))
}

// remoteOrder recovers the order the remotes were written in, which
// cloud-init keeps (a Python dict) and the decoded config loses: by the
// first cloud-config part (user-data, then vendor-data) that names a
// remote, then by line. Remotes found in no part come last, sorted.
func remoteOrder(env *apply.Env, remotes map[string]any) []string {
	type place struct{ part, line int }
	places := map[string]place{}
	partNo := 0
	for _, p := range []*seed.Processed{env.UserData, env.VendorData} {
		if p == nil {
			continue
		}
		for _, part := range p.Parts {
			if part.Kind != seed.KindCloudConfig {
				continue
			}
			partNo++
			lines, err := yaml11.Lines(part.Content)
			if err != nil {
				continue
			}
			for name := range remotes {
				if _, done := places[name]; done {
					continue
				}
				if line, ok := lines["rsyslog.remotes."+name]; ok {
					places[name] = place{partNo, line}
				}
			}
		}
	}
	names := make([]string, 0, len(remotes))
	for name := range remotes {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		pi, iok := places[names[i]]
		pj, jok := places[names[j]]
		switch {
		case iok && jok && pi != pj:
			if pi.part != pj.part {
				return pi.part < pj.part
			}
			return pi.line < pj.line
		case iok != jok:
			return iok
		}
		return names[i] < names[j]
	})
	return names
}
