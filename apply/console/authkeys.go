package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/ssh"
	"github.com/seedinit/seedinit/apply/users"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func runAuthkeyFingerprints(ctx context.Context, env *apply.Env) error {
	if off, err := env.Config.Bool("no_ssh_fingerprints", false); err != nil {
		return fmt.Errorf("read no_ssh_fingerprints: %w", err)
	} else if off {
		return apply.Skip("no_ssh_fingerprints is true")
	}
	hash := "sha256"
	if h, ok, err := env.Config.String("authkey_hash"); err != nil {
		return fmt.Errorf("read authkey_hash: %w", err)
	} else if ok {
		hash = h
	}
	names, err := consoleUsers(env.Config)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range names {
		file, lines, err := authorizedKeys(env.Root, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := io.WriteString(env.Console, ssh.FingerprintTable(name, file, lines, hash)); err != nil {
			errs = append(errs, fmt.Errorf("write the key fingerprints of %s to the console: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// consoleUsers are the users whose keys cloud-init shows: the configured
// users (the default user for "default", user:), minus system users and
// users without a home.
func consoleUsers(cfg apply.Config) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	addDefault := func() error {
		name, err := ssh.DefaultUser(cfg)
		if err != nil {
			return fmt.Errorf("find the default user: %w", err)
		}
		add(name)
		return nil
	}
	var errs []error
	if v, ok := cfg["user"]; ok && v != nil {
		switch u := v.(type) {
		case string:
			add(u)
		case map[string]any:
			if n, err := apply.AsString(u["name"]); err == nil {
				add(n)
			}
		}
	}
	switch v := cfg["users"].(type) {
	case nil:
	case string:
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "default" {
				if err := addDefault(); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			add(n)
		}
	case []any:
		for i, item := range v {
			switch u := item.(type) {
			case string:
				if u == "default" {
					if err := addDefault(); err != nil {
						errs = append(errs, err)
					}
					continue
				}
				add(u)
			case map[string]any:
				c := apply.Config(u)
				name, _, err := c.String("name")
				if err != nil || name == "" {
					errs = append(errs, fmt.Errorf("read users: item %d: no name", i))
					continue
				}
				noHome, _ := c.Bool("no_create_home", false)
				system, _ := c.Bool("system", false)
				if noHome || system {
					continue
				}
				if name == "default" {
					if err := addDefault(); err != nil {
						errs = append(errs, err)
					}
					continue
				}
				add(name)
			default:
				errs = append(errs, fmt.Errorf("read users: item %d: want a name or a mapping, got %s", i, apply.TypeName(item)))
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "default" {
				if err := addDefault(); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			add(k)
		}
	default:
		errs = append(errs, fmt.Errorf("read users: want a list, mapping or string, got %s", apply.TypeName(v)))
	}
	return out, errors.Join(errs...)
}

// authorizedKeys finds a user's authorized keys file as cloud-init's
// extract_authorized_keys does (sshd_config's AuthorizedKeysFile, the
// first entry inside the user's home, else ~/.ssh/authorized_keys) and
// returns its lines; a missing file has none.
func authorizedKeys(root *rootfs.Root, user string) (string, []string, error) {
	p, err := users.Lookup(root, user)
	if err != nil {
		return "", nil, fmt.Errorf("show the key fingerprints of %s: %w", user, err)
	}
	home := path.Clean(p.Home)
	file := path.Join(home, ".ssh/authorized_keys")
	if data, err := root.ReadFile("/etc/ssh/sshd_config"); err == nil {
		value := ""
		for _, l := range users.ParseSshdConfig(data) {
			if strings.EqualFold(l.Key, "AuthorizedKeysFile") {
				value = l.Value
			}
		}
		for _, f := range strings.Fields(value) {
			f = strings.NewReplacer("%h", home, "%u", user, "%%", "%").Replace(f)
			if !strings.HasPrefix(f, "/") {
				f = path.Join(home, f)
			}
			if strings.HasPrefix(path.Clean(f), home+"/") {
				file = path.Clean(f)
				break
			}
		}
	}
	data, err := root.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return file, nil, nil
	}
	if err != nil {
		return file, nil, fmt.Errorf("show the key fingerprints of %s: read %s: %w", user, file, err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return file, lines, nil
}
