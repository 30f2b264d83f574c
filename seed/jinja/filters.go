package jinja

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seedinit/seedinit/seed/pyfmt"
)

type filterFunc func(r *renderer, v value, args []value, kwargs map[string]value) (value, error)

// filters are the Jinja2 filters this renderer knows; the parser refuses
// any other name, as Jinja2 refuses unknown filters when it compiles.
var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"default":    filterDefault,
		"d":          filterDefault,
		"lower":      stringFilter(strings.ToLower),
		"upper":      stringFilter(strings.ToUpper),
		"capitalize": stringFilter(pyCapitalize),
		"title":      stringFilter(jinjaTitle),
		"string":     stringFilter(func(s string) string { return s }),
		"trim":       filterTrim,
		"replace":    filterReplace,
		"join":       filterJoin,
		"length":     filterLength,
		"count":      filterLength,
		"int":        filterInt,
		"float":      filterFloat,
		"first":      filterFirst,
		"last":       filterLast,
		"list":       filterList,
		"abs":        filterAbs,
		"round":      filterRound,
		"indent":     filterIndent,
		"tojson":     filterToJSON,
		"items":      filterItems,
		"format":     filterFormat,
		"dictsort":   filterDictsort,
		"sort":       filterSort,
		"reverse":    filterReverse,
	}
}

type param struct {
	name string
	def  value
}

// bind matches positional and keyword arguments to params, as a Python
// call would.
func bind(args []value, kwargs map[string]value, params ...param) ([]value, error) {
	if len(args) > len(params) {
		return nil, fmt.Errorf("takes at most %d arguments (%d given)", len(params), len(args))
	}
	out := make([]value, len(params))
	for i, p := range params {
		out[i] = p.def
		if i < len(args) {
			out[i] = args[i]
		}
	}
	for k, v := range kwargs {
		i := slices.IndexFunc(params, func(p param) bool { return p.name == k })
		if i < 0 {
			return nil, fmt.Errorf("got an unexpected keyword argument %q", k)
		}
		if i < len(args) {
			return nil, fmt.Errorf("got multiple values for argument %q", k)
		}
		out[i] = v
	}
	return out, nil
}

func filterDefault(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"default_value", ""}, param{"boolean", false})
	if err != nil {
		return nil, err
	}
	if _, undefined := v.(*undefinedValue); undefined || (truthy(a[1]) && !truthy(v)) {
		return a[0], nil
	}
	return v, nil
}

func stringFilter(fn func(string) string) filterFunc {
	return func(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
		if _, err := bind(args, kwargs); err != nil {
			return nil, err
		}
		s, err := strValue(v)
		if err != nil {
			return nil, err
		}
		return fn(s), r.spend(len(s))
	}
}

// pyCapitalize is Python's str.capitalize.
func pyCapitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToTitle(r)) + strings.ToLower(s[size:])
}

// jinjaTitle is Jinja2's title filter: words start after runs of
// whitespace, "-", "(", "{", "[" or "<".
func jinjaTitle(s string) string {
	var b strings.Builder
	wordStart := true
	for _, r := range s {
		if isPySpace(r) || strings.ContainsRune("-({[<", r) {
			b.WriteRune(r)
			wordStart = true
			continue
		}
		if wordStart {
			b.WriteString(strings.ToUpper(string(r)))
		} else {
			b.WriteString(strings.ToLower(string(r)))
		}
		wordStart = false
	}
	return b.String()
}

func filterTrim(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"chars", nil})
	if err != nil {
		return nil, err
	}
	s, err := strValue(v)
	if err != nil {
		return nil, err
	}
	if err := r.spend(len(s)); err != nil {
		return nil, err
	}
	return pyStrip(s, a[0], true, true)
}

