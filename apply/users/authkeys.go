package users

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// SshdConfigFile is where sshd's configuration lives in the target.
const SshdConfigFile = "/etc/ssh/sshd_config"

// DisableUserOpts is cloud-init's key options for an account whose logins
// are redirected to another one: $USER is the account to use instead and
// $DISABLE_USER the one refused.
const DisableUserOpts = `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"$USER\" rather than the user \"$DISABLE_USER\".';echo;sleep 10;exit 142"`

// validKeyTypes are the key types cloud-init recognises in an
// authorized_keys line (ssh_util.VALID_KEY_TYPES of 22.4).
var validKeyTypes = map[string]bool{
	"dsa": true, "rsa": true, "ecdsa": true, "ed25519": true,
	"ecdsa-sha2-nistp256-cert-v01@openssh.com": true, "ecdsa-sha2-nistp256": true,
	"ecdsa-sha2-nistp384-cert-v01@openssh.com": true, "ecdsa-sha2-nistp384": true,
	"ecdsa-sha2-nistp521-cert-v01@openssh.com": true, "ecdsa-sha2-nistp521": true,
	"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com": true, "sk-ecdsa-sha2-nistp256@openssh.com": true,
	"sk-ssh-ed25519-cert-v01@openssh.com": true, "sk-ssh-ed25519@openssh.com": true,
	"ssh-dss-cert-v01@openssh.com": true, "ssh-dss": true,
	"ssh-ed25519-cert-v01@openssh.com": true, "ssh-ed25519": true,
	"ssh-rsa-cert-v01@openssh.com": true, "ssh-rsa": true,
	"ssh-xmss-cert-v01@openssh.com": true, "ssh-xmss@openssh.com": true,
}

// ValidKeyType reports whether t is a key type cloud-init accepts in an
// authorized_keys line.
func ValidKeyType(t string) bool { return validKeyTypes[t] }

// AuthKeyLine is one line of an authorized_keys file. A line that is not
// a key (comment, blank, unparsable) has only Source and is written back
// as it was.
type AuthKeyLine struct {
	Source  string
	Options string
	KeyType string
	Base64  string
	Comment string
}

// Valid reports whether the line is a key.
func (l AuthKeyLine) Valid() bool { return l.KeyType != "" && l.Base64 != "" }

