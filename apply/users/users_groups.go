// Package users creates and updates accounts in the target as cloud-init's
// users_groups and set_passwords modules do: groups, users, passwords,
// sudo rules and SSH authorized keys. It edits /etc/passwd, /etc/shadow,
// /etc/group and /etc/gshadow itself (under shadow-utils' lock) instead
// of running useradd, so it needs no tools in the target.
package users

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/shacrypt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func init() {
	apply.Register(apply.Module{
		Name:      "users_groups",
		Frequency: apply.PerInstance,
		Keys:      []string{"groups", "user", "users"},
		Run:       runUsersGroups,
	})
}

// noHome and needHome are cloud-init's mutually exclusive user keys.
var (
	noHome   = []string{"no_create_home", "system"}
	needHome = []string{"ssh_authorized_keys", "ssh_import_id", "ssh_redirect_user"}
)

// knownUserKeys are the per-user keys this module (or another module:
// ssh_import_id) reads; others are warned about.
var knownUserKeys = map[string]bool{
	"gecos": true, "homedir": true, "primary_group": true, "groups": true, "sudo": true,
	"shell": true, "lock_passwd": true, "passwd": true, "hashed_passwd": true,
	"plain_text_passwd": true, "ssh_authorized_keys": true, "ssh_redirect_user": true,
	"system": true, "uid": true, "no_create_home": true, "create_groups": true,
	"expiredate": true, "inactive": true, "no_user_group": true, "no_log_init": true,
	"selinux_user": true, "ssh_import_id": true, "default": true, "snapuser": true, "known": true,
}

// userPlan is a user's config checked and typed, ready to apply.
type userPlan struct {
	entry        userEntry
	uid          int
	groups       []string
	primaryGroup string
	gecos, home  string
	shell        string
	passwd       string
	plain        string
	hashed       string
	lock         bool
	system       bool
	noCreateHome bool
	noUserGroup  bool
	createGroups bool
	expireDate   string
	inactive     *int
	sudo         []string
	hasSudo      bool
	keys         []string
	hasKeys      bool
	redirectTo   string
	cloudKeys    []string
}

// Limits on what one config may ask of users_groups. cloud-init has
// none; a config past them is an attack or a mistake. Each user costs a
// home, its skeleton files and its keys, several flushed files (4 to 8 ms
// here, more on an appliance's flash); the account files are written once
// whatever the number.
const (
	// maxUsers bounds the users one config creates or updates.
	maxUsers = 1000
	// maxGroups bounds the distinct groups one config names: in
	// groups, and in users' groups and primary_group, which may create
	// them.
	maxGroups = 1000
)

// limits are the limits in force; tests lower them.
var limits = struct{ users, groups int }{maxUsers, maxGroups}

