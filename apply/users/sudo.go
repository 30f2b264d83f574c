package users

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/target"
)

// The sudoers files cloud-init writes.
const (
	SudoersFile      = "/etc/sudoers"
	CloudSudoersFile = "/etc/sudoers.d/90-cloud-init-users"
)

// now is the clock for file headers; tests pin it.
var now = time.Now

// header is cloud-init's make_header line with seedinit's name.
func header(verb string) string {
	return fmt.Sprintf("# %s by seedinit v. %s on %s", verb, apply.Version, now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
}

var includeDirLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[#|@]includedir\s+(.*)$`) })

// EnsureSudoIncludeDir makes sudoers read dir, as cloud-init's
// ensure_sudo_dir does: an "#includedir dir" line is added to
// /etc/sudoers (created 0440 if missing) unless one ("#" or "@" form)
// names dir already, and dir is made to exist with mode 0750.
func EnsureSudoIncludeDir(root *target.Root, dir string) error {
	data, err := root.ReadFile(SudoersFile)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		m := includeDirLine().FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if included := strings.TrimSpace(m[1]); included != "" && path.Clean(included) == dir {
			found = true
			break
		}
	}
	if !found {
		if !exists {
			content := "# See sudoers(5) for more information on \"#include\" directives:\n\n" + header("Added") + "\n#includedir " + dir + "\n"
			err = root.WriteFile(SudoersFile, []byte(content), 0o440, ownedBy(0, 0))
		} else {
			err = root.AppendFile(SudoersFile, []byte("\n"+header("Added")+"\n#includedir "+dir+"\n"), 0o440, target.KeepOwner)
		}
		if err != nil {
			return fmt.Errorf("include %s in sudoers: %w", dir, err)
		}
	}
	if err := root.MkdirAll(dir, 0o750, ownedBy(0, 0)); err != nil {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	if err := root.Chmod(dir, 0o750); err != nil {
		return fmt.Errorf("include %s in sudoers: %w", dir, err)
	}
	return nil
}

const userRulesPrefix = "# User rules for "

// SudoRules turns a user's sudo value into rule lines: a string is one
// rule, a list one rule per item. Other types are an error (cloud-init
// raises a TypeError too).
func SudoRules(value any) ([]string, error) {
	var rules []string
	switch v := value.(type) {
	case string:
		rules = []string{v}
	case []any:
		for i, item := range v {
			s, err := apply.AsString(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			rules = append(rules, s)
		}
	default:
		return nil, fmt.Errorf("want a rule or a list of rules, got %s", apply.TypeName(value))
	}
	for i, r := range rules {
		if strings.ContainsAny(r, "\n\r") {
			return nil, fmt.Errorf("rule %d contains a line break", i)
		}
	}
	return rules, nil
}

// WriteSudoRules gives user its rules in file (cloud-init's
// /etc/sudoers.d/90-cloud-init-users by default) in cloud-init's
// write_sudo_rules format: a header when the file is created, then per
// user a blank line, "# User rules for NAME" and "NAME RULE" lines. Where
// cloud-init appends again on every new instance, a user's block that is
// there already is replaced in place, so re-running never duplicates it.
func WriteSudoRules(root *target.Root, user string, rules []string, file string) error {
	if file == "" {
		file = CloudSudoersFile
	}
	if err := EnsureSudoIncludeDir(root, path.Dir(file)); err != nil {
		return fmt.Errorf("write sudo rules for %s: %w", user, err)
	}
	block := []string{userRulesPrefix + user}
	for _, r := range rules {
		block = append(block, user+" "+r)
	}
	data, err := root.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		content := header("Created") + "\n\n" + strings.Join(block, "\n") + "\n"
		if err := root.WriteFile(file, []byte(content), 0o440, ownedBy(0, 0)); err != nil {
			return fmt.Errorf("write sudo rules for %s: %w", user, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("write sudo rules for %s: %w", user, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	start := -1
	for i, l := range lines {
		if l == block[0] {
			start = i
			break
		}
	}
	var updated []string
	if start < 0 {
		updated = append(append(lines, ""), block...)
	} else {
		end := start + 1
		for end < len(lines) && lines[end] != "" && !strings.HasPrefix(lines[end], userRulesPrefix) {
			end++
		}
		updated = append(append(append([]string{}, lines[:start]...), block...), lines[end:]...)
	}
	content := strings.Join(updated, "\n") + "\n"
	fi, err := root.Stat(file)
	if err != nil {
		return fmt.Errorf("write sudo rules for %s: %w", user, err)
	}
	if _, err := root.WriteFileIfChanged(file, []byte(content), fi.Mode().Perm(), statOwner(fi)); err != nil {
		return fmt.Errorf("write sudo rules for %s: %w", user, err)
	}
	return nil
}
