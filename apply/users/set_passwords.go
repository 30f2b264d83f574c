package users

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/shacrypt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() {
	apply.Register(apply.Module{
		Name:      "set_passwords",
		Frequency: apply.PerInstance,
		Keys:      []string{"chpasswd", "password", "ssh_pwauth"},
		Run:       runSetPasswords,
	})
}

// randomPasswordAlphabet is cloud-init's PW_SET: letters and digits
// without the easily confused "loLOI01".
const randomPasswordAlphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKMNPQRSTUVWXYZ23456789"

// randomPasswordLength is cloud-init's rand_user_password default.
const randomPasswordLength = 20

// hashLike is cloud-init's test for "this chpasswd list value is already
// a hash" (documented in its schema).
var hashLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\$(1|2a|2y|5|6)(\$.+){2}`) })

// passwordChange is one account's new password: plain text (to hash) or
// a hash (to use as is). source names it in errors, never the password.
type passwordChange struct {
	user     string
	password string
	hashed   bool
	random   bool
	source   string
}

func runSetPasswords(ctx context.Context, env *apply.Env) error {
	var errs []error
	password, _, err := env.Config.String("password")
	if err != nil {
		errs = append(errs, err)
	}
	expire := true
	var changes []passwordChange
	chpasswd, _, err := env.Config.Map("chpasswd")
	if err != nil {
		errs = append(errs, err)
	}
	if chpasswd != nil {
		c, e := chpasswdUsers(env, chpasswd)
		changes, errs = c, append(errs, e...)
		if expire, err = chpasswd.Bool("expire", true); err != nil {
			errs = append(errs, fmt.Errorf("chpasswd: %w", err))
			expire = true
		}
	}
	if len(changes) == 0 && password != "" {
		users, _, _ := normalizeUsersGroups(env.Config, func(string, ...any) {})
		defaultName := ""
		for _, u := range users {
			if u.Default {
				defaultName = u.Name
			}
		}
		if defaultName == "" {
			env.Warn("password: no default or defined user to change the password of")
		} else {
			changes = append(changes, listChange(defaultName, password, "password"))
		}
	}

	if len(changes) > 0 {
		errs = append(errs, applyPasswords(ctx, env, changes, expire)...)
	}
	if err := handleSSHPwauth(env); err != nil {
		errs = append(errs, err)
	}
	if len(changes) == 0 && !env.Config.Has("ssh_pwauth") && len(errs) == 0 {
		return apply.Skip("no passwords or ssh_pwauth configured")
	}
	return errors.Join(errs...)
}

// listChange reads a "user:password" value of the deprecated list form:
// a hash-looking value is a hash, "R" or "RANDOM" asks for a random one.
func listChange(user, password, source string) passwordChange {
	switch {
	case hashLike().MatchString(password) && !strings.Contains(password, ":"):
		return passwordChange{user: user, password: password, hashed: true, source: source}
	case password == "R" || password == "RANDOM":
		return passwordChange{user: user, random: true, source: source}
	}
	return passwordChange{user: user, password: password, source: source}
}

// chpasswdUsers reads chpasswd.users and the deprecated chpasswd.list.
func chpasswdUsers(env *apply.Env, chpasswd apply.Config) ([]passwordChange, []error) {
	var changes []passwordChange
	var errs []error
	if v, ok := chpasswd["users"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("chpasswd: users: want a list, got %s", apply.TypeName(v)))
		}
		for i, item := range list {
			c, err := chpasswdUser(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("chpasswd: users: item %d: %w", i, err))
				continue
			}
			if c.user == "" {
				env.Warn("chpasswd: users: item %d: unknown type ignored (want text, hash or RANDOM)", i)
				continue
			}
			c.source = fmt.Sprintf("chpasswd: users: item %d", i)
			changes = append(changes, c)
		}
	}
	if v, ok := chpasswd["list"]; ok && yaml11.Truthy(v) {
		env.Warn("DEPRECATED: chpasswd: 'list' is deprecated; use 'users'")
		var lines []string
		switch l := v.(type) {
		case []any:
			for i, item := range l {
				s, err := apply.AsString(item)
				if err != nil {
					errs = append(errs, fmt.Errorf("chpasswd: list: item %d: %w", i, err))
					continue
				}
				lines = append(lines, s)
			}
		case string:
			env.Warn("DEPRECATED: chpasswd: 'list' as a multi-line string is deprecated; use 'users'")
			lines = splitLines(l)
		default:
			errs = append(errs, fmt.Errorf("chpasswd: list: want a list, got %s", apply.TypeName(v)))
		}
		for i, line := range lines {
			user, pass, found := strings.Cut(line, ":")
			source := fmt.Sprintf("chpasswd: list: item %d", i)
			if !found {
				errs = append(errs, fmt.Errorf("%s: want user:password", source))
				continue
			}
			changes = append(changes, listChange(user, pass, source))
		}
	}
	return changes, errs
}

// splitLines is Python's str.splitlines for the line ends that matter.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// chpasswdUser reads one {name, password, type} item; a zero change
// (empty user) means a type cloud-init ignores.
func chpasswdUser(item any) (passwordChange, error) {
	m, ok := asMap(item)
	if !ok {
		return passwordChange{}, fmt.Errorf("want a mapping, got %s", apply.TypeName(item))
	}
	c := apply.Config(m)
	name, _, err := c.String("name")
	if err != nil {
		return passwordChange{}, err
	}
	if name == "" {
		return passwordChange{}, errors.New("name is missing")
	}
	kind, _, err := c.String("type")
	if err != nil {
		return passwordChange{}, err
	}
	if kind == "" {
		kind = "hash"
	}
	password, hasPassword, err := c.String("password")
	if err != nil {
		// Never echo the value: it is a password.
		return passwordChange{}, errors.New("password: want a string")
	}
	switch kind {
	case "RANDOM":
		return passwordChange{user: name, random: true}, nil
	case "text", "hash":
		if !hasPassword {
			return passwordChange{}, fmt.Errorf("password is missing for type %s", kind)
		}
		return passwordChange{user: name, password: password, hashed: kind == "hash"}, nil
	}
	return passwordChange{}, nil
}

// applyPasswords sets the passwords under the database lock, shows the
// random ones on the console only, and expires them when asked.
func applyPasswords(ctx context.Context, env *apply.Env, changes []passwordChange, expire bool) []error {
	var errs []error
	unlock, err := Lock(ctx, env.Root)
	if err != nil {
		return []error{err}
	}
	defer unlock()
	db, err := Open(env.Root)
	if err != nil {
		return []error{err}
	}
	var randoms []string
	var changed []string
	for _, c := range changes {
		if _, ok := db.User(c.user); !ok {
			errs = append(errs, fmt.Errorf("%s: set password of %s: user %w", c.source, c.user, ErrNotFound))
			continue
		}
		var err error
		switch {
		case c.random:
			var pass string
			// The password is a secret and waits for crypto/rand; its
			// salt is not, and does not.
			pass, err = shacrypt.RandomString(env.Random, randomPasswordLength, randomPasswordAlphabet)
			if err == nil {
				var hashed string
				if hashed, err = shacrypt.HashPassword(pass, env.EarlyRand()); err == nil {
					err = db.SetPassword(c.user, hashed)
				}
			}
			if err == nil {
				randoms = append(randoms, c.user+":"+pass)
			}
		case c.hashed:
			err = db.SetPassword(c.user, c.password)
		default:
			err = setPlainPassword(env, db, c.user, c.password)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.source, err))
			continue
		}
		changed = append(changed, c.user)
	}
	if expire {
		for _, u := range changed {
			if err := db.ExpirePassword(u); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := db.Save(); err != nil {
		return append(errs, err)
	}
	logger(env).Info("set passwords", "users", strings.Join(changed, ","), "expired", expire)
	if len(randoms) > 0 && env.Console != nil {
		// cloud-init's exact blurb; the console only, never the log.
		fmt.Fprintf(env.Console, "%s\n%s\n", "Set the following 'random' passwords\n", strings.Join(randoms, "\n"))
	}
	return errs
}

// sshdDropIn is where our settings go when sshd_config includes its .d directory.
const sshdDropIn = "/etc/ssh/sshd_config.d/50-cloud-init.conf"

// handleSSHPwauth is cc_set_passwords' handle_ssh_pwauth: ssh_pwauth true
// or false sets PasswordAuthentication yes or no in sshd's config (its
// drop-in directory when sshd_config includes one); "unchanged" or null
// leave it alone. Restarting a running sshd is not done here.
func handleSSHPwauth(env *apply.Env) error {
	v, ok := env.Config["ssh_pwauth"]
	if !ok || v == nil {
		return nil
	}
	var value string
	if s, isString := v.(string); isString {
		env.Warn("DEPRECATED: ssh_pwauth should be a boolean; the string form is deprecated")
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "1", "on", "yes":
			value = "yes"
		case "false", "0", "off", "no":
			value = "no"
		case "unchanged":
			logger(env).Debug("leaving sshd PasswordAuthentication unchanged")
			return nil
		default:
			env.Warn("ssh_pwauth: unrecognized value %q; leaving sshd PasswordAuthentication unchanged", s)
			return nil
		}
	} else if b, err := apply.AsBool(v); err == nil {
		value = map[bool]string{true: "yes", false: "no"}[b]
	} else {
		env.Warn("ssh_pwauth: unrecognized value %v; leaving sshd PasswordAuthentication unchanged", v)
		return nil
	}
	changed, err := UpdateSshdConfig(env.Root, map[string]string{"PasswordAuthentication": value})
	if err != nil {
		return fmt.Errorf("ssh_pwauth: %w", err)
	}
	// Only a running sshd has to be told; at boot (PID 1, before the
	// handoff) sshd starts later and reads the new configuration.
	if changed && env.Sys != nil && env.Sys.Live() && sshdRunning() {
		env.Warn("ssh_pwauth: sshd's configuration changed; restart the ssh service for it to take effect")
	}
	return nil
}

// sshdRunning reports whether an sshd process runs on this machine.
func sshdRunning() bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "sshd" {
			return true
		}
	}
	return false
}

// UpdateSshdConfig sets options in the target's sshd configuration as
// cloud-init's update_ssh_config does: when sshd_config starts a line
// with "Include /etc/ssh/sshd_config.d/*.conf" the settings go to
// sshd_config.d/50-cloud-init.conf instead; an option's existing line
// (matched case-insensitively) gets the new value, a missing one is
// appended, and the file is rewritten only if something changed. A target
// without sshd_config has no sshd: nothing is written.
func UpdateSshdConfig(root *rootfs.Root, updates map[string]string) (bool, error) {
	main, err := root.ReadFile(SshdConfigFile)
	if err != nil {
		if errorsIsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("update sshd config: %w", err)
	}
	file := SshdConfigFile
	data := main
	mode, owner := fileModeOwner(root, SshdConfigFile, 0o644)
	for _, line := range strings.Split(string(main), "\n") {
		if strings.HasPrefix(line, "Include "+SshdConfigFile+".d/*.conf") {
			file = sshdDropIn
			if err := root.MkdirAll(SshdConfigFile+".d", 0o755, ownedBy(0, 0)); err != nil {
				return false, fmt.Errorf("update sshd config: %w", err)
			}
			data, err = root.ReadFile(file)
			if err != nil && !errorsIsNotExist(err) {
				return false, fmt.Errorf("update sshd config: %w", err)
			}
			mode, owner = fileModeOwner(root, file, 0o600)
			break
		}
	}
	lines := ParseSshdConfig(data)
	var changed []string
	found := map[string]bool{}
	keys := sortedStringKeys(updates)
	for i, l := range lines {
		if l.Key == "" {
			continue
		}
		for _, k := range keys {
			if strings.EqualFold(l.Key, k) {
				found[k] = true
				if l.Value != updates[k] {
					lines[i].Value = updates[k]
					changed = append(changed, k)
				}
			}
		}
	}
	for _, k := range keys {
		if !found[k] {
			lines = append(lines, SshdConfigLine{Key: k, Value: updates[k]})
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 && root.Exists(file) {
		return false, nil
	}
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(l.String())
		out.WriteByte('\n')
	}
	if err := root.WriteFile(file, []byte(out.String()), mode, owner); err != nil {
		return false, fmt.Errorf("update sshd config: %w", err)
	}
	return len(changed) > 0, nil
}