// pyStrip is Python's str.strip family; chars nil means whitespace.
func pyStrip(s string, chars value, left, right bool) (value, error) {
	cut := isPySpace
	if chars != nil {
		set, ok := chars.(string)
		if !ok {
			return nil, fmt.Errorf("strip arg must be None or str, not %s", typeName(chars))
		}
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

func filterReplace(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"old", nil}, param{"new", nil}, param{"count", nil})
	if err != nil {
		return nil, err
	}
	if len(args)+len(kwargs) < 2 {
		return nil, errors.New("missing the old and new arguments")
	}
	s, err := strValue(v)
	if err != nil {
		return nil, err
	}
	old, err := strValue(a[0])
	if err != nil {
		return nil, err
	}
	repl, err := strValue(a[1])
	if err != nil {
		return nil, err
	}
	n := int64(-1)
	if a[2] != nil {
		c, ok := indexValue(a[2])
		if !ok {
			return nil, fmt.Errorf("count must be an integer, not %s", typeName(a[2]))
		}
		n = c
	}
	return r.replace(s, old, repl, n)
}

func (r *renderer) replace(s, old, repl string, n int64) (value, error) {
	if n < 0 {
		n = -1
	}
	matches := int64(strings.Count(s, old))
	if n >= 0 && n < matches {
		matches = n
	}
	if err := r.checkSize(len(s) + int(matches)*(len(repl)-len(old))); err != nil {
		return nil, err
	}
	if err := r.allocate(len(s) + int(matches)*max(len(repl)-len(old), 0)); err != nil {
		return nil, err
	}
	return strings.Replace(s, old, repl, int(max(n, -1))), nil
}

func filterJoin(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"d", ""}, param{"attribute", nil})
	if err != nil {
		return nil, err
	}
	if a[1] != nil {
		return nil, errors.New("unsupported attribute argument")
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	sep, err := strValue(a[0])
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, item := range items {
		s, err := strValue(item)
		if err != nil {
			return nil, err
		}
		if err := r.checkSize(b.Len() + len(sep) + len(s)); err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func length(v value) (int, error) {
	switch v := v.(type) {
	case string:
		return stringLen(v), nil
	case *pyList:
		return len(v.items), nil
	case *pyDict:
		return v.len(), nil
	case *undefinedValue:
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

func filterLength(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if err := r.spend(len(s)); err != nil {
			return nil, err
		}
	}
	n, err := length(v)
	return int64(n), err
}

func filterInt(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"default", int64(0)}, param{"base", int64(10)})
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case string:
		base, ok := indexValue(a[1])
		if !ok {
			return nil, fmt.Errorf("base must be an integer, not %s", typeName(a[1]))
		}
		if n, err := parsePyInt(x, base); err == nil {
			return n, nil
		}
		if f, err := parsePyFloat(x); err == nil {
			return floatToInt(f)
		}
		return a[0], nil
	case bool, int64:
		n, _ := number(x)
		return n, nil
	case float64:
		return floatToInt(x)
	}
	return a[0], nil
}

func floatToInt(f float64) (value, error) {
	if math.IsInf(f, 0) {
		return nil, errors.New("cannot convert float infinity to integer")
	}
	if math.IsNaN(f) {
		return nil, errors.New("cannot convert float NaN to integer")
	}
	t := math.Trunc(f)
	if t >= 1<<63 || t < -(1<<63) {
		return nil, errIntOverflow
	}
	return int64(t), nil
}

// parsePyInt is Python's int(text, base).
func parsePyInt(s string, base int64) (int64, error) {
	s = strings.TrimFunc(s, isPySpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if base != 0 && (base < 2 || base > 36) {
		return 0, errors.New("int() base must be >= 2 and <= 36, or 0")
	}
	lower := strings.ToLower(s)
	prefixBase := map[string]int64{"0x": 16, "0o": 8, "0b": 2}
	if len(lower) >= 2 {
		if pb, ok := prefixBase[lower[:2]]; ok && (base == 0 || base == pb) {
			base = pb
			s = strings.TrimPrefix(s[2:], "_")
		}
	}
	if base == 0 {
		if len(s) > 1 && strings.Trim(s, "0_") != "" && s[0] == '0' {
			return 0, errors.New("invalid literal")
		}
		base = 10
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, errors.New("invalid literal")
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), int(base), 64)
	if err != nil {
		if isRangeErr(err) {
			return 0, errIntOverflow
		}
		return 0, err
	}
	if neg {
		n = -n
	}
	return n, nil
}

