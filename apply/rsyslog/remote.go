package rsyslog

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Remote is one forwarding rule of rsyslog.remotes, as cloud-init's
// SyslogRemotesLine holds it.
type Remote struct {
	// Name becomes a trailing "# name" comment; empty means none.
	Name string
	// Selector is rsyslog's facility.priority filter ("*.*" by default).
	Selector string
	// Protocol is "udp" (@) or "tcp" (@@).
	Protocol string
	Address  string
	// Port is the decimal port without leading zeros; empty (or a port of
	// 0, which cloud-init treats as none) means rsyslog's default.
	Port string
}

// ErrNoAddress is what a remote without a host gives.
var ErrNoAddress = errors.New("address is required")

var (
	// A run of '#' with the spaces around it separates host from comment.
	commentSep = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[ ]*#+[ ]*`) })
	// Python's "$" also matches before a final newline, hence "\n?$".
	hostPort = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(@{0,2})(?:\[([^\]]*)\]|([^:]*))(?::([0-9]+))?\n?$`)
	})
)

// ParseRemote parses one rsyslog.remotes value, "[selector] [@|@@]host[:port]
// [# comment]", the way cloud-init 22.4.2's parse_remotes_line does. name
// (the remote's key) wins over the comment when it is not empty.
func ParseRemote(line, name string) (Remote, error) {
	data, comment := line, ""
	if seps := commentSep().FindAllStringIndex(line, -1); len(seps) == 1 {
		// cloud-init only splits off a comment when there is exactly one.
		data = line[:seps[0][0]]
		comment = strings.TrimFunc(line[seps[0][1]:], isPySpace)
	}
	fields := strings.FieldsFunc(data, isPySpace)
	selector, spec := "", ""
	switch len(fields) {
	case 1:
		// cloud-init matches the unstripped text here, spaces and all.
		spec = data
	case 2:
		selector, spec = fields[0], fields[1]
	default:
		return Remote{}, fmt.Errorf("parse remote %q: want \"[selector] host\", got %d words", line, len(fields))
	}
	m := hostPort().FindStringSubmatchIndex(spec)
	if m == nil {
		return Remote{}, fmt.Errorf("parse remote %q: invalid host specification %q", line, spec)
	}
	group := func(i int) (string, bool) {
		if m[2*i] < 0 {
			return "", false
		}
		return spec[m[2*i]:m[2*i+1]], true
	}
	proto, _ := group(1)
	addr, _ := group(3)
	if addr == "" {
		addr, _ = group(2)
	}
	port, _ := group(4)
	if strings.HasPrefix(addr, "[") && !strings.HasSuffix(addr, "]") {
		return Remote{}, fmt.Errorf("parse remote %q: host spec had invalid brackets: %s", line, addr)
	}
	if addr == "" {
		return Remote{}, fmt.Errorf("parse remote %q: %w", line, ErrNoAddress)
	}
	if name == "" {
		name = comment
	}
	if selector == "" {
		selector = "*.*"
	}
	r := Remote{Name: name, Selector: selector, Protocol: "udp", Address: addr, Port: canonicalPort(port)}
	if proto == "@@" {
		r.Protocol = "tcp"
	}
	return r, nil
}

// canonicalPort is int(port) printed back, with 0 meaning none as
// cloud-init's truthiness test makes it.
func canonicalPort(digits string) string {
	digits = strings.TrimLeft(digits, "0")
	return digits
}

// String renders the rule as an rsyslog line, in cloud-init's spelling:
// IPv6 addresses (anything with a colon) in brackets.
func (r Remote) String() string {
	var b strings.Builder
	b.WriteString(r.Selector)
	b.WriteString(" ")
	switch r.Protocol {
	case "udp":
		b.WriteString("@")
	case "tcp":
		b.WriteString("@@")
	}
	if strings.Contains(r.Address, ":") {
		b.WriteString("[" + r.Address + "]")
	} else {
		b.WriteString(r.Address)
	}
	if r.Port != "" {
		b.WriteString(":" + r.Port)
	}
	if r.Name != "" {
		b.WriteString(" # " + r.Name)
	}
	return b.String()
}

// isPySpace is Python's str.isspace, which str.split() and str.strip()
// use: Go's unicode.IsSpace plus the ASCII separators U+001C..U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
