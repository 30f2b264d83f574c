// Package pyfmt spells values the way Python's repr() and str() do.
//
// cloud-init, PyYAML and Jinja2 put Python's spelling of values into files,
// shell scripts and messages; seedinit has to write the same bytes, so every
// package that imitates them shares these primitives.
package pyfmt

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Float is Python's repr(float) (and str(float)): the shortest text that
// reads back the same, in exponent form below 1e-4 and from 1e16 up,
// with "inf", "-inf" and "nan" for the values that are not finite.
func Float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mantissa, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mantissa, ".", "", 1)
	// decpt is where the decimal point goes relative to the digits; Python
	// chooses the exponent form from it, not from the digit count as Go's
	// 'g' verb does.
	decpt := exp + 1
	if decpt > 16 || decpt < -3 {
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		expSign := "+"
		if exp < 0 {
			expSign, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, out, expSign, exp)
	}
	switch {
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	default:
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
}

// Quote is Python 3's repr(str): single quotes unless the text holds a
// single quote and no double quote, with backslash escapes for the quote,
// the backslash and every character Python does not count as printable.
func Quote(s string) string {
	var b strings.Builder
	WriteQuoted(&b, s)
	return b.String()
}

// WriteQuoted writes Quote(s) to b without building an intermediate string.
func WriteQuoted(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Not valid UTF-8: Python would have refused the text earlier;
			// show the byte the way a surrogate escape would.
			fmt.Fprintf(b, "\\udc%02x", s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(b, "\\x%02x", r)
		case r < 0x80 || Printable(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, "\\x%02x", r)
		case r < 0x10000:
			fmt.Fprintf(b, "\\u%04x", r)
		default:
			fmt.Fprintf(b, "\\U%08x", r)
		}
	}
	b.WriteByte(quote)
}

// Printable approximates Python's str.isprintable for one character:
// everything but control, format, surrogate, private-use, unassigned and
// separator characters (the ASCII space aside). Go's Unicode tables may be
// a version apart from Python's, so a character assigned in between can
// differ.
func Printable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsPrint(r) && !unicode.Is(unicode.Co, r)
}

// maxDepth keeps a hostile, deeply nested value from making a huge text.
const maxDepth = 50

// Repr is Python's repr() of a value decoded from YAML or JSON: None,
// True/False, integers, floats, quoted strings, lists and dicts. A Python
// dict keeps its insertion order, which a decoded Go map has lost, so
// mapping keys come sorted. Types outside that set print with fmt's %v.
func Repr(v any) string { return Reprer{}.Repr(v, "") }

// Str is Python's str(): a string as it is, anything else as Repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Repr(v)
}

// Reprer is Repr for a caller that knows more about its values: the order
// their mappings were written in, and types of its own.
type Reprer struct {
	// Keys lists a mapping's keys in the order to print them; path is the
	// mapping's place in the value, keys and list indexes joined with
	// ".". Nil sorts them.
	Keys func(m map[string]any, path string) []string
	// Other turns a value of a type Repr does not know into one it does
	// (a Raw spelling, a Dict); false prints the value with fmt's %v.
	Other func(v any) (any, bool)
}

// Raw is printed as it is: a caller's own repr of a value.
type Raw string

// Dict is a mapping with its keys in order. Its values have no place in
// the value Reprer.Repr was given: their path is "".
type Dict struct {
	Keys   []string
	Values map[string]any
}

// Repr writes v, found at path ("" for the top).
func (r Reprer) Repr(v any, path string) string {
	var b strings.Builder
	r.write(&b, v, path, 0)
	return b.String()
}

func (r Reprer) write(b *strings.Builder, v any, path string, depth int) {
	if depth > maxDepth {
		b.WriteString("...")
		return
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int:
		b.WriteString(strconv.Itoa(t))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(t, 10))
	case float64:
		b.WriteString(Float(t))
	case string:
		WriteQuoted(b, t)
	case Raw:
		b.WriteString(string(t))
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			r.write(b, e, JoinPath(path, strconv.Itoa(i)), depth+1)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			WriteQuoted(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		r.writeMap(b, r.keys(t, path), t, path, true, depth)
	case Dict:
		r.writeMap(b, t.Keys, t.Values, "", false, depth)
	default:
		if r.Other != nil {
			if known, ok := r.Other(v); ok {
				r.write(b, known, path, depth)
				return
			}
		}
		// A named map type (apply.Config) is still a mapping to Python.
		if m, ok := asStringMap(v); ok {
			r.writeMap(b, r.keys(m, path), m, path, true, depth)
			return
		}
		fmt.Fprintf(b, "%v", v)
	}
}

func (r Reprer) keys(m map[string]any, path string) []string {
	if r.Keys != nil {
		return r.Keys(m, path)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeMap writes m's keys in order; the values of a placed mapping are
// at path.key, a Dict's have no place.
func (r Reprer) writeMap(b *strings.Builder, keys []string, m map[string]any, path string, placed bool, depth int) {
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		WriteQuoted(b, k)
		b.WriteString(": ")
		child := ""
		if placed {
			child = JoinPath(path, k)
		}
		r.write(b, m[k], child, depth+1)
	}
	b.WriteByte('}')
}

// JoinPath joins a place in a value and a key or index with ".".
func JoinPath(prefix, elem string) string {
	if prefix == "" {
		return elem
	}
	return prefix + "." + elem
}

var stringMapType = reflect.TypeFor[map[string]any]()

// asStringMap sees through named types whose underlying type is
// map[string]any.
func asStringMap(v any) (map[string]any, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || !rv.Type().ConvertibleTo(stringMapType) || rv.Kind() != reflect.Map {
		return nil, false
	}
	return rv.Convert(stringMapType).Interface().(map[string]any), true
}
