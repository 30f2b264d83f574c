package users

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// userEntry is one user after cloud-init's normalize_users_groups: its
// name, its merged config, and where it came from for error messages.
type userEntry struct {
	Name   string
	Config apply.Config
	// Index is the item's position in the users list (-1 when it came from
	// `user:` or system_info.default_user alone).
	Index int
	// Default marks the distro's default user.
	Default bool
}

// label names the entry in messages: "users: item 2 (bob)".
func (u userEntry) label() string {
	if u.Index < 0 {
		return fmt.Sprintf("default user %s", u.Name)
	}
	return fmt.Sprintf("users: item %d (%s)", u.Index, u.Name)
}

type groupEntry struct {
	Name    string
	Members []string
}

// mergeFirstWins merges maps as cloud-init's mergemanydict with its
// default mergers: a key set by an earlier map wins, nested maps are
// merged the same way.
func mergeFirstWins(maps ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range maps {
		for k, v := range m {
			old, ok := out[k]
			if !ok {
				out[k] = v
				continue
			}
			om, oldIsMap := asMap(old)
			nm, newIsMap := asMap(v)
			if oldIsMap && newIsMap {
				out[k] = mergeFirstWins(om, nm)
			}
		}
	}
	return out
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case apply.Config:
		return m, true
	}
	return nil, false
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// uniqMerge is cloud-init's uniq_merge: strings split on commas (empty
// parts dropped), lists taken item by item, first occurrence kept.
func uniqMerge(values ...any) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, v := range values {
		switch l := v.(type) {
		case string:
			for _, p := range strings.Split(strings.TrimSpace(l), ",") {
				if p != "" {
					add(p)
				}
			}
		case []any:
			for _, item := range l {
				if s, err := apply.AsString(item); err == nil {
					add(s)
				}
			}
		case []string:
			for _, s := range l {
				add(s)
			}
		}
	}
	return out
}

func uniqMergeSorted(values ...any) []string {
	out := uniqMerge(values...)
	sort.Strings(out)
	return out
}

// defaultUserConfig is system_info.default_user of the merged config.
func defaultUserConfig(cfg apply.Config) (map[string]any, error) {
	sys, _, err := cfg.Map("system_info")
	if err != nil {
		return nil, err
	}
	if sys == nil {
		return nil, nil
	}
	du, _, err := sys.Map("default_user")
	if err != nil {
		return nil, fmt.Errorf("system_info: %w", err)
	}
	return du, nil
}

// errDefaultUserName: the default user is asked for and has no name.
var errDefaultUserName = errors.New("system_info: default_user: name: want a user name")

// DefaultUserName is the name of the default user that the users module
// creates from cfg, as cloud-init's ug_util works it out
// (normalize_users_groups, then extract_default); "" when there is none.
// The error concerns the default user only: other users' problems are the
// users module's to report.
func DefaultUserName(cfg apply.Config) (string, error) {
	users, _, errs := normalizeUsersGroups(cfg, func(string, ...any) {})
	for _, u := range users {
		if u.Default {
			return u.Name, nil
		}
	}
	for _, err := range errs {
		if errors.Is(err, errDefaultUserName) {
			// cloud-init reads an explicit null name as no default user.
			if du, _ := defaultUserConfig(cfg); du != nil {
				if name, ok := du["name"]; ok && name == nil {
					return "", nil
				}
			}
			return "", err
		}
	}
	return "", nil
}

