package scripts

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

// Shellify turns bootcmd/runcmd's list into a shell script the way
// cloud-init's util.shellify does: a string is a line of shell as it is, a
// list is one command whose words are single-quoted, a null is skipped.
// Anything else makes the whole list an error: running some of the
// commands and not others would be worse than running none.
func Shellify(cmds []any) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i, c := range cmds {
		switch v := c.(type) {
		case nil:
		case string:
			b.WriteString(v + "\n")
		case []any:
			words := make([]string, len(v))
			for j, w := range v {
				words[j] = shellQuote(pyStr(w))
			}
			b.WriteString(strings.Join(words, " ") + "\n")
		default:
			return "", fmt.Errorf("item %d: want a string or a list, got %s", i, apply.TypeName(c))
		}
	}
	return b.String(), nil
}

// shellQuote wraps s in single quotes, closing and reopening them around
// each quote inside.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pyStr spells a YAML value as Python's str() does, since cloud-init
// stringifies each word of a list command that way.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}

// pyRepr spells a value as Python's repr() does (str() of a container
// shows its items with repr()).
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(t, 10)
	case int:
		return strconv.Itoa(t)
	case float64:
		return pyFloat(t)
	case string:
		return pyQuote(t)
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return pyDict(t)
	case apply.Config:
		return pyDict(t)
	}
	return fmt.Sprint(v)
}

// pyDict lists keys in insertion order in Python; a decoded map has lost
// that order, so keys come sorted.
func pyDict(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = pyQuote(k) + ": " + pyRepr(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	exp := 0
	if i := strings.IndexAny(s, "e"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
	} else if f != 0 {
		exp = int(math.Floor(math.Log10(math.Abs(f))))
	}
	// Python's repr switches to exponents below 1e-4 and from 1e16.
	if exp < -4 || exp >= 16 {
		s = strconv.FormatFloat(f, 'e', -1, 64)
		mant, e, _ := strings.Cut(s, "e")
		n, _ := strconv.Atoi(e)
		sign := "+"
		if n < 0 {
			sign, n = "-", -n
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, n)
	}
	s = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyQuote is Python's repr of a str: single quotes unless the string has
// one and no double quote.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
