package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/seed/pyfmt"
)

// printf is Python's "format % args" for the common conversions
// (s r d i f F e E g G x X o c %), flags "-+ 0#", width and precision.
func (r *renderer) printf(format string, arg value) (string, error) {
	var args []value
	var mapping *pyDict
	// Python skips the "not all arguments converted" check when the
	// argument supports item access (a list, a dict), as for a mapping.
	lenient := false
	switch a := arg.(type) {
	case *pyList:
		if a.kind == kindTuple {
			args = a.items
		} else {
			args = []value{a}
			lenient = true
		}
	case *undefinedValue:
		args = []value{a}
		lenient = true
	case *pyDict:
		mapping = a
		args = []value{a}
	default:
		args = []value{a}
	}
	var b strings.Builder
	next := 0
	usedMapping := false
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		var v value
		haveValue := false
		if format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", errors.New("incomplete format key")
			}
			if mapping == nil {
				return "", errors.New("format requires a mapping")
			}
			key := format[i+1 : i+end]
			got, ok := mapping.get(key)
			if !ok {
				return "", fmt.Errorf("KeyError: %q", key)
			}
			v, haveValue, usedMapping = got, true, true
			i += end + 1
		}
		flags := ""
		for i < len(format) && strings.IndexByte("-+ 0#", format[i]) >= 0 {
			flags += string(format[i])
			i++
		}
		width, precision := "", ""
		for i < len(format) && isDigit(format[i]) {
			width += string(format[i])
			i++
		}
		if i < len(format) && format[i] == '.' {
			i++
			precision = "."
			for i < len(format) && isDigit(format[i]) {
				precision += string(format[i])
				i++
			}
		}
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		if len(width) > 6 || len(precision) > 6 {
			return "", errors.New("format width or precision too large")
		}
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveValue {
			if next >= len(args) {
				return "", errors.New("not enough arguments for format string")
			}
			v = args[next]
			next++
		}
		text, err := formatOne(verb, flags, width, precision, v)
		if err != nil {
			return "", err
		}
		if err := r.checkSize(b.Len() + len(text)); err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	if next < len(args) && !usedMapping && mapping == nil && !lenient {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func formatOne(verb byte, flags, width, precision string, v value) (string, error) {
	if u, ok := v.(*undefinedValue); ok && verb != 's' && verb != 'r' {
		return "", u.fail()
	}
	baseFlags := strings.ReplaceAll(flags, "#", "")
	spec := "%" + baseFlags + width + precision
	// Python ignores the "0" flag for text; Go would pad with zeros.
	textSpec := "%" + strings.ReplaceAll(baseFlags, "0", "") + width + precision
	switch verb {
	case 's', 'r', 'a':
		var s string
		var err error
		if verb == 's' {
			s, err = strValue(v)
		} else {
			s, err = reprString(v)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(textSpec+"s", s), nil
	case 'd', 'i', 'u', 'x', 'X', 'o':
		n, ok := number(v)
		if !ok {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", verb, typeName(v))
		}
		if f, isFloat := n.(float64); isFloat {
			if verb != 'd' && verb != 'i' && verb != 'u' {
				return "", fmt.Errorf("%%%c format: an integer is required, not float", verb)
			}
			iv, err := floatToInt(f)
			if err != nil {
				return "", err
			}
			n = iv
		}
		goVerb := map[byte]string{'d': "d", 'i': "d", 'u': "d", 'x': "x", 'X': "X", 'o': "o"}[verb]
		if strings.Contains(flags, "#") && verb != 'd' && verb != 'i' && verb != 'u' {
			prefix := map[byte]string{'x': "0x", 'X': "0X", 'o': "0o"}[verb]
			body := fmt.Sprintf("%"+precision+goVerb, n)
			neg := strings.HasPrefix(body, "-")
			body = strings.TrimPrefix(body, "-")
			if neg {
				prefix = "-" + prefix
			}
			return fmt.Sprintf("%"+strings.ReplaceAll(baseFlags, "0", "")+width+"s", prefix+body), nil
		}
		return fmt.Sprintf(spec+goVerb, n), nil
	case 'f', 'F', 'e', 'E', 'g', 'G':
		n, ok := number(v)
		if !ok {
			if s, isStr := v.(string); isStr {
				return "", fmt.Errorf("must be real number, not str (%q)", s)
			}
			return "", fmt.Errorf("must be real number, not %s", typeName(v))
		}
		f := asFloat(n)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			s := pyfmt.Float(f)
			if verb == 'F' || verb == 'E' || verb == 'G' {
				s = strings.ToUpper(s)
			}
			return fmt.Sprintf(textSpec+"s", s), nil
		}
		goVerb := string(verb)
		if verb == 'F' {
			goVerb = "f"
		}
		if precision == "" {
			spec += ".6"
		}
		return fmt.Sprintf(spec+goVerb, f), nil
	case 'c':
		switch x := v.(type) {
		case int64:
			if x < 0 || x > 0x10ffff {
				return "", errors.New("%c arg not in range(0x110000)")
			}
			return fmt.Sprintf(textSpec+"s", string(rune(x))), nil
		case string:
			if stringLen(x) != 1 {
				return "", errors.New("%c requires int or char")
			}
			return fmt.Sprintf(textSpec+"s", x), nil
		}
		return "", errors.New("%c requires int or char")
	}
	return "", fmt.Errorf("unsupported format character %s", strconv.QuoteRune(rune(verb)))
}