// String renders the line as cloud-init does: options, type, key and
// comment joined by single spaces; a non-key line as it came.
func (l AuthKeyLine) String() string {
	var toks []string
	for _, t := range []string{l.Options, l.KeyType, l.Base64, l.Comment} {
		if t != "" {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return l.Source
	}
	return strings.Join(toks, " ")
}

// ParseAuthKeyLine parses one authorized_keys line as cloud-init's
// AuthKeyLineParser does. Non-empty options replace the line's own ones.
func ParseAuthKeyLine(source, options string) AuthKeyLine {
	line := strings.TrimRight(source, "\r\n")
	if strings.HasPrefix(line, "#") || strings.TrimFunc(line, unicode.IsSpace) == "" {
		return AuthKeyLine{Source: source}
	}
	entry := strings.TrimFunc(line, unicode.IsSpace)
	keyType, key, comment, ok := splitKey(entry)
	if !ok {
		ownOptions, rest := extractOptions(entry)
		if options == "" {
			options = ownOptions
		}
		if keyType, key, comment, ok = splitKey(rest); !ok {
			return AuthKeyLine{Source: source}
		}
	}
	return AuthKeyLine{Source: source, Options: options, KeyType: keyType, Base64: key, Comment: comment}
}

// splitKey splits "type base64 [comment]" (Python's split(None, 2)).
func splitKey(entry string) (keyType, key, comment string, ok bool) {
	fields := make([]string, 0, 3)
	rest := entry
	for len(fields) < 2 {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		fields = append(fields, rest[:end])
		rest = rest[end:]
	}
	if len(fields) < 2 || !validKeyTypes[fields[0]] {
		return "", "", "", false
	}
	return fields[0], fields[1], strings.TrimLeftFunc(rest, unicode.IsSpace), true
}

// extractOptions splits the leading options field off an entry: it ends
// at the first blank outside double quotes, and \" does not toggle quoting.
func extractOptions(entry string) (options, rest string) {
	quoted := false
	i := 0
	for i < len(entry) && (quoted || (entry[i] != ' ' && entry[i] != '\t')) {
		c := entry[i]
		if i+1 >= len(entry) {
			i++
			break
		}
		next := entry[i+1]
		if c == '\\' && next == '"' {
			i++
		} else if c == '"' {
			quoted = !quoted
		}
		i++
	}
	return entry[:i], strings.TrimLeftFunc(entry[i:], unicode.IsSpace)
}

// MergeAuthorizedKeys adds keys to the lines of an existing file as
// cloud-init's update_authorized_keys does: a key whose base64 is already
// there replaces that line in place, the others are appended in order,
// and lines that are not keys stay as they are. Unlike cloud-init, a key
// given twice is added once.
func MergeAuthorizedKeys(existing []AuthKeyLine, keys []AuthKeyLine) string {
	var toAdd []AuthKeyLine
	seen := map[string]bool{}
	for _, k := range keys {
		if k.Valid() && !seen[k.Base64] {
			seen[k.Base64] = true
			toAdd = append(toAdd, k)
		}
	}
	lines := make([]string, 0, len(existing)+len(toAdd)+1)
	used := map[string]bool{}
	for _, old := range existing {
		if old.Valid() {
			for _, k := range toAdd {
				if k.Base64 == old.Base64 {
					old = k
					used[k.Base64] = true
				}
			}
		}
		lines = append(lines, old.String())
	}
	for _, k := range toAdd {
		if !used[k.Base64] {
			lines = append(lines, k.String())
		}
	}
	return strings.Join(append(lines, ""), "\n")
}

// parseAuthorizedKeys splits a file's content into lines as Python's
// splitlines does for \n and \r\n files.
func parseAuthorizedKeys(data []byte) []AuthKeyLine {
	if len(data) == 0 {
		return nil
	}
	text := strings.TrimSuffix(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out []AuthKeyLine
	for _, l := range strings.Split(text, "\n") {
		out = append(out, ParseAuthKeyLine(l, ""))
	}
	return out
}

// SshdConfigLine is one line of sshd_config: Key is empty for a comment or
// blank line, which is kept as Line.
type SshdConfigLine struct {
	Line  string
	Key   string
	Value string
}

func (l SshdConfigLine) String() string {
	if l.Key == "" {
		return l.Line
	}
	if l.Value == "" {
		return l.Key
	}
	return l.Key + " " + l.Value
}

// ParseSshdConfig splits sshd_config text into lines as cloud-init's
// parse_ssh_config_lines does: "Key value" or "Key=value"; a line with a
// single word is dropped.
func ParseSshdConfig(data []byte) []SshdConfigLine {
	var out []SshdConfigLine
	if len(data) == 0 {
		return nil
	}
	for _, raw := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		line := strings.TrimFunc(raw, unicode.IsSpace)
		if line == "" || strings.HasPrefix(line, "#") {
			out = append(out, SshdConfigLine{Line: line})
			continue
		}
		if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
			out = append(out, SshdConfigLine{Line: line, Key: line[:i], Value: strings.TrimLeftFunc(line[i:], unicode.IsSpace)})
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out = append(out, SshdConfigLine{Line: line, Key: k, Value: v})
		}
	}
	return out
}

// sshdOption returns the last value of key (case-insensitive), as
// cloud-init's parse_ssh_config_map keeps the last one.
func sshdOption(lines []SshdConfigLine, key, def string) string {
	value, found := def, false
	for _, l := range lines {
		if l.Key != "" && strings.EqualFold(l.Key, key) {
			value, found = l.Value, true
		}
	}
	if !found {
		return def
	}
	return value
}

