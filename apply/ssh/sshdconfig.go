package ssh

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// SSHDConfigPath is sshd's main configuration file in the target.
const SSHDConfigPath = "/etc/ssh/sshd_config"

// cloudInitDropIn is where cloud-init puts its settings when sshd_config
// includes sshd_config.d (Debian bookworm's does), so that the distro's file
// stays untouched.
const cloudInitDropIn = SSHDConfigPath + ".d/50-cloud-init.conf"

// Setting is one sshd_config keyword and its value.
type Setting struct {
	Keyword string
	Value   string
}

// sshdConfigLine is a parsed sshd_config line: a keyword line, or (keyword
// empty) a comment or blank line kept as text.
type sshdConfigLine struct {
	text    string
	keyword string
	value   string
}

func (l sshdConfigLine) String() string {
	if l.keyword == "" {
		return l.text
	}
	if l.value == "" {
		return l.keyword
	}
	return l.keyword + " " + l.value
}

// parseSSHDConfig splits sshd_config text the way cloud-init's ssh_util
// does: lines are trimmed, comments and blank lines are kept, a keyword is
// separated from its value by whitespace or else by '=', and a lone word
// with neither is dropped (cloud-init logs and skips it).
func parseSSHDConfig(text string) []sshdConfigLine {
	var lines []sshdConfigLine
	for _, raw := range splitLines(text) {
		line := strings.TrimFunc(raw, pySpace)
		if line == "" || strings.HasPrefix(line, "#") {
			lines = append(lines, sshdConfigLine{text: line})
			continue
		}
		keyword, value, found := cutSpace(line)
		if !found {
			keyword, value, found = strings.Cut(line, "=")
		}
		if !found {
			continue
		}
		lines = append(lines, sshdConfigLine{text: line, keyword: keyword, value: value})
	}
	return lines
}

// splitLines is Python's str.splitlines: it breaks at \n, \r, \r\n and
// the other line boundaries Python knows, and drops a final empty line.
func splitLines(text string) []string {
	var lines []string
	start := 0
	for i, r := range text {
		if i < start {
			continue
		}
		switch r {
		case '\n', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
			lines = append(lines, text[start:i])
			start = i + utf8.RuneLen(r)
		case '\r':
			lines = append(lines, text[start:i])
			start = i + 1
			if strings.HasPrefix(text[start:], "\n") {
				start++
			}
		}
	}
	if start < len(text) {
		lines = append(lines, text[start:])
	}
	return lines
}

// cutSpace is Python's s.split(None, 1) on a trimmed line.
func cutSpace(s string) (before, after string, found bool) {
	i := strings.IndexFunc(s, pySpace)
	if i < 0 {
		return s, "", false
	}
	return s[:i], strings.TrimLeftFunc(s[i:], pySpace), true
}

// pySpace is Python's str.isspace for one character: Unicode white space
// plus the ASCII separators \x1c-\x1f.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// applySettings sets each keyword's value on every line that has it
// (keywords are case-insensitive) and appends the ones no line has. It
// returns the keywords whose value changed or that were added.
func applySettings(lines []sshdConfigLine, settings []Setting) ([]sshdConfigLine, []string) {
	var changed []string
	found := map[string]bool{}
	for i := range lines {
		if lines[i].keyword == "" {
			continue
		}
		for _, s := range settings {
			if !strings.EqualFold(lines[i].keyword, s.Keyword) {
				continue
			}
			found[strings.ToLower(s.Keyword)] = true
			if lines[i].value != s.Value {
				lines[i].value = s.Value
				changed = append(changed, s.Keyword)
			}
		}
	}
	for _, s := range settings {
		if found[strings.ToLower(s.Keyword)] {
			continue
		}
		found[strings.ToLower(s.Keyword)] = true
		lines = append(lines, sshdConfigLine{keyword: s.Keyword, value: s.Value})
		changed = append(changed, s.Keyword)
	}
	return lines, changed
}

// UpdateSSHDConfig sets sshd_config keywords in the target as cloud-init's
// ssh_util.update_ssh_config does: in sshd_config itself, or, when it
// includes sshd_config.d/*.conf, in sshd_config.d/50-cloud-init.conf
// (created 0600). The file is rewritten only when a value changes, keeping
// its mode and owner. It reports whether it wrote.
func UpdateSSHDConfig(root *rootfs.Root, settings ...Setting) (bool, error) {
	name := SSHDConfigPath
	mode, owner := fs.FileMode(0o644), rootOwner()
	newDropIn := false
	if includesDropIns(root) {
		name = cloudInitDropIn
		if !root.Exists(name) {
			if err := root.MkdirAll(SSHDConfigPath+".d", 0o755, rootfs.KeepOwner); err != nil {
				return false, fmt.Errorf("update sshd config: %w", err)
			}
			// Made 0600 with its settings in one write: created empty
			// first, a power cut could leave it so.
			newDropIn, mode = true, 0o600
		}
	}
	var text string
	fi, err := root.Stat(name)
	switch {
	case err == nil && fi.Mode().IsRegular():
		data, err := root.ReadFile(name)
		if err != nil {
			return false, fmt.Errorf("update sshd config: %w", err)
		}
		text = string(data)
		mode = fi.Mode().Perm()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = rootfs.Owner{UID: int(st.Uid), GID: int(st.Gid)}
		}
	case err == nil:
		return false, fmt.Errorf("update sshd config %s: not a regular file", name)
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("update sshd config %s: %w", name, err)
	}
	lines, changed := applySettings(parseSSHDConfig(text), settings)
	if len(changed) == 0 {
		if newDropIn {
			// cloud-init leaves the drop-in there, empty, even so.
			if err := root.WriteFile(name, nil, mode, owner); err != nil {
				return false, fmt.Errorf("update sshd config: %w", err)
			}
		}
		return false, nil
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	if err := root.WriteFile(name, []byte(b.String()), mode, owner); err != nil {
		return false, fmt.Errorf("update sshd config: %w", err)
	}
	return true, nil
}

// includesDropIns reports whether sshd_config has the line that pulls in
// sshd_config.d, as cloud-init checks it: at the start of a line, exactly.
func includesDropIns(root *rootfs.Root) bool {
	data, err := root.ReadFile(SSHDConfigPath)
	if err != nil {
		return false
	}
	want := "Include " + SSHDConfigPath + ".d/*.conf"
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, want) {
			return true
		}
	}
	return false
}
