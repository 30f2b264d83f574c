package packages

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// yumNow stamps the header of the .repo files; tests fix it.
var yumNow = time.Now

func runYumAddRepo(ctx context.Context, env *apply.Env) error {
	if !yaml11.Truthy(env.Config["yum_repos"]) {
		return apply.Skip("no yum_repos in the config")
	}
	repos, _, err := env.Config.Map("yum_repos")
	if err != nil {
		return fmt.Errorf("read %w", err)
	}
	dir := "/etc/yum.repos.d/"
	if d, ok, err := env.Config.String("yum_repo_dir"); err != nil {
		return fmt.Errorf("read %w", err)
	} else if ok {
		dir = d
	}
	var errs []error
	pending := map[string]bool{}
	for _, id := range repos.Keys() {
		canon := strings.ReplaceAll(id, " ", "-")
		if strings.Contains(canon, "/") || canon == "." || canon == ".." {
			errs = append(errs, fmt.Errorf("add yum repo %q: the id cannot name a file", id))
			continue
		}
		file := path.Join(dir, canon+".repo")
		if env.Root.Exists(file) {
			env.Log.Info("yum repo file exists; left alone", "repo", id, "file", file)
			continue
		}
		if pending[canon] {
			env.Log.Info("yum repo already pending", "repo", id, "file", file)
			continue
		}
		var repo apply.Config
		if repos[id] != nil {
			m, _, err := repos.Map(id)
			if err != nil {
				errs = append(errs, fmt.Errorf("add yum repo %q: %w", id, err))
				continue
			}
			repo = m
		}
		text, err := FormatYumRepo(canon, repo, yumNow())
		if err != nil {
			env.Warn("yum repo %s: %v; skipped", id, err)
			continue
		}
		pending[canon] = true
		if err := env.Root.MkdirAll(dir, 0o755, rootfs.Owner{}); err != nil {
			errs = append(errs, fmt.Errorf("add yum repo %q: %w", id, err))
			continue
		}
		_, hasPassword := repo["password"]
		if err := env.Root.WriteFile(file, []byte(text), fileMode(text, hasPassword), rootfs.Owner{}); err != nil {
			errs = append(errs, fmt.Errorf("add yum repo %q: write %s: %w", id, file, err))
		}
	}
	return errors.Join(errs...)
}

// FormatYumRepo renders one .repo file as cloud-init's ConfigParser
// writes it: a dated header, the section, "key = value" lines (in the
// order of the original keys, sorted, as a Go map has no YAML order) with keys
// lower-cased and "-" turned into "_", booleans as 1/0, lists one item per
// continuation line. A repo without baseurl is an error.
func FormatYumRepo(id string, repo apply.Config, at time.Time) (string, error) {
	norm := map[string]any{}
	var keys []string
	for _, k := range repo.Keys() {
		nk := strings.ReplaceAll(strings.TrimSpace(strings.ToLower(k)), "-", "_")
		if nk == "" {
			continue
		}
		// A key with a line break, '[' or '=' would write a line of its
		// own choosing into the .repo file, a section header among them.
		if strings.ContainsAny(nk, "\n\r[]=") {
			return "", fmt.Errorf("key %q: not a repo option name", k)
		}
		if _, dup := norm[nk]; !dup {
			keys = append(keys, nk)
		}
		norm[nk] = repo[k]
	}
	if _, ok := norm["baseurl"]; !ok {
		return "", errors.New("no baseurl, which is required")
	}
	var b strings.Builder
	b.WriteString("# Created by cloud-init on " + at.UTC().Format(time.RFC1123Z) + "\n")
	if strings.ContainsAny(id, "\n\r[]") {
		return "", fmt.Errorf("repo id %q: not a section name", id)
	}
	b.WriteString("[" + id + "]\n")
	for _, k := range keys {
		v, err := yumValue(norm[k])
		if err != nil {
			return "", fmt.Errorf("%s: %w", k, err)
		}
		if strings.ContainsAny(v, "\n\r") {
			v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\n", "\n\t")
		}
		if v == "" {
			b.WriteString(k + " = \n")
			continue
		}
		b.WriteString(k + " = " + v + "\n")
	}
	b.WriteString("\n")
	return b.String(), nil
}

func yumValue(v any) (string, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return "1", nil
		}
		return "0", nil
	case []any:
		var parts []string
		for _, item := range x {
			s, err := yumValue(item)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "\n"), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case nil:
		return "None", nil
	}
	return apply.AsString(v)
}
