package parse

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// ErrInvalidValue marks an error about a value that is not what its key
// says it is: a MAC that is not a MAC, an interface name the kernel would
// refuse, an address that does not parse, a number out of range. The
// renderers write values into udev rules, shell-sourced ifcfg files,
// networkd units and ENI stanzas whose commands ifupdown runs, so such a
// value may be an attempt to inject a line; it is never rendered. Unlike
// an item seedinit merely cannot use (an unknown type, a NIC that is not
// on this machine), it makes the whole config refused: every parser then
// returns no network, as cloud-init raises on an invalid address and
// configures nothing.
var ErrInvalidValue = errors.New("invalid value")

// valueError is an error of the ErrInvalidValue kind.
type valueError struct{ msg string }

func (e *valueError) Error() string        { return e.msg }
func (e *valueError) Is(target error) bool { return target == ErrInvalidValue }

// invalid reports that v, the value of key, is not what key needs (want,
// "not a MAC address"). The value is quoted, control characters escaped
// and long values cut, so that an error message cannot inject a line
// into a log either.
func invalid(key string, v any, want string) error {
	return &valueError{fmt.Sprintf("key %q: %s: %s", key, quoteValue(v), want)}
}

// invalidf is invalid for a value with no key of its own (an item of a
// list, whose index the caller adds).
func invalidf(v any, want string) error {
	return &valueError{fmt.Sprintf("%s: %s", quoteValue(v), want)}
}

// refuse applies the rule of ErrInvalidValue at a parser's door: a network
// whose input had an invalid value is not returned.
func refuse(n *model.Network, err error) (*model.Network, error) {
	if errors.Is(err, ErrInvalidValue) {
		return nil, err
	}
	return n, err
}

// maxQuoted is how much of a value an error message shows.
const maxQuoted = 64

// quoteValue spells a value for an error message: Go-quoted (so a
// newline shows as \n), cut after maxQuoted bytes.
func quoteValue(v any) string {
	s, ok := v.(string)
	if !ok {
		s = pyfmt.Str(v)
	}
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// label spells a name for the "where" part of a message: as it is when
// it is a plain word of the characters names and MACs are made of, else
// quoted as quoteValue does.
func label(v any) string {
	s, ok := v.(string)
	if !ok {
		s = pyfmt.Str(v)
	}
	plain := s != "" && len(s) <= maxQuoted && s[0] != '.' && s[0] != '-'
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:@+-", c) >= 0
	}
	if plain {
		return s
	}
	return quoteValue(s)
}

// hasControl reports whether s holds a control character (C0 or DEL),
// which no value in any network config format may hold: a newline starts
// a new line (a new udev rule, a new shell assignment, a new ENI option).
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// maxIfaceName is the kernel's IFNAMSIZ less its terminating NUL.
const maxIfaceName = 15

// wantIfaceName says what an interface name must be.
const wantIfaceName = `not an interface name (1 to 15 of A-Z a-z 0-9 and - _ . @ +, not "." or "..")`

// checkIfaceName accepts the names the kernel accepts (dev_valid_name: 1
// to 15 bytes, not "." or "..", no "/", ":" or whitespace) that are also
// safe unquoted in every format the renderers write: letters, digits and
// "-_.@+". Every name in use (eth0, ens3, enp0s31f6, bond0.100, br-lan,
// tap0a1b2c3d-4e) is one; a name with quotes, "$" or a backslash is
// valid to the kernel but would break out of a udev rule or an ifcfg file,
// and the name is part of the paths net-convert writes.
func checkIfaceName(s string) bool {
	if s == "" || len(s) > maxIfaceName || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == '@', c == '+':
		default:
			return false
		}
	}
	return true
}

// IsInterfaceName reports whether s is an interface name the parsers
// accept (see checkIfaceName), for other inputs that name NICs.
func IsInterfaceName(s string) bool { return checkIfaceName(s) }