func runUsersGroups(ctx context.Context, env *apply.Env) error {
	warn := func(format string, args ...any) { env.Warn(format, args...) }
	users, groups, errs := normalizeUsersGroups(env.Config, warn)
	if len(users) > limits.users {
		return fmt.Errorf("users: %d users, more than the %d one config may have (%s is the first past the limit): no user or group created",
			len(users), limits.users, users[limits.users].label())
	}
	defaultName := ""
	for _, u := range users {
		if u.Default {
			defaultName = u.Name
		}
	}
	var cloudKeys []string
	if env.Seed != nil {
		cloudKeys = env.Seed.PublicKeys
	}
	var plans []*userPlan
	for _, u := range users {
		p, err := planUser(env, u, defaultName, cloudKeys)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.label(), err))
			continue
		}
		plans = append(plans, p)
	}
	if n, first := countGroups(groups, plans); n > limits.groups {
		return fmt.Errorf("groups: the config names %d groups, more than the %d it may (%s is the first past the limit): no user or group created",
			n, limits.groups, first)
	}
	if len(groups) == 0 && len(plans) == 0 {
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		return apply.Skip("no users or groups configured")
	}

	// Held to the end: the homes' record is saved again once they are made.
	unlock, err := Lock(ctx, env.Root)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	db, err := Open(env.Root)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if db.Recovered {
		logger(env).Info("finished the account change of a run a power cut stopped")
	}
	for _, g := range groups {
		errs = append(errs, createGroup(env, db, g)...)
	}
	created := map[string]bool{}
	var ready []*userPlan
	for _, p := range plans {
		isNew, err := applyAccount(env, db, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.entry.label(), err))
		}
		// A user that exists gets its files even when its password failed.
		pw, exists := db.User(p.entry.Name)
		if !exists {
			continue
		}
		// Its home is saved as to be made with the user, so that a run
		// after a cut completes it (see pendingHomesFile).
		if isNew && !p.noCreateHome && !p.system && pw.Home != "" && pw.Home != "/" {
			if _, err := env.Root.Lstat(pw.Home); errors.Is(err, fs.ErrNotExist) {
				db.PendHome(pw.Name)
			}
		}
		created[p.entry.Name] = isNew || db.HomePending(p.entry.Name)
		ready = append(ready, p)
	}
	if err = db.Save(); err != nil {
		return errors.Join(append(errs, err)...)
	}

	var sudo []SudoBlock
	var homes []string
	for _, p := range ready {
		if err := applyFiles(env, db, p, created[p.entry.Name]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.entry.label(), err))
		}
		if db.HomePending(p.entry.Name) {
			homes = append(homes, p.entry.Name)
		}
		if p.hasSudo {
			sudo = append(sudo, SudoBlock{User: p.entry.Name, Rules: p.sudo})
		}
	}
	if len(homes) > 0 {
		// The homes reach the disk before their record goes: a cut in
		// between makes the next run look at them again, which finds
		// them whole.
		if err := env.Root.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("flush the homes of %s: %w", abbrevList(homes, 5), err))
		} else {
			db.HomesMade(homes...)
			if err := db.Save(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// One write for every user's rules: the file rewritten per user would
	// cost O(users²).
	if err := writeSudoRules(env.Root, sudo, ""); err != nil {
		names := make([]string, len(sudo))
		for i, b := range sudo {
			names[i] = b.User
		}
		errs = append(errs, fmt.Errorf("write sudo rules for %s: %w", abbrevList(names, 5), err))
	}
	return errors.Join(errs...)
}

// abbrevList joins the first n names, saying how many more there are.
func abbrevList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// countGroups counts the distinct groups that groups and the users' plans
// name, and names the one that passes the limit.
func countGroups(groups []groupEntry, plans []*userPlan) (int, string) {
	seen := map[string]bool{}
	first := ""
	note := func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		if len(seen) == limits.groups+1 {
			first = name
		}
	}
	for _, g := range groups {
		note(g.Name)
	}
	for _, p := range plans {
		for _, g := range p.groups {
			note(g)
		}
		note(p.primaryGroup)
	}
	return len(seen), first
}

// createGroup is distro.create_group: create the group unless it exists,
// then add the members that exist.
func createGroup(env *apply.Env, db *DB, g groupEntry) []error {
	var errs []error
	if _, exists := db.groupGID(g.Name); exists {
		logger(env).Info("group exists already, not creating it", "group", g.Name)
	} else if _, err := db.AddGroup(g.Name, -1, false); err != nil {
		return []error{fmt.Errorf("groups: %w", err)}
	} else {
		logger(env).Info("created group", "group", g.Name)
	}
	for _, m := range g.Members {
		if _, ok := db.User(m); !ok {
			env.Warn("groups: cannot add %s to group %s: the user does not exist", m, g.Name)
			continue
		}
		if _, err := db.AddGroupMember(g.Name, m); err != nil {
			errs = append(errs, fmt.Errorf("groups: %w", err))
		}
	}
	return errs
}