// parsePyFloat is Python's float(text).
func parsePyFloat(s string) (float64, error) {
	s = strings.TrimFunc(s, isPySpace)
	lower := strings.ToLower(strings.TrimLeft(s, "+-"))
	switch lower {
	case "inf", "infinity", "nan":
	default:
		if strings.ContainsAny(lower, "xp") || strings.HasPrefix(lower, "_") || strings.HasSuffix(lower, "_") || strings.Contains(lower, "__") {
			return 0, errors.New("invalid literal")
		}
		for i := 0; i < len(lower); i++ {
			if lower[i] == '_' && !(i > 0 && isDigit(lower[i-1]) && i+1 < len(lower) && isDigit(lower[i+1])) {
				return 0, errors.New("invalid literal")
			}
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !isRangeErr(err) {
		return 0, err
	}
	return f, nil
}

func filterFloat(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"default", 0.0})
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case string:
		if f, err := parsePyFloat(x); err == nil {
			return f, nil
		}
	case bool, int64, float64:
		n, _ := number(x)
		return asFloat(n), nil
	}
	return a[0], nil
}

func filterFirst(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return &undefinedValue{hint: "No first item, sequence was empty."}, nil
		}
		r, _ := utf8.DecodeRuneInString(s)
		return string(r), nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefinedValue{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func filterLast(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return &undefinedValue{hint: "No last item, sequence was empty."}, nil
		}
		r, _ := utf8.DecodeLastRuneInString(s)
		return string(r), nil
	}
	if it, ok := v.(*iterator); ok {
		return nil, fmt.Errorf("'%s' object is not reversible", it.kind)
	}
	items, err := iterate(v)
	if err != nil {
		return nil, fmt.Errorf("'%s' object is not reversible", typeName(v))
	}
	if len(items) == 0 {
		return &undefinedValue{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func filterList(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if err := r.spend(len(items)); err != nil {
		return nil, err
	}
	return newList(append([]value(nil), items...)), nil
}

func filterAbs(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case bool:
		n, _ := number(x)
		return n, nil
	case int64:
		if x == math.MinInt64 {
			return nil, errIntOverflow
		}
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
}

func filterRound(_ *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"precision", int64(0)}, param{"method", "common"})
	if err != nil {
		return nil, err
	}
	precision, ok := indexValue(a[0])
	if !ok {
		return nil, fmt.Errorf("precision must be an integer, not %s", typeName(a[0]))
	}
	if precision > 308 || precision < -308 {
		return nil, errors.New("unsupported precision")
	}
	if u, ok := v.(*undefinedValue); ok {
		return nil, u.fail()
	}
	n, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("type %s doesn't define __round__ method", typeName(v))
	}
	switch a[1] {
	case "common":
		if i, isInt := n.(int64); isInt {
			if precision >= 0 {
				return i, nil
			}
			return nil, errors.New("unsupported: rounding an integer to a negative precision")
		}
		f := n.(float64)
		if math.IsInf(f, 0) || math.IsNaN(f) || precision < 0 {
			if precision < 0 {
				return nil, errors.New("unsupported: negative precision")
			}
			return f, nil
		}
		// Python rounds the exact binary value half to even, as
		// strconv does when it formats.
		rounded, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(precision), 64), 64)
		return rounded, nil
	case "ceil", "floor":
		scale := math.Pow(10, float64(precision))
		x := asFloat(n) * scale
		if a[1] == "ceil" {
			return math.Ceil(x) / scale, nil
		}
		return math.Floor(x) / scale, nil
	}
	return nil, errors.New("method must be common, ceil or floor")
}

func filterIndent(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"width", int64(4)}, param{"first", false}, param{"blank", false})
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		if u, isUndef := v.(*undefinedValue); isUndef {
			return nil, u.fail()
		}
		return nil, fmt.Errorf("indent needs a string, not %s", typeName(v))
	}
	indention, isString := a[0].(string)
	if !isString {
		w, ok := indexValue(a[0])
		if !ok {
			return nil, fmt.Errorf("width must be an integer or a string, not %s", typeName(a[0]))
		}
		if w > int64(r.maxOutput) {
			return nil, fmt.Errorf("value exceeds %d bytes", r.maxOutput)
		}
		indention = strings.Repeat(" ", int(max(w, 0)))
	}
	lines := splitLines(s + "\n")
	if err := r.checkSize(len(s) + len(lines)*(len(indention)+1)); err != nil {
		return nil, err
	}
	var out string
	if truthy(a[2]) {
		out = strings.Join(lines, "\n"+indention)
	} else {
		var b strings.Builder
		b.WriteString(lines[0])
		for _, line := range lines[1:] {
			b.WriteString("\n")
			if line != "" {
				b.WriteString(indention)
			}
			b.WriteString(line)
		}
		out = b.String()
	}
	if truthy(a[1]) {
		out = indention + out
	}
	return out, nil
}