// IsMAC reports whether s is a MAC address the parsers accept.
func IsMAC(s string) bool { return checkMAC(s) }

// wantMAC says what a MAC address must be.
const wantMAC = `not a MAC address (6 or, for InfiniBand, 20 hex octets, each two digits, separated by ":" or "-")`

// checkMAC accepts what Go's net.ParseMAC reads (colon, dash or Cisco dot
// separators, either case, as cloud-init passes them on) with the 6
// octets of Ethernet or the 20 of InfiniBand.
func checkMAC(s string) bool {
	hw, err := net.ParseMAC(s)
	return err == nil && (len(hw) == 6 || len(hw) == 20)
}

// macError is invalid for a MAC, with the reason a YAML 1.1 reader turns
// an unquoted all-digit MAC (QEMU's 52:54:00:12:34:56) into a number.
func macError(key string, v any) error {
	switch v.(type) {
	case int64, int, float64:
		return invalid(key, v, wantMAC+`; YAML 1.1 reads an unquoted MAC of digits and colons as a base-60 number: quote it`)
	}
	return invalid(key, v, wantMAC)
}

// checkIP accepts an IPv4 or IPv6 address; an IPv6 address may name its
// zone ("fe80::1%eth0"), which must then be an interface name.
func checkIP(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	return a.Zone() == "" || checkIfaceName(a.Zone())
}

const wantIP = "not an IP address"

// maxDomain is the longest DNS name (RFC 1035), without a trailing dot.
const maxDomain = 253

const wantDomain = "not a DNS domain name (labels of A-Z a-z 0-9, - and _, 1 to 63 characters each, separated by dots; 253 characters at most; an internationalised name in its xn-- form)"

