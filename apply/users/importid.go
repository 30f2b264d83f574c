package users

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/sshkey"
	"github.com/seedinit/seedinit/seed"
)

func init() {
	apply.Register(apply.Module{
		Name:      "ssh_import_id",
		Frequency: apply.PerInstance,
		Keys:      []string{"ssh_import_id"},
		Run:       runSSHImportID,
	})
}

// Where ssh-import-id 5.10 fetches keys; %s is the account, query-escaped.
// /etc/ssh/ssh_import_id ({"URL": "...%s..."}) overrides Launchpad's, as
// in ssh-import-id. Variables for the tests.
var (
	launchpadKeysURL = "https://launchpad.net/~%s/+sshkeys"
	githubKeysURL    = "https://api.github.com/users/%s/keys"
)

const (
	importIDConfigFile = "/etc/ssh/ssh_import_id"
	importIDTimeout    = 30 * time.Second
	importIDMaxAnswer  = 1 << 20
)

// runSSHImportID does what cloud-init's cc_ssh_import_id does through the
// ssh-import-id tool, without the tool: for the default user
// (ssh_import_id at the top level) and each user with its own
// ssh_import_id, it fetches the keys of each id (lp:NAME, gh:NAME, NAME
// for Launchpad) and appends those not there yet to the user's
// ~/.ssh/authorized_keys, each with ssh-import-id's comment, so that
// `ssh-import-id -r` can remove them later. A failing id is reported and
// the others are still imported.
func runSSHImportID(ctx context.Context, env *apply.Env) error {
	if !hasImportIDs(env.Config) {
		return apply.Skip("no ssh_import_id in the config")
	}
	warn := func(format string, args ...any) { env.Log.Debug(fmt.Sprintf(format, args...)) }
	users, _, _ := normalizeUsersGroups(env.Config, warn)
	var errs []error
	imported := 0
	for _, u := range users {
		var raw any
		if u.Default {
			raw = env.Config["ssh_import_id"]
			// cloud-init's get_cfg_option_list: a string is one id.
			if s, ok := raw.(string); ok {
				raw = []any{s}
			}
		} else {
			v, ok := u.Config["ssh_import_id"]
			if !ok {
				continue
			}
			raw = v
		}
		ids := uniqMerge(raw)
		if len(ids) == 0 {
			continue
		}
		n, err := importIDs(ctx, env, u.Name, ids)
		imported += n
		if err != nil {
			errs = append(errs, fmt.Errorf("ssh_import_id for %s: %w", u.Name, err))
		}
	}
	if len(errs) == 0 && imported == 0 {
		return apply.Skip("no user has ssh_import_id")
	}
	return errors.Join(errs...)
}

// hasImportIDs is cloud-init's is_key_in_nested_dict for ssh_import_id.
func hasImportIDs(v any) bool {
	switch m := v.(type) {
	case apply.Config:
		return hasImportIDs(map[string]any(m))
	case map[string]any:
		for k, child := range m {
			if k == "ssh_import_id" || hasImportIDs(child) {
				return true
			}
		}
	case []any:
		for _, child := range m {
			if hasImportIDs(child) {
				return true
			}
		}
	}
	return false
}