// normalizeUsersGroups does what cloud-init's ug_util.normalize_users_groups
// does, in the same order, collecting errors per item instead of stopping.
// One addition: when `users` is absent and system_info.default_user is
// set, users is ["default"], the value of cloud-init's stock cloud.cfg
// that a user-data without `users` leaves in place.
func normalizeUsersGroups(cfg apply.Config, warn func(string, ...any)) ([]userEntry, []groupEntry, []error) {
	var errs []error
	oldUser := map[string]any{}
	if v, ok := cfg["user"]; ok && yaml11.Truthy(v) {
		switch u := v.(type) {
		case string:
			oldUser = map[string]any{"name": u}
			warn("DEPRECATED: 'user' of type string is deprecated; use a 'users' list instead")
		case map[string]any, apply.Config:
			m, _ := asMap(u)
			oldUser = copyMap(m)
		default:
			warn("user: want a string or a mapping, got %s; ignored", apply.TypeName(v))
		}
	}
	distroUser, err := defaultUserConfig(cfg)
	if err != nil {
		errs = append(errs, err)
	}
	defaultUser := mergeFirstWins(oldUser, distroUser)

	var baseUsers any = []any{}
	// Items from this position on were added here, not written by the user.
	givenItems := 0
	if v, ok := cfg["users"]; ok {
		switch list := v.(type) {
		case []any:
			baseUsers = append([]any{}, list...)
			givenItems = len(list)
		case map[string]any, apply.Config, string:
			warn("DEPRECATED: 'users' of type %s is deprecated; use a list", apply.TypeName(v))
			baseUsers = v
			givenItems = 1 << 30
		default:
			warn("users: want a list, a mapping or a comma-separated string, got %s; ignored", apply.TypeName(v))
		}
	} else if len(distroUser) > 0 {
		baseUsers = []any{"default"}
	}
	if len(oldUser) > 0 {
		switch b := baseUsers.(type) {
		case []any:
			baseUsers = append(b, map[string]any{"name": "default"})
		case string:
			baseUsers = b + ",default"
		default:
			m, _ := asMap(b)
			m = copyMap(m)
			if _, ok := m["default"]; !ok {
				m["default"] = true
			}
			baseUsers = m
		}
	}

	var groups []groupEntry
	if v, ok := cfg["groups"]; ok {
		g, err := normalizeGroups(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("groups: %w", err))
		}
		groups = g
	}
	users, userErrs := normalizeUsers(baseUsers, givenItems, defaultUser, warn)
	return users, groups, append(errs, userErrs...)
}

