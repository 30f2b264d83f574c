package render

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seedinit/seedinit/netup/model"
)

// ErrUnsafeValue is returned by a renderer for a value that its format
// cannot carry as a value: one that would end the line it is written on,
// or the quoted string or shell word around it. The parsers refuse such
// values already; the renderers check again so that no parser, present or
// future, can smuggle a line into a udev rule, a shell-sourced ifcfg
// file, a networkd unit or an ENI stanza.
var ErrUnsafeValue = errors.New("unsafe value")

// unsafeError names the value, by its place in the model, and what is
// wrong with it.
func unsafeError(format, where, value, why string) error {
	return fmt.Errorf("render %s: %s: %s: %s: %w", format, where, quoted(value), why, ErrUnsafeValue)
}

// quoted spells a value for an error message: Go-quoted, so that control
// characters show escaped, and cut after 64 bytes.
func quoted(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// pathElem spells a mapping key in the path of an error: as it is when
// it is a plain word, else quoted.
func pathElem(k string) string {
	if k != "" && len(k) <= 64 && !strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '"' }) {
		return k
	}
	return quoted(k)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// whyUnsafe says what is wrong with s as a value of format ("" when
// nothing is): control characters, whitespace in a value that must be
// one word, any of the characters in extra.
func whyUnsafe(format, s string, word bool, extra string) string {
	switch {
	case strings.ContainsFunc(s, isControl):
		return "holds a control character"
	case word && strings.ContainsFunc(s, unicode.IsSpace):
		return "holds whitespace where one word is written"
	case extra != "" && strings.ContainsAny(s, extra):
		return fmt.Sprintf("holds one of %s, which %s cannot carry", strconv.Quote(extra), format)
	}
	return ""
}

// checkString is whyUnsafe as an error naming the value by where.
func checkString(format, where, s string, word bool, extra string) error {
	if why := whyUnsafe(format, s, word, extra); why != "" {
		return unsafeError(format, where, s, why)
	}
	return nil
}

// checkModel walks every string the model holds (names, MACs, addresses,
// parameter names and values; everything but the v2 document netplan
// passes through, which NetplanContent checks on its own) and refuses the
// first that checkString refuses. Every value but a link parameter's must
// be one word: they are written as words of a line (ENI's "iface NAME
// inet static", udev's NAME="..."). The walk is generic so that a field
// added to the model is covered without anyone remembering to.
func checkModel(format string, n *model.Network, extra string) error {
	var path modelPath
	return path.walk(reflect.ValueOf(n).Elem(), true, func(s string, word bool) error {
		if why := whyUnsafe(format, s, word, extra); why != "" {
			return unsafeError(format, path.String(), s, why)
		}
		return nil
	})
}

var paramType = reflect.TypeOf(model.Param{})

// modelPath is where the walk is in the model, spelled only when a value
// is refused: a render of thousands of interfaces would otherwise make a
// string for every value it checks.
type modelPath []pathStep

// pathStep is a field or key name, or a list index when name is empty.
type pathStep struct {
	name  string
	index int
}

func (p modelPath) String() string {
	var b strings.Builder
	b.WriteString("network")
	for _, s := range p {
		if s.name == "" {
			fmt.Fprintf(&b, "[%d]", s.index)
		} else {
			b.WriteString("." + pathElem(s.name))
		}
	}
	return b.String()
}

func (p *modelPath) walk(v reflect.Value, word bool, check func(s string, word bool) error) error {
	switch v.Kind() {
	case reflect.String:
		return check(v.String(), word)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return p.walk(v.Elem(), word, check)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			*p = append(*p, pathStep{index: i})
			err := p.walk(v.Index(i), word, check)
			*p = (*p)[:len(*p)-1]
			if err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if err := p.walk(k, true, check); err != nil {
				return err
			}
			*p = append(*p, pathStep{name: fmt.Sprint(k.Interface())})
			err := p.walk(iter.Value(), word, check)
			*p = (*p)[:len(*p)-1]
			if err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "V2" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = f.Name
			}
			// A link parameter's value is the rest of an ENI option line
			// ("bridge_pathcost eth0 10"): words, not one word.
			fieldWord := word && !(t == paramType && f.Name == "Value")
			*p = append(*p, pathStep{name: name})
			err := p.walk(v.Field(i), fieldWord, check)
			*p = (*p)[:len(*p)-1]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDocument refuses a control character in any key or string of a
// decoded YAML document.
func checkDocument(format, where string, v any) error {
	switch x := v.(type) {
	case string:
		return checkString(format, where, x, false, "")
	case map[string]any:
		for k, item := range x {
			if err := checkString(format, where+" key", k, false, ""); err != nil {
				return err
			}
			if err := checkDocument(format, where+"."+pathElem(k), item); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range x {
			if err := checkDocument(format, fmt.Sprintf("%s[%d]", where, i), item); err != nil {
				return err
			}
		}
	case []string:
		for i, item := range x {
			if err := checkString(format, fmt.Sprintf("%s[%d]", where, i), item, false, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFileNames refuses an interface name that would not stay one file
// name in the paths a renderer writes ("ifcfg-NAME"): a "/" would make
// directories of it, which net-convert would create under its output
// directory and apply under the target's /etc.
func checkFileNames(format string, n *model.Network) error {
	for i, iface := range n.Interfaces {
		if iface.Name == "" || strings.ContainsRune(iface.Name, '/') {
			return unsafeError(format, fmt.Sprintf("network.interfaces[%d].name", i), iface.Name, "not usable in a file name")
		}
	}
	return nil
}

// udevUnsafe are the characters a udev rule cannot carry inside a
// "..." value: the quote and backslash end or escape it, and "$" and
// "%" start udev's substitutions in NAME=.
const udevUnsafe = "\"\\$%"

// shellUnsafe are the characters an ifcfg file, which the network scripts
// source with the shell, cannot carry in a value, quoted or not:
// quotes, expansions ($, `), the backslash, the characters that end a
// command or start a redirection, and "~", which expands to a home
// directory at the start of an unquoted value.
const shellUnsafe = "\"'`$\\;&|<>()~"

// networkdUnsafe: a backslash at the end of a unit file's line joins the
// next line to it.
const networkdUnsafe = "\\"