// checkDomain accepts a DNS name as resolv.conf's search and networkd's
// Domains= take it: dot-separated labels of letters, digits, "-" and "_"
// (which real Active Directory domains use), an optional trailing dot.
func checkDomain(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > maxDomain {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

const wantToken = "not a word (1 to 64 of A-Z a-z 0-9, - and _)"

// checkToken accepts the words that name a subnet type, an ENI method,
// a control or a scope: cloud-init passes any of them on as a word of an
// ENI line, so a word is all they may be.
func checkToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

const wantDriver = "not a kernel driver name or pattern (1 to 64 of A-Z a-z 0-9, - _ . + and the glob characters * ? [ ] !)"

// checkDriver accepts a driver name ("hv_netvsc", "mlx5_core") or a
// netplan-style glob of one ("mlx4_*"), as udev's DRIVERS== and
// networkd's Driver= match them.
func checkDriver(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.+*?[]!", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// MTU bounds: IPv4's minimum (RFC 791, the kernel's ETH_MIN_MTU) and
// the loopback's 64 KiB, the largest MTU Linux gives any device.
const (
	minMTU = 68
	maxMTU = 65536
)

func checkMTU(key string, v any) (int, error) {
	n, err := toInt(v)
	if err != nil || n < minMTU || n > maxMTU {
		return 0, invalid(key, v, fmt.Sprintf("not an MTU (%d to %d)", minMTU, maxMTU))
	}
	return n, nil
}

// checkMetric reads a route metric: the kernel's is unsigned, and toInt
// stops at the int32 range.
func checkMetric(key string, v any) (int, error) {
	n, err := toInt(v)
	if err != nil || n < 0 {
		return 0, invalid(key, v, "not a route metric (a whole number from 0)")
	}
	return n, nil
}

// ifupdownCommands are the ENI options whose argument ifupdown (and
// ifupdown2, which also reads "_" for "-") runs as a shell command. A v1
// "params" entry becomes an option line of the interface's stanza, as in
// cloud-init, so these would run whatever the config says as root.
var ifupdownCommands = map[string]bool{
	"up": true, "down": true, "pre-up": true, "post-up": true, "pre-down": true, "post-down": true,
}

const wantParamKey = "not a link parameter name (1 to 64 of A-Z a-z 0-9, - _ and .)"

// checkParamKey accepts a link parameter's name: one word, since ENI
// writes it as the first word of an option line, and not an ifupdown
// command option.
func checkParamKey(key string) error {
	ok := key != "" && len(key) <= 64
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
	}
	if !ok {
		return invalidf(key, wantParamKey)
	}
	if ifupdownCommands[strings.ToLower(strings.ReplaceAll(key, "_", "-"))] {
		return invalidf(key, "not a link parameter: ifupdown runs this option as a command, and seedinit passes no commands through a network config")
	}
	return nil
}

const wantParamValue = "not a link parameter value (A-Z a-z 0-9, spaces and - _ . , : / @ % + =; or a list of such)"

// checkParamString accepts a parameter value that every renderer can
// write as it is: ENI as the rest of an option line, sysconfig inside a
// double-quoted shell word (BONDING_OPTS), networkd after "Key=". Bond and
// bridge settings ("802.3ad", "layer3+4", "eth0 10", "10.0.0.1") need no
// other characters.
func checkParamString(s string) bool {
	if len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(" -_.,:/@%+=", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkParamValue checks a link parameter's value in every shape the
// parsers keep (see model.Param): a scalar, a list of scalars, or a
// mapping of port names to numbers (v2 path-cost, port-priority).
func checkParamValue(key string, v any) error {
	switch x := v.(type) {
	case nil, bool, int64, int:
		return nil
	case float64:
		return nil
	case string:
		if !checkParamString(x) {
			return invalid(key, x, wantParamValue)
		}
	case []string:
		for i, s := range x {
			if !checkParamString(s) {
				return invalid(fmt.Sprintf("%s[%d]", key, i), s, wantParamValue)
			}
		}
	case []any:
		for i, item := range x {
			if err := checkParamValue(fmt.Sprintf("%s[%d]", key, i), item); err != nil {
				return err
			}
		}
	case map[string]any:
		for port, n := range x {
			if !checkIfaceName(port) {
				return invalid(key, port, wantIfaceName)
			}
			switch n.(type) {
			case int64, int:
			default:
				return invalid(key+"."+port, n, "not a whole number")
			}
		}
	default:
		return invalid(key, v, fmt.Sprintf("a %s is not a link parameter value", yaml11.Kind(v)))
	}
	return nil
}

// checkNoControl walks a decoded document (the v2 config netplan gets as
// it is) and reports the first string, key or value, that holds a
// control character, by its path. The keys seedinit reads are checked
// for what they mean elsewhere; this covers the ones it passes through.
func checkNoControl(path string, v any) error {
	if !anyControl(v) {
		return nil
	}
	return firstControl(path, v)
}

// anyControl is checkNoControl's quick pass: no paths, no sorting, for a
// document of thousands of devices that (nearly always) has nothing to
// report.
func anyControl(v any) bool {
	switch x := v.(type) {
	case string:
		return hasControl(x)
	case map[string]any:
		for k, item := range x {
			if hasControl(k) || anyControl(item) {
				return true
			}
		}
	case []any:
		for _, item := range x {
			if anyControl(item) {
				return true
			}
		}
	}
	return false
}

// firstControl finds what anyControl found, first in key order, so that
// the error names the same value every time.
func firstControl(path string, v any) error {
	switch x := v.(type) {
	case string:
		if hasControl(x) {
			return &valueError{fmt.Sprintf("%s: %s: holds a control character", path, quoteValue(x))}
		}
	case map[string]any:
		for _, k := range orderedKeys(x, nil) {
			if hasControl(k) {
				return &valueError{fmt.Sprintf("%s: key %s: holds a control character", path, quoteValue(k))}
			}
			if err := firstControl(path+"."+label(k), x[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range x {
			if err := firstControl(fmt.Sprintf("%s[%d]", path, i), item); err != nil {
				return err
			}
		}
	}
	return nil
}