// splitLines is Python's str.splitlines() without keepends.
func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				size++
			}
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

func filterItems(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	gen := &iterator{kind: "generator"}
	switch d := v.(type) {
	case *undefinedValue:
	case *pyDict:
		pairs, err := dictItems(r, d, kindList)
		if err != nil {
			return nil, err
		}
		gen.items = pairs.(*pyList).items
	default:
		gen.err = errors.New("can only get item pairs from a mapping")
	}
	return gen, nil
}

func dictItems(r *renderer, d *pyDict, kind listKind) (value, error) {
	if err := r.spend(d.len()); err != nil {
		return nil, err
	}
	items := make([]value, d.len())
	for i, k := range d.keys {
		items[i] = newTuple([]value{k, d.vals[i]})
	}
	return &pyList{items: items, kind: kind}, nil
}

func filterToJSON(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"indent", nil})
	if err != nil {
		return nil, err
	}
	indent, hasIndent := "", a[0] != nil
	if hasIndent {
		switch w := a[0].(type) {
		case string:
			indent = w
		default:
			n, ok := indexValue(w)
			if !ok {
				return nil, fmt.Errorf("indent must be an integer or a string, not %s", typeName(w))
			}
			indent = strings.Repeat(" ", int(min(max(n, 0), 64)))
		}
	}
	var b strings.Builder
	if err := writeJSON(r, &b, v, hasIndent, indent, 0); err != nil {
		return nil, err
	}
	if err := r.spend(b.Len()); err != nil {
		return nil, err
	}
	// Jinja2 makes the result safe to embed in HTML.
	return strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "'", `\u0027`).Replace(b.String()), nil
}

// writeJSON is Python's json.dumps(v, sort_keys=True, indent=...).
func writeJSON(r *renderer, b *strings.Builder, v value, hasIndent bool, indent string, depth int) error {
	if depth > maxReprDepth {
		return errors.New("maximum recursion depth exceeded while encoding JSON")
	}
	if b.Len() > r.maxOutput {
		return fmt.Errorf("value exceeds %d bytes", r.maxOutput)
	}
	if err := r.spend(1); err != nil {
		return err
	}
	newline := func(level int) {
		b.WriteByte('\n')
		for range level {
			b.WriteString(indent)
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pyfmt.Float(x))
		}
	case string:
		writeJSONString(b, x)
	case *pyList:
		if x.kind == kindRange || x.kind == kindDictKeys || x.kind == kindDictValues || x.kind == kindDictItems {
			return fmt.Errorf("object of type %s is not JSON serializable", typeName(x))
		}
		if len(x.items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range x.items {
			if i > 0 {
				b.WriteByte(',')
				if !hasIndent {
					b.WriteByte(' ')
				}
			}
			if hasIndent {
				newline(depth + 1)
			}
			if err := writeJSON(r, b, item, hasIndent, indent, depth+1); err != nil {
				return err
			}
		}
		if hasIndent {
			newline(depth)
		}
		b.WriteByte(']')
	case *pyDict:
		if x.len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys, err := sortedJSONKeys(r, x)
		if err != nil {
			return err
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
				if !hasIndent {
					b.WriteByte(' ')
				}
			}
			if hasIndent {
				newline(depth + 1)
			}
			writeJSONString(b, k.text)
			b.WriteString(": ")
			if err := writeJSON(r, b, x.vals[k.index], hasIndent, indent, depth+1); err != nil {
				return err
			}
		}
		if hasIndent {
			newline(depth)
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

type jsonKey struct {
	text  string
	index int
}

func sortedJSONKeys(r *renderer, d *pyDict) ([]jsonKey, error) {
	keys := make([]jsonKey, d.len())
	var sortErr error
	order := make([]int, d.len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		c, err := r.order(d.keys[i], d.keys[j], 0)
		if err != nil && sortErr == nil {
			sortErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(d.keys[i]), typeName(d.keys[j]))
		}
		return c
	})
	if sortErr != nil {
		return nil, sortErr
	}
	for n, i := range order {
		var text string
		switch k := d.keys[i].(type) {
		case string:
			text = k
		case nil:
			text = "null"
		case bool:
			text = strconv.FormatBool(k)
		case int64:
			text = strconv.FormatInt(k, 10)
		case float64:
			text = pyfmt.Float(k)
		default:
			return nil, fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		keys[n] = jsonKey{text: text, index: i}
	}
	return keys, nil
}

// writeJSONString quotes with Python's ensure_ascii escaping.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

func filterFormat(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if len(args) > 0 && len(kwargs) > 0 {
		return nil, errors.New("can't handle positional and keyword arguments at the same time")
	}
	format, err := strValue(v)
	if err != nil {
		return nil, err
	}
	if len(kwargs) > 0 {
		d := newDict()
		for k, kv := range kwargs {
			d.setString(k, kv)
		}
		return r.printf(format, d)
	}
	return r.printf(format, newTuple(args))
}

// sortKey folds case for strings unless the sort is case sensitive, as
// Jinja2's ignore_case does.
func sortKey(v value, caseSensitive bool) value {
	if s, ok := v.(string); ok && !caseSensitive {
		return strings.ToLower(s)
	}
	return v
}

// sortValues sorts stably with Python's ordering and fails on values
// that Python cannot compare.
func (r *renderer) sortValues(items []value, key func(value) value, reverse bool) error {
	if err := r.spend(len(items) * 4); err != nil {
		return err
	}
	var sortErr error
	slices.SortStableFunc(items, func(a, b value) int {
		c, err := r.order(key(a), key(b), 0)
		if err != nil && sortErr == nil {
			sortErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(key(a)), typeName(key(b)))
		}
		if reverse {
			return -c
		}
		return c
	})
	return sortErr
}