// normalizeGroups is _normalize_groups: a comma string, a list of names
// and {name: members} maps, or a map, into names with sorted unique
// members, in first-seen order.
func normalizeGroups(v any) ([]groupEntry, error) {
	var errs []error
	order := []string{}
	members := map[string][]any{}
	note := func(name string) {
		if _, ok := members[name]; !ok {
			members[name] = []any{}
			order = append(order, name)
		}
	}
	addMembers := func(name string, m any) error {
		switch l := m.(type) {
		case []any:
			note(name)
			members[name] = append(members[name], l...)
		case string:
			note(name)
			members[name] = append(members[name], l)
		case nil:
			note(name)
		default:
			return fmt.Errorf("group %s: members: want a list or a string, got %s", name, apply.TypeName(m))
		}
		return nil
	}
	if s, ok := v.(string); ok {
		var l []any
		for _, p := range strings.Split(strings.TrimSpace(s), ",") {
			l = append(l, p)
		}
		v = l
	}
	switch g := v.(type) {
	case []any:
		for i, item := range g {
			switch it := item.(type) {
			case string:
				note(it)
			case map[string]any, apply.Config:
				m, _ := asMap(it)
				for _, name := range sortedKeys(m) {
					if err := addMembers(name, m[name]); err != nil {
						errs = append(errs, fmt.Errorf("item %d: %w", i, err))
					}
				}
			default:
				errs = append(errs, fmt.Errorf("item %d: want a group name or a mapping, got %s", i, apply.TypeName(item)))
			}
		}
	case map[string]any, apply.Config:
		m, _ := asMap(g)
		for _, name := range sortedKeys(m) {
			if err := addMembers(name, m[name]); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		return nil, fmt.Errorf("want a list, a mapping or a string, got %s", apply.TypeName(v))
	}
	var out []groupEntry
	for _, name := range order {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		out = append(out, groupEntry{Name: name, Members: uniqMergeSorted(members[name])})
	}
	return out, errors.Join(errs...)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normalizeUsers is _normalize_users. A mapping's keys come sorted (the
// YAML decoder does not keep their order).
func normalizeUsers(base any, givenItems int, defaultUser map[string]any, warn func(string, ...any)) ([]userEntry, []error) {
	var errs []error
	var list []any
	switch b := base.(type) {
	case []any:
		list = b
	case string:
		for _, u := range uniqMergeSorted(b) {
			list = append(list, u)
		}
	case map[string]any, apply.Config:
		m, _ := asMap(b)
		for _, k := range sortedKeys(m) {
			switch v := m[k].(type) {
			case map[string]any, apply.Config:
				c, _ := asMap(v)
				c = copyMap(c)
				c["name"] = k
				list = append(list, c)
			case nil, []any:
				errs = append(errs, fmt.Errorf("users: %s: want a mapping or a boolean, got %s", k, apply.TypeName(v)))
			default:
				if b, err := apply.AsBool(v); err == nil && b {
					list = append(list, k)
				}
			}
		}
	}

	type entry struct {
		config map[string]any
		index  int
	}
	var order []string
	entries := map[string]*entry{}
	put := func(name string, index int, c map[string]any) {
		e, ok := entries[name]
		if !ok {
			e = &entry{config: map[string]any{}, index: index}
			entries[name] = e
			order = append(order, name)
		}
		e.config = mergeFirstWins(e.config, c)
	}
	var nameless []int
	for i, item := range list {
		switch it := item.(type) {
		case string, []any:
			for _, u := range uniqMerge(it) {
				if _, ok := entries[u]; u != "" && !ok {
					put(u, i, nil)
				}
			}
		case map[string]any, apply.Config:
			m, _ := asMap(it)
			c := copyMap(m)
			name := "default"
			if n, ok := c["name"]; ok {
				s, err := apply.AsString(n)
				if err != nil {
					errs = append(errs, fmt.Errorf("users: item %d: name: %w", i, err))
					continue
				}
				name = s
				delete(c, "name")
			} else {
				nameless = append(nameless, i)
			}
			put(name, i, c)
		default:
			errs = append(errs, fmt.Errorf("users: item %d: want a name or a mapping, got %s", i, apply.TypeName(item)))
		}
	}
	for _, name := range order {
		e := entries[name]
		clean := map[string]any{}
		for k, v := range e.config {
			if k = strings.TrimSpace(strings.ReplaceAll(k, "-", "_")); k != "" {
				clean[k] = v
			}
		}
		e.config = clean
	}

	defaultName := ""
	if def, ok := entries["default"]; ok {
		order = remove(order, "default")
		delete(entries, "default")
		if len(defaultUser) == 0 {
			if len(nameless) > 0 {
				for _, i := range nameless {
					errs = append(errs, fmt.Errorf("users: item %d: no name, and no default user (system_info.default_user) to apply it to", i))
				}
			} else {
				warn("users: 'default' names no user: system_info.default_user is not configured")
			}
		} else {
			du := copyMap(defaultUser)
			name, err := apply.AsString(du["name"])
			if err != nil || name == "" {
				errs = append(errs, errDefaultUserName)
			} else {
				defaultName = name
				defGroups := du["groups"]
				delete(du, "name")
				delete(du, "groups")
				parsed := map[string]any{}
				index := def.index
				if p, ok := entries[name]; ok {
					parsed = copyMap(p.config)
					index = min(index, p.index)
					order = remove(order, name)
					delete(entries, name)
				}
				parsed["groups"] = strings.Join(uniqMergeSorted(parsed["groups"], defGroups), ",")
				entries[name] = &entry{config: mergeFirstWins(du, def.config, parsed), index: index}
				order = append(order, name)
			}
		}
	}
	var out []userEntry
	for _, name := range order {
		e := entries[name]
		if e.index >= givenItems {
			e.index = -1
		}
		out = append(out, userEntry{Name: name, Config: apply.Config(e.config), Index: e.index, Default: name == defaultName})
	}
	return out, errs
}

func remove(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