// importIDs imports every id for one user and returns how many ids gave
// keys.
func importIDs(ctx context.Context, env *apply.Env, user string, ids []string) (int, error) {
	p, err := Lookup(env.Root, user)
	if err != nil {
		return 0, err
	}
	if p.Home == "" {
		return 0, fmt.Errorf("%s has no home directory", user)
	}
	file := path.Join(p.Home, ".ssh", "authorized_keys")
	var existing []byte
	mode, owner := fs.FileMode(0o600), ownedBy(p.UID, p.GID)
	switch data, err := env.Root.ReadFile(file); {
	case err == nil:
		existing = data
		if fi, err := env.Root.Stat(file); err == nil {
			mode, owner = fi.Mode().Perm(), statOwner(fi)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	have := keysIn(existing)
	var added []string
	var errs []error
	ok := 0
	for _, id := range ids {
		proto, name, err := splitImportID(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		text, err := fetchImportKeys(ctx, env, proto, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		lines, keys := importLines(text, proto+":"+name)
		if len(lines) == 0 {
			errs = append(errs, fmt.Errorf("%s: no keys found", id))
			continue
		}
		ok++
		for i, line := range lines {
			if !have[string(keys[i].Marshal())] {
				have[string(keys[i].Marshal())] = true
				added = append(added, line)
			}
		}
		env.Log.Info("imported ssh keys", "user", user, "id", id, "keys", len(lines))
	}
	if len(added) > 0 {
		var b bytes.Buffer
		b.Write(existing)
		if len(existing) > 0 && existing[len(existing)-1] != '\n' {
			b.WriteByte('\n')
		}
		// ssh-import-id leaves a blank line after each key it adds.
		for _, line := range added {
			b.WriteString(line + "\n\n")
		}
		if err := env.Root.MkdirAll(path.Dir(file), 0o700, ownedBy(p.UID, p.GID)); err != nil {
			return ok, err
		}
		if _, err := env.Root.WriteFileIfChanged(file, b.Bytes(), mode, owner); err != nil {
			return ok, err
		}
	}
	return ok, errors.Join(errs...)
}

// splitImportID reads "lp:NAME", "gh:NAME" or "NAME" (Launchpad).
func splitImportID(id string) (proto, name string, err error) {
	parts := strings.Split(id, ":")
	switch {
	case len(parts) == 1:
		proto, name = "lp", parts[0]
	case len(parts) == 2:
		proto, name = parts[0], parts[1]
	default:
		return "", "", fmt.Errorf("invalid user id %q", id)
	}
	if proto != "lp" && proto != "gh" {
		return "", "", fmt.Errorf("%s: unknown key server %q (lp or gh)", id, proto)
	}
	return proto, name, nil
}

// fetchImportKeys returns the keys of an account, one per line, as
// ssh-import-id's protocol handlers do: Launchpad's list as it comes,
// GitHub's API answer as "KEY NAME@github/ID" lines.
func fetchImportKeys(ctx context.Context, env *apply.Env, proto, name string) (string, error) {
	template := githubKeysURL
	if proto == "lp" {
		template = launchpadKeysURL
		if data, err := env.Root.ReadFile(importIDConfigFile); err == nil {
			var conf struct{ URL string }
			if err := json.Unmarshal(data, &conf); err != nil {
				return "", fmt.Errorf("%s is not valid JSON: %w", importIDConfigFile, err)
			}
			if conf.URL != "" {
				template = conf.URL
			}
		}
		if strings.Count(template, "%s") != 1 {
			return "", fmt.Errorf("the Launchpad URL %q needs exactly one %%s", template)
		}
	}
	body, err := seed.Web(ctx, seed.WebRequest{
		URL:     fmt.Sprintf(template, url.QueryEscape(name)),
		Header:  map[string]string{"User-Agent": "seedinit/" + apply.Version + " (ssh-import-id)"},
		Timeout: importIDTimeout,
		MaxSize: importIDMaxAnswer,
	})
	if err != nil {
		var status *seed.WebStatusError
		if errors.As(err, &status) && status.Code == 404 {
			return "", fmt.Errorf("no such account on %s", map[string]string{"lp": "Launchpad", "gh": "GitHub"}[proto])
		}
		return "", err
	}
	if proto == "lp" {
		return string(body), nil
	}
	var entries []struct {
		ID  json.Number `json:"id"`
		Key string      `json:"key"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&entries); err != nil {
		return "", fmt.Errorf("read GitHub's answer: %w", err)
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s@github/%s\n", e.Key, name, e.ID)
	}
	return b.String(), nil
}

// importLines turns fetched text into the lines ssh-import-id writes: each
// valid key's fields joined by single spaces, then "# ssh-import-id ID".
// Lines that are not keys are dropped, as ssh-keygen -l refuses them.
func importLines(text, id string) ([]string, []*sshkey.PublicKey) {
	var lines []string
	var keys []*sshkey.PublicKey
	for raw := range strings.SplitSeq(text, "\n") {
		fields := strings.Fields(raw)
		if len(fields) < 2 {
			continue
		}
		line := strings.Join(append(fields, "# ssh-import-id "+id), " ")
		key, _, err := sshkey.ParseAuthorizedKey([]byte(line))
		if err != nil {
			continue
		}
		lines = append(lines, line)
		keys = append(keys, key)
	}
	return lines, keys
}

// keysIn lists the keys an authorized_keys file holds, by their blobs.
func keysIn(data []byte) map[string]bool {
	have := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		if key, _, err := sshkey.ParseAuthorizedKey([]byte(line)); err == nil {
			have[string(key.Marshal())] = true
		}
	}
	return have
}