func filterDictsort(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"case_sensitive", false}, param{"by", "key"}, param{"reverse", false})
	if err != nil {
		return nil, err
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, fmt.Errorf("dictsort needs a mapping, not %s", typeName(v))
	}
	pos := 0
	switch a[1] {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, errors.New("you can only sort by either \"key\" or \"value\"")
	}
	pairs, err := dictItems(r, d, kindList)
	if err != nil {
		return nil, err
	}
	items := pairs.(*pyList).items
	caseSensitive := truthy(a[0])
	err = r.sortValues(items, func(p value) value { return sortKey(p.(*pyList).items[pos], caseSensitive) }, truthy(a[2]))
	return pairs, err
}

func filterSort(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	a, err := bind(args, kwargs, param{"reverse", false}, param{"case_sensitive", false}, param{"attribute", nil})
	if err != nil {
		return nil, err
	}
	if a[2] != nil {
		return nil, errors.New("unsupported attribute argument")
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	sorted := append([]value(nil), items...)
	caseSensitive := truthy(a[1])
	err = r.sortValues(sorted, func(x value) value { return sortKey(x, caseSensitive) }, truthy(a[0]))
	return newList(sorted), err
}

// filterReverse reverses a string, or a sequence into an iterator.
func filterReverse(r *renderer, v value, args []value, kwargs map[string]value) (value, error) {
	if _, err := bind(args, kwargs); err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		runes := []rune(s)
		slicesReverse(runes)
		return string(runes), r.spend(len(s))
	}
	kind := "reversed"
	switch x := v.(type) {
	case *pyList:
		kind = map[listKind]string{kindList: "list_reverseiterator", kindRange: "range_iterator",
			kindDictKeys: "dict_reversekeyiterator", kindDictValues: "dict_reversevalueiterator",
			kindDictItems: "dict_reverseitemiterator"}[x.kind]
		if kind == "" {
			kind = "reversed"
		}
	case *pyDict:
		kind = "dict_reversekeyiterator"
	case *undefinedValue:
	case *iterator:
		return nil, fmt.Errorf("'%s' object is not reversible", x.kind)
	default:
		return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := append([]value(nil), items...)
	slices.Reverse(out)
	return &iterator{items: out, kind: kind}, r.spend(len(out))
}
