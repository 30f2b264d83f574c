package hostname

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Both parsers keep every line they do not own as it was, so that a file
// an admin annotated keeps its comments when seedinit updates one name.
// They follow cloud-init's distros/parsers byte for byte, quirks included
// (the part before a trailing comment is kept unstripped), because the
// previous-hostname comparison depends on reading back exactly what was
// written.

type lineKind int

const (
	blankLine lineKind = iota
	commentLine
	entryLine
)

// splitLines splits like Python's str.splitlines, which cloud-init's
// parsers use: \n, \r\n, \r and a few rarer separators end a line.
func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, s[start:i])
			i += size
			start = i
		case '\r':
			lines = append(lines, s[start:i])
			i += size
			if i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
		default:
			i += size
		}
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// chopComment splits text at the first "#".
func chopComment(text string) (head, tail string) {
	if i := strings.IndexByte(text, '#'); i >= 0 {
		return text[:i], text[i:]
	}
	return text, ""
}

type hostnameLine struct {
	kind lineKind
	raw  string // blank and comment lines
	name string // entry lines
	tail string
}

// hostnameConf is /etc/hostname (and data/previous-hostname).
type hostnameConf struct{ lines []hostnameLine }

// parseHostnameConf reads an /etc/hostname. Two different names in one
// file is an error, as for cloud-init, which then treats the file as
// having none.
func parseHostnameConf(text string) (*hostnameConf, error) {
	c := &hostnameConf{}
	seen := map[string]bool{}
	for _, line := range splitLines(text) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			c.lines = append(c.lines, hostnameLine{kind: blankLine, raw: line})
			continue
		}
		head, tail := chopComment(trimmed)
		if head == "" {
			c.lines = append(c.lines, hostnameLine{kind: commentLine, raw: line})
			continue
		}
		c.lines = append(c.lines, hostnameLine{kind: entryLine, name: head, tail: tail})
		seen[head] = true
	}
	if len(seen) > 1 {
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		return nil, fmt.Errorf("parse hostname file: more than one hostname (%s)", strings.Join(names, ", "))
	}
	return c, nil
}

// Hostname is the first name in the file, or "".
func (c *hostnameConf) Hostname() string {
	for _, l := range c.lines {
		if l.kind == entryLine {
			return l.name
		}
	}
	return ""
}

// SetHostname replaces every name line's name (keeping comments after it),
// or adds one.
func (c *hostnameConf) SetHostname(name string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return
	}
	replaced := false
	for i := range c.lines {
		if c.lines[i].kind == entryLine {
			c.lines[i].name = name
			replaced = true
		}
	}
	if !replaced {
		c.lines = append(c.lines, hostnameLine{kind: entryLine, name: name})
	}
}

func (c *hostnameConf) String() string {
	var b strings.Builder
	for _, l := range c.lines {
		if l.kind == entryLine {
			b.WriteString(l.name + l.tail + "\n")
		} else {
			b.WriteString(l.raw + "\n")
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

type hostsLine struct {
	kind   lineKind
	raw    string
	fields []string // address, canonical name, aliases
	tail   string
}

// hostsConf is /etc/hosts.
type hostsConf struct{ lines []hostsLine }

func parseHostsConf(text string) *hostsConf {
	c := &hostsConf{}
	for _, line := range splitLines(text) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			c.lines = append(c.lines, hostsLine{kind: blankLine, raw: line})
			continue
		}
		head, tail := chopComment(trimmed)
		if head == "" {
			c.lines = append(c.lines, hostsLine{kind: commentLine, raw: line})
			continue
		}
		c.lines = append(c.lines, hostsLine{kind: entryLine, fields: strings.Fields(head), tail: tail})
	}
	return c
}

// Entries returns the names (canonical first) of every line for addr.
func (c *hostsConf) Entries(addr string) [][]string {
	var out [][]string
	for _, l := range c.lines {
		if l.kind == entryLine && len(l.fields) > 0 && l.fields[0] == addr {
			out = append(out, l.fields[1:])
		}
	}
	return out
}

// DeleteEntries drops every line for addr.
func (c *hostsConf) DeleteEntries(addr string) {
	kept := c.lines[:0]
	for _, l := range c.lines {
		if l.kind == entryLine && (len(l.fields) == 0 || l.fields[0] == addr) {
			continue
		}
		kept = append(kept, l)
	}
	c.lines = kept
}

// AddEntry appends a line for addr.
func (c *hostsConf) AddEntry(addr string, names ...string) {
	c.lines = append(c.lines, hostsLine{kind: entryLine, fields: append([]string{addr}, names...)})
}

// String writes entry lines tab-separated, as cloud-init rewrites them.
func (c *hostsConf) String() string {
	var b strings.Builder
	for _, l := range c.lines {
		if l.kind == entryLine {
			b.WriteString(strings.Join(l.fields, "\t") + l.tail + "\n")
		} else {
			b.WriteString(l.raw + "\n")
		}
	}
	return b.String()
}

// fqdnFromHosts finds the canonical name of the first /etc/hosts line that
// lists name as an alias, as cloud-init's util.get_fqdn_from_hosts does.
func fqdnFromHosts(text, name string) string {
	for _, line := range splitLines(text) {
		head, _ := chopComment(line)
		fields := strings.Fields(head)
		if len(fields) < 3 {
			continue
		}
		for _, alias := range fields[2:] {
			if alias == name {
				return fields[1]
			}
		}
	}
	return ""
}