// planUser checks a user's config the way cc_users_groups and
// distro.create_user read it, before anything is changed.
func planUser(env *apply.Env, u userEntry, defaultName string, cloudKeys []string) (*userPlan, error) {
	c := u.Config
	p := &userPlan{entry: u, uid: -1}
	if err := validName("user", u.Name); err != nil {
		return nil, err
	}
	for _, k := range c.Keys() {
		if !knownUserKeys[k] {
			env.Warn("%s: unknown key %q ignored", u.label(), k)
		}
	}
	if c.Has("snapuser") {
		return nil, errors.New("snapuser: snap users are not supported")
	}
	var errs []error
	flag := func(key string, def bool) bool {
		b, err := c.Bool(key, def)
		if err != nil {
			errs = append(errs, err)
		}
		return b
	}
	var noH, needH []string
	for _, k := range noHome {
		if yaml11.Truthy(c[k]) {
			noH = append(noH, k)
		}
	}
	for _, k := range needHome {
		if yaml11.Truthy(c[k]) {
			needH = append(needH, k)
		}
	}
	if len(noH) > 0 && len(needH) > 0 {
		return nil, fmt.Errorf("key(s) %s cannot be given with %s", strings.Join(needH, ", "), strings.Join(noH, ", "))
	}
	str := func(key string) string {
		s, _, err := c.String(key)
		if err != nil {
			errs = append(errs, err)
		}
		return s
	}
	p.gecos, p.home, p.shell = str("gecos"), str("homedir"), str("shell")
	p.primaryGroup = str("primary_group")
	p.passwd, p.plain, p.hashed = str("passwd"), str("plain_text_passwd"), str("hashed_passwd")
	p.expireDate = str("expiredate")
	if v, ok := c["uid"]; ok && v != nil {
		n, _, err := c.Int("uid")
		switch {
		case err != nil:
			errs = append(errs, err)
		case n < 0 || n >= 1<<32-1:
			errs = append(errs, fmt.Errorf("uid: %d is out of range", n))
		default:
			p.uid = int(n)
		}
	}
	if v, ok := c["inactive"]; ok && v != nil {
		// cloud-init hands only a string to useradd and drops a number.
		n, _, err := c.Int("inactive")
		if err != nil {
			errs = append(errs, err)
		} else {
			days := int(n)
			p.inactive = &days
		}
	}
	if v, ok := c["groups"]; ok && v != nil {
		switch g := v.(type) {
		case map[string]any, apply.Config:
			env.Warn("DEPRECATED: %s: 'groups' as a mapping is deprecated; use a list or a comma-separated string", u.label())
			m, _ := asMap(g)
			p.groups = sortedKeys(m)
		default:
			l, err := apply.AsStringList(v, true)
			if err != nil {
				errs = append(errs, fmt.Errorf("groups: %w", err))
			}
			for _, name := range l {
				if name = strings.TrimSpace(name); name != "" {
					p.groups = append(p.groups, name)
				}
			}
		}
	}
	p.lock = flag("lock_passwd", true)
	p.system = flag("system", false)
	p.noCreateHome = flag("no_create_home", false)
	p.noUserGroup = flag("no_user_group", false)
	p.createGroups = flag("create_groups", true)
	flag("no_log_init", false)
	if s := str("selinux_user"); s != "" {
		env.Warn("%s: selinux_user is not supported and was ignored", u.label())
	}

	if v, ok := c["sudo"]; ok {
		switch {
		case v == nil:
		case v == false:
			env.Warn("DEPRECATED: %s: 'sudo: false' will be dropped after April 2027; use null", u.label())
		case !yaml11.Truthy(v):
		default:
			rules, err := SudoRules(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("sudo: %w", err))
			}
			p.sudo, p.hasSudo = rules, true
		}
	}

	if v, ok := c["ssh_authorized_keys"]; ok {
		p.hasKeys = true
		switch k := v.(type) {
		case nil:
		case string:
			p.keys = []string{k}
		case []any:
			for i, item := range k {
				s, err := apply.AsString(item)
				if err != nil {
					errs = append(errs, fmt.Errorf("ssh_authorized_keys: item %d: %w", i, err))
					continue
				}
				p.keys = append(p.keys, s)
			}
		case map[string]any, apply.Config:
			m, _ := asMap(k)
			for _, name := range sortedKeys(m) {
				if s, err := apply.AsString(m[name]); err == nil {
					p.keys = append(p.keys, s)
				}
			}
		default:
			env.Warn("%s: ssh_authorized_keys: want a list, a string or a mapping, got %s", u.label(), apply.TypeName(v))
		}
	}

	if v, ok := c["ssh_redirect_user"]; ok && yaml11.Truthy(v) {
		if c.Has("ssh_authorized_keys") || c.Has("ssh_import_id") {
			errs = append(errs, errors.New("ssh_redirect_user cannot be given with ssh_import_id or ssh_authorized_keys"))
		} else if v != true && v != "default" {
			errs = append(errs, fmt.Errorf("ssh_redirect_user: want true, default or false, got %v", v))
		} else if defaultName == "" {
			env.Warn("%s: ignoring ssh_redirect_user: no default user is configured (users: [default, ...])", u.label())
		} else {
			p.redirectTo = defaultName
			p.cloudKeys = cloudKeys
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// applyAccount creates the user if missing (cloud-init's add_user, which
// skips an existing user entirely) and sets its password and lock (done
// for existing users too). It reports whether the user is new.
func applyAccount(env *apply.Env, db *DB, p *userPlan) (bool, error) {
	name := p.entry.Name
	_, exists := db.User(name)
	switch {
	case exists && db.HomePending(name):
		logger(env).Info("user made by a run a power cut stopped; completing its home", "user", name)
	case exists:
		logger(env).Info("user exists already, not creating it", "user", name)
	default:
		if p.createGroups && len(p.groups) > 0 {
			wanted := append(append([]string{}, p.groups...), p.primaryGroup)
			for _, g := range wanted {
				if g == "" {
					continue
				}
				if _, ok := db.groupGID(g); ok {
					continue
				}
				if isDigits(g) && g == p.primaryGroup {
					continue
				}
				if _, err := db.AddGroup(g, -1, false); err != nil {
					return false, err
				}
				logger(env).Debug("created group for user", "group", g, "user", name)
			}
		}
		nu := NewUser{
			Name: name, UID: p.uid, PrimaryGroup: p.primaryGroup, Groups: p.groups,
			Gecos: p.gecos, Home: p.home, Shell: p.shell, Password: p.passwd,
			System: p.system, NoUserGroup: p.noUserGroup, ExpireDate: p.expireDate, Inactive: p.inactive,
		}
		if _, err := db.AddUser(nu); err != nil {
			return false, err
		}
		logger(env).Info("created user", "user", name)
	}
	if p.plain != "" {
		if err := setPlainPassword(env, db, name, p.plain); err != nil {
			return !exists, err
		}
	}
	if p.hashed != "" {
		if err := db.SetPassword(name, p.hashed); err != nil {
			return !exists, err
		}
	}
	if p.lock {
		if err := db.LockPassword(name); err != nil {
			return !exists, err
		}
	}
	return !exists, nil
}

// setPlainPassword hashes password unless the account's hash (locked or
// not) already is of it, so that a re-run keeps the hash and its day.
func setPlainPassword(env *apply.Env, db *DB, name, password string) error {
	current, err := db.PasswordHash(name)
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	base := strings.TrimLeft(current, "!")
	if ok, err := shacrypt.CheckPassword(base, password); err == nil && ok {
		return db.SetPassword(name, base)
	}
	hashed, err := shacrypt.HashPassword(password, env.EarlyRand())
	if err != nil {
		return fmt.Errorf("set password of %s: %w", name, err)
	}
	return db.SetPassword(name, hashed)
}

// applyFiles does what needs the account to be saved: the home directory
// of a new user and authorized keys. Sudo rules are the caller's, for all
// users at once.
func applyFiles(env *apply.Env, db *DB, p *userPlan, isNew bool) error {
	name := p.entry.Name
	pw, ok := db.User(name)
	if !ok {
		return fmt.Errorf("user %s %w", name, ErrNotFound)
	}
	var errs []error
	if isNew && !p.noCreateHome && !p.system {
		if _, err := makeHome(env.Root, pw, db.Policy, db.HomePending(name)); err != nil {
			errs = append(errs, err)
		}
	}
	owner := keyOwner{user: pw, groups: map[int]bool{pw.GID: true}}
	for _, g := range db.GroupsOf(name) {
		if gid, ok := db.groupGID(g); ok {
			owner.groups[gid] = true
		}
	}
	if p.hasKeys {
		if err := setupUserKeys(env, owner, p.keys, ""); err != nil {
			errs = append(errs, err)
		}
	}
	if p.redirectTo != "" {
		if len(p.cloudKeys) == 0 {
			env.Warn("%s: cannot disable ssh logins for ssh_redirect_user %s: the datasource has no public keys", p.entry.label(), p.redirectTo)
		} else {
			opts := strings.ReplaceAll(DisableUserOpts, "$USER", p.redirectTo)
			opts = strings.ReplaceAll(opts, "$DISABLE_USER", name)
			if err := setupUserKeys(env, owner, p.cloudKeys, opts); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