// renderKeyPaths expands AuthorizedKeysFile's %h, %u and %% the way
// cloud-init does (one token after the other) and anchors relative paths
// at the home directory.
func renderKeyPaths(value, home, user string) (templates, paths []string) {
	if value == "" {
		value = "%h/.ssh/authorized_keys"
	}
	for _, p := range strings.Fields(value) {
		// "none" switches the file off in sshd; cloud-init would create a
		// file called "none" in the home directory.
		if p == "none" {
			continue
		}
		rendered := strings.ReplaceAll(p, "%h", home)
		rendered = strings.ReplaceAll(rendered, "%u", user)
		rendered = strings.ReplaceAll(rendered, "%%", "%")
		if !strings.HasPrefix(rendered, "/") {
			rendered = path.Join(home, rendered)
		}
		templates = append(templates, p)
		paths = append(paths, path.Clean(rendered))
	}
	return templates, paths
}

// keyOwner is who an authorized_keys file is checked and written for.
type keyOwner struct {
	user   Passwd
	groups map[int]bool
}

// SetupUserKeys adds keys to user's authorized_keys in env's target, as
// cloud-init's ssh_util.setup_user_keys does: the file is the first
// user-specific AuthorizedKeysFile of the target's sshd_config whose path
// passes sshd's StrictModes checks (default ~/.ssh/authorized_keys);
// missing directories below the home are made 0700 and the file 0600,
// owned by the user. Keys already in the file are updated in place and
// never duplicated; other lines are kept. options, when not empty,
// replaces the options of every key given (cloud-init's options=; see
// DisableUserOpts).
func SetupUserKeys(env *apply.Env, user string, keys []string, options string) error {
	p, err := Lookup(env.Root, user)
	if err != nil {
		return fmt.Errorf("set up ssh keys: %w", err)
	}
	owner := keyOwner{user: p, groups: map[int]bool{p.GID: true}}
	if data, err := env.Root.ReadFile(GroupFile); err == nil {
		for _, g := range ParseGroup(data) {
			if slices.Contains(g.Members, user) {
				owner.groups[g.GID] = true
			}
		}
	}
	return setupUserKeys(env, owner, keys, options)
}

func setupUserKeys(env *apply.Env, owner keyOwner, keys []string, options string) error {
	p := owner.user
	if p.Home == "" {
		return fmt.Errorf("set up ssh keys of %s: the user has no home directory", p.Name)
	}
	var entries []AuthKeyLine
	for _, k := range keys {
		entries = append(entries, ParseAuthKeyLine(k, options))
	}
	file, err := authorizedKeysFile(env, owner)
	if err != nil {
		return fmt.Errorf("set up ssh keys of %s: %w", p.Name, err)
	}
	var existing []AuthKeyLine
	mode, fileOwner := fs.FileMode(0o600), ownedBy(p.UID, p.GID)
	data, err := env.Root.ReadFile(file)
	switch {
	case err == nil:
		existing = parseAuthorizedKeys(data)
		if fi, err := env.Root.Stat(file); err == nil {
			mode, fileOwner = fi.Mode().Perm(), statOwner(fi)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("set up ssh keys of %s: %w", p.Name, err)
	}
	content := MergeAuthorizedKeys(existing, entries)
	if _, err := env.Root.WriteFileIfChanged(file, []byte(content), mode, fileOwner); err != nil {
		return fmt.Errorf("set up ssh keys of %s: %w", p.Name, err)
	}
	return nil
}

// authorizedKeysFile picks the file as extract_authorized_keys does and
// makes sure it and its directories exist.
func authorizedKeysFile(env *apply.Env, owner keyOwner) (string, error) {
	p := owner.user
	home := path.Clean(p.Home)
	var sshd []SshdConfigLine
	if data, err := env.Root.ReadFile(SshdConfigFile); err == nil {
		sshd = ParseSshdConfig(data)
	}
	strict := sshdOption(sshd, "StrictModes", "yes") == "yes"
	templates, paths := renderKeyPaths(sshdOption(sshd, "AuthorizedKeysFile", ""), home, p.Name)
	for i, file := range paths {
		if !strings.Contains(templates[i], "%u") && !strings.Contains(templates[i], "%h") && !strings.HasPrefix(file, home+"/") {
			continue
		}
		if err := checkCreatePath(env, owner, file, strict); err != nil {
			logger(env).Debug("authorized keys file not usable", "user", p.Name, "file", file, "reason", err.Error())
			continue
		}
		return file, nil
	}
	file := path.Join(home, ".ssh", "authorized_keys")
	if err := ensureDefaultKeysFile(env, owner, file); err != nil {
		return "", err
	}
	return file, nil
}

// checkCreatePath walks file's directories from the top as cloud-init's
// check_create_path does: no symlinks or files on the way, missing
// directories created (below the home: 0700 and the user's, elsewhere
// 0755 and root's), each one and the file, if it exists, passing the
// permission checks.
func checkCreatePath(env *apply.Env, owner keyOwner, file string, strict bool) error {
	root, p := env.Root, owner.user
	home := path.Clean(p.Home)
	homeParent := path.Dir(home)
	parts := strings.Split(strings.TrimPrefix(file, "/"), "/")
	dir := ""
	for _, part := range parts[:len(parts)-1] {
		dir += "/" + part
		fi, err := root.Lstat(dir)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink", dir)
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if strings.HasPrefix(homeParent, dir) || dir == home {
			continue
		}
		if err != nil {
			mode, o := fs.FileMode(0o755), ownedBy(0, 0)
			if strings.HasPrefix(dir, home) {
				mode, o = 0o700, ownedBy(p.UID, p.GID)
			}
			if err := root.MkdirAll(path.Dir(dir), 0o755, ownedBy(0, 0)); err != nil {
				return err
			}
			if err := root.MkdirAll(dir, mode, o); err != nil {
				return err
			}
			if fi, err = root.Lstat(dir); err != nil {
				return err
			}
		}
		if err := checkPermissions(owner, dir, fi, false, strict); err != nil {
			return err
		}
	}
	fi, err := root.Lstat(file)
	switch {
	case err == nil && (fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir()):
		return fmt.Errorf("%s is not a file", file)
	case errors.Is(err, fs.ErrNotExist):
		// cloud-init creates it empty here and checks it; it is made
		// once, with the keys, 0600 and the user's, which passes: an
		// empty file between two writes is what a power cut would keep.
		return nil
	case err != nil:
		return err
	}
	return checkPermissions(owner, file, fi, true, strict)
}

// checkPermissions is sshd's safe_path check as cloud-init words it: the
// owner is root or the user (StrictModes), the user can reach the path,
// and group and others cannot write it (StrictModes).
func checkPermissions(owner keyOwner, name string, fi fs.FileInfo, isFile, strict bool) error {
	o := statOwner(fi)
	if strict && o.UID != owner.user.UID && o.UID != 0 {
		return fmt.Errorf("%s is owned by uid %d, neither the user nor root", name, o.UID)
	}
	need := fs.FileMode(0o711)
	if isFile {
		need = 0o644
	}
	switch {
	case o.UID == owner.user.UID:
		need &= 0o700
	case owner.groups[o.GID]:
		need &= 0o070
	default:
		need &= 0o007
	}
	perm := fi.Mode().Perm()
	if perm&need == 0 {
		return fmt.Errorf("%s is not accessible to the user", name)
	}
	if strict && perm&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others", name)
	}
	return nil
}

// ensureDefaultKeysFile prepares ~/.ssh/authorized_keys when no configured
// path qualified. cloud-init then writes it as root with mode 0644; we
// give it the user and 0600 as sshd expects, and refuse symlinks on the
// way so that a user's link cannot redirect a root write.
func ensureDefaultKeysFile(env *apply.Env, owner keyOwner, file string) error {
	p := owner.user
	sshDir := path.Dir(file)
	userOwned := ownedBy(p.UID, p.GID)
	if !env.Root.Exists(p.Home) {
		if err := env.Root.MkdirAll(p.Home, 0o755, ownedBy(0, 0)); err != nil {
			return err
		}
	}
	for _, name := range []string{sshDir, file} {
		if fi, err := env.Root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink", name)
		}
	}
	if !env.Root.Exists(sshDir) {
		if err := env.Root.MkdirAll(sshDir, 0o700, userOwned); err != nil {
			return err
		}
	}
	return nil
}

func statOwner(fi fs.FileInfo) rootfs.Owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return rootfs.Owner{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return rootfs.KeepOwner
}
