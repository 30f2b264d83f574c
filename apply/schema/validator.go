package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/seedinit/seedinit/seed/pyfmt"
)

// problem is one finding of the validator: where in the instance, what,
// and whether it is only a deprecation.
type problem struct {
	path       []any // string keys and int indexes
	msg        string
	deprecated bool
}

func (p problem) dotted() string {
	parts := make([]string, len(p.path))
	for i, e := range p.path {
		switch t := e.(type) {
		case int:
			parts[i] = strconv.Itoa(t)
		default:
			parts[i] = fmt.Sprint(t)
		}
	}
	return strings.Join(parts, ".")
}

// validator applies a draft-4 JSON schema the way cloud-init 22.4.2 sets up
// Python's jsonschema: every keyword of a schema applies, $ref's siblings
// included; "deprecated: true" yields a deprecation rather than an error;
// anyOf and oneOf pass deprecations of the branch that matched through;
// bytes count as strings; of the formats only "date" is checked (the
// others need Python packages Debian does not install).
type validator struct {
	root any
	r    *reprer
}

var (
	regexCache   = map[string]*regexp.Regexp{}
	regexCacheMu sync.Mutex
)

// pyRegexp compiles a Python regular expression for re.search. The only
// difference that matters for the patterns in the schema is "$", which in
// Python also matches before a final newline.
func pyRegexp(pattern string) (*regexp.Regexp, error) {
	regexCacheMu.Lock()
	defer regexCacheMu.Unlock()
	if re, ok := regexCache[pattern]; ok {
		return re, nil
	}
	var b strings.Builder
	inClass, escaped := false, false
	for _, c := range pattern {
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '$' && !inClass:
			b.WriteString(`(?:\n?\z)`)
			continue
		}
		b.WriteRune(c)
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("compile schema pattern %q: %w", pattern, err)
	}
	regexCache[pattern] = re
	return re, nil
}

func appendPath(path []any, elem any) []any {
	out := make([]any, len(path)+1)
	copy(out, path)
	out[len(path)] = elem
	return out
}

func (v *validator) dotted(path []any) string {
	return problem{path: path}.dotted()
}

func (v *validator) repr(inst any, path []any) string {
	return v.r.repr(inst, v.dotted(path))
}

// resolve follows a "#/..." JSON pointer within the root schema.
func (v *validator) resolve(ref string) (any, error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, fmt.Errorf("resolve $ref %q: only references within the schema are supported", ref)
	}
	cur := v.root
	pointer := strings.TrimPrefix(ref, "#")
	if pointer == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case *object:
			next, ok := t.get(tok)
			if !ok {
				return nil, fmt.Errorf("resolve $ref %q: no %q", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("resolve $ref %q: bad index %q", ref, tok)
			}
			cur = t[i]
		default:
			return nil, fmt.Errorf("resolve $ref %q: cannot descend into %T", ref, cur)
		}
	}
	return cur, nil
}

// isValid ignores deprecations, as cloud-init's override of is_valid does.
func (v *validator) isValid(inst any, sch any, path []any) bool {
	for _, p := range v.validate(inst, sch, path, 0) {
		if !p.deprecated {
			return false
		}
	}
	return true
}

const maxValidateDepth = 400

func (v *validator) validate(inst any, sch any, path []any, depth int) []problem {
	if depth > maxValidateDepth {
		return []problem{{path: path, msg: "nesting too deep to validate"}}
	}
	switch s := sch.(type) {
	case bool:
		if s {
			return nil
		}
		return []problem{{path: path, msg: "False schema does not allow " + v.repr(inst, path)}}
	case *object:
		var out []problem
		for _, kw := range s.keys {
			out = append(out, v.keyword(kw, s.values[kw], inst, s, path, depth)...)
		}
		return out
	}
	return nil
}

func (v *validator) fail(path []any, format string, args ...any) []problem {
	return []problem{{path: path, msg: fmt.Sprintf(format, args...)}}
}

func (v *validator) keyword(kw string, val any, inst any, s *object, path []any, depth int) []problem {
	switch kw {
	case "$ref":
		ref, _ := val.(string)
		target, err := v.resolve(ref)
		if err != nil {
			return v.fail(path, "%v", err)
		}
		return v.validate(inst, target, path, depth+1)
	case "allOf":
		var out []problem
		for _, sub := range asList(val) {
			out = append(out, v.validate(inst, sub, path, depth+1)...)
		}
		return out
	case "anyOf":
		return v.anyOf(asList(val), inst, path, depth)
	case "oneOf":
		return v.oneOf(asList(val), inst, path, depth)
	case "not":
		if v.isValid(inst, val, path) {
			return v.fail(path, "%s should not be valid under %s", v.repr(inst, path), v.r.repr(val, ""))
		}
	case "deprecated":
		if b, _ := val.(bool); b {
			msg := "DEPRECATED."
			if d, ok := s.get("description"); ok {
				if ds, _ := d.(string); ds != "" {
					msg = "DEPRECATED: " + ds
				}
			}
			return []problem{{path: path, msg: msg, deprecated: true}}
		}
	case "type":
		types := asList(val)
		if t, ok := val.(string); ok {
			types = []any{t}
		}
		for _, t := range types {
			if name, _ := t.(string); isType(inst, name) {
				return nil
			}
		}
		reprs := make([]string, len(types))
		for i, t := range types {
			reprs[i] = v.r.repr(t, "")
		}
		return v.fail(path, "%s is not of type %s", v.repr(inst, path), strings.Join(reprs, ", "))
	case "enum":
		for _, e := range asList(val) {
			if jsonEqual(inst, e) {
				return nil
			}
		}
		return v.fail(path, "%s is not one of %s", v.repr(inst, path), v.r.repr(val, ""))
	case "format":
		if f, _ := val.(string); f == "date" {
			if str, ok := inst.(string); ok && !isISODate(str) {
				return v.fail(path, "%s is not a %s", v.repr(inst, path), pyfmt.Quote(f))
			}
		}
	case "required":
		m, ok := inst.(map[string]any)
		if !ok {
			return nil
		}
		var out []problem
		for _, r := range asList(val) {
			name, _ := r.(string)
			if _, present := m[name]; !present {
				out = append(out, problem{path: path, msg: pyfmt.Quote(name) + " is a required property"})
			}
		}
		return out
	case "properties":
		m, ok := inst.(map[string]any)
		props, isObj := val.(*object)
		if !ok || !isObj {
			return nil
		}
		var out []problem
		for _, name := range props.keys {
			if child, present := m[name]; present {
				out = append(out, v.validate(child, props.values[name], appendPath(path, name), depth+1)...)
			}
		}
		return out
	case "patternProperties":
		m, ok := inst.(map[string]any)
		pats, isObj := val.(*object)
		if !ok || !isObj {
			return nil
		}
		var out []problem
		keys := v.r.orderedKeys(m, v.dotted(path))
		for _, pat := range pats.keys {
			re, err := pyRegexp(pat)
			if err != nil {
				out = append(out, problem{path: path, msg: err.Error()})
				continue
			}
			for _, k := range keys {
				if re.MatchString(k) {
					out = append(out, v.validate(m[k], pats.values[pat], appendPath(path, k), depth+1)...)
				}
			}
		}
		return out
	case "additionalProperties":
		m, ok := inst.(map[string]any)
		if !ok {
			return nil
		}
		extras := v.additionalProperties(m, s, path)
		if sub, isObj := val.(*object); isObj {
			var out []problem
			for _, k := range extras {
				out = append(out, v.validate(m[k], sub, appendPath(path, k), depth+1)...)
			}
			return out
		}
		if allowed, _ := val.(bool); allowed || len(extras) == 0 {
			return nil
		}
		sorted := append([]string(nil), extras...)
		sort.Strings(sorted)
		reprs := make([]string, len(sorted))
		for i, k := range sorted {
			reprs[i] = pyfmt.Quote(k)
		}
		if pp, has := s.get("patternProperties"); has {
			var pats []string
			if po, ok := pp.(*object); ok {
				pats = append(pats, po.keys...)
			}
			sort.Strings(pats)
			for i, p := range pats {
				pats[i] = pyfmt.Quote(p)
			}
			verb := "do"
			if len(sorted) == 1 {
				verb = "does"
			}
			return v.fail(path, "%s %s not match any of the regexes: %s", strings.Join(reprs, ", "), verb, strings.Join(pats, ", "))
		}
		verb := "were"
		if len(sorted) == 1 {
			verb = "was"
		}
		return v.fail(path, "Additional properties are not allowed (%s %s unexpected)", strings.Join(reprs, ", "), verb)
	case "items":
		list, ok := inst.([]any)
		if !ok {
			return nil
		}
		var out []problem
		if tuple, isList := val.([]any); isList {
			for i := 0; i < len(list) && i < len(tuple); i++ {
				out = append(out, v.validate(list[i], tuple[i], appendPath(path, i), depth+1)...)
			}
			return out
		}
		for i, e := range list {
			out = append(out, v.validate(e, val, appendPath(path, i), depth+1)...)
		}
		return out
	case "additionalItems":
		list, ok := inst.([]any)
		if !ok {
			return nil
		}
		items, _ := s.get("items")
		tuple, isList := items.([]any)
		if !isList && items != nil {
			return nil
		}
		if sub, isObj := val.(*object); isObj {
			var out []problem
			for i := len(tuple); i < len(list); i++ {
				out = append(out, v.validate(list[i], sub, appendPath(path, i), depth+1)...)
			}
			return out
		}
		if allowed, _ := val.(bool); !allowed && len(list) > len(tuple) {
			extra := list[len(tuple):]
			reprs := make([]string, len(extra))
			for i, e := range extra {
				reprs[i] = v.repr(e, appendPath(path, len(tuple)+i))
			}
			sort.Strings(reprs)
			verb := "were"
			if len(extra) == 1 {
				verb = "was"
			}
			return v.fail(path, "Additional items are not allowed (%s %s unexpected)", strings.Join(reprs, ", "), verb)
		}
	case "minItems", "maxItems":
		list, ok := inst.([]any)
		limit, lok := asNumber(val)
		if !ok || !lok {
			return nil
		}
		if kw == "minItems" && float64(len(list)) < limit {
			return v.fail(path, "%s is too short", v.repr(inst, path))
		}
		if kw == "maxItems" && float64(len(list)) > limit {
			return v.fail(path, "%s is too long", v.repr(inst, path))
		}
	case "minLength", "maxLength":
		str, ok := inst.(string)
		limit, lok := asNumber(val)
		if !ok || !lok {
			return nil
		}
		n := float64(utf8.RuneCountInString(str))
		if kw == "minLength" && n < limit {
			return v.fail(path, "%s is too short", v.repr(inst, path))
		}
		if kw == "maxLength" && n > limit {
			return v.fail(path, "%s is too long", v.repr(inst, path))
		}
	case "minProperties", "maxProperties":
		m, ok := inst.(map[string]any)
		limit, lok := asNumber(val)
		if !ok || !lok {
			return nil
		}
		if kw == "minProperties" && float64(len(m)) < limit {
			return v.fail(path, "%s does not have enough properties", v.repr(inst, path))
		}
		if kw == "maxProperties" && float64(len(m)) > limit {
			return v.fail(path, "%s has too many properties", v.repr(inst, path))
		}
	case "minimum", "maximum":
		n, ok := instNumber(inst)
		limit, lok := asNumber(val)
		if !ok || !lok {
			return nil
		}
		excl := "exclusiveMinimum"
		if kw == "maximum" {
			excl = "exclusiveMaximum"
		}
		exclusive := false
		if e, has := s.get(excl); has {
			exclusive, _ = e.(bool)
		}
		limitRepr := v.r.repr(val, "")
		if kw == "minimum" {
			if exclusive && n <= limit {
				return v.fail(path, "%s is less than or equal to the minimum of %s", v.repr(inst, path), limitRepr)
			}
			if !exclusive && n < limit {
				return v.fail(path, "%s is less than the minimum of %s", v.repr(inst, path), limitRepr)
			}
		} else {
			if exclusive && n >= limit {
				return v.fail(path, "%s is greater than or equal to the maximum of %s", v.repr(inst, path), limitRepr)
			}
			if !exclusive && n > limit {
				return v.fail(path, "%s is greater than the maximum of %s", v.repr(inst, path), limitRepr)
			}
		}
	case "multipleOf":
		n, ok := instNumber(inst)
		d, dok := asNumber(val)
		if !ok || !dok || d == 0 {
			return nil
		}
		if q := n / d; q != math.Trunc(q) {
			return v.fail(path, "%s is not a multiple of %s", v.repr(inst, path), v.r.repr(val, ""))
		}
	case "pattern":
		str, ok := inst.(string)
		pat, _ := val.(string)
		if !ok {
			return nil
		}
		re, err := pyRegexp(pat)
		if err != nil {
			return v.fail(path, "%v", err)
		}
		if !re.MatchString(str) {
			return v.fail(path, "%s does not match %s", v.repr(inst, path), pyfmt.Quote(pat))
		}
	case "uniqueItems":
		list, ok := inst.([]any)
		if want, _ := val.(bool); !ok || !want {
			return nil
		}
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				if jsonEqual(list[i], list[j]) {
					return v.fail(path, "%s has non-unique elements", v.repr(inst, path))
				}
			}
		}
	case "dependencies":
		m, ok := inst.(map[string]any)
		deps, isObj := val.(*object)
		if !ok || !isObj {
			return nil
		}
		var out []problem
		for _, prop := range deps.keys {
			if _, present := m[prop]; !present {
				continue
			}
			dep := deps.values[prop]
			if names, isList := dep.([]any); isList {
				for _, n := range names {
					name, _ := n.(string)
					if _, has := m[name]; !has {
						out = append(out, problem{path: path, msg: fmt.Sprintf("%s is a dependency of %s", pyfmt.Quote(name), pyfmt.Quote(prop))})
					}
				}
				continue
			}
			out = append(out, v.validate(inst, dep, path, depth+1)...)
		}
		return out
	}
	return nil
}

// additionalProperties are the instance's keys that neither properties
// nor any patternProperties regex covers, in document order.
func (v *validator) additionalProperties(m map[string]any, s *object, path []any) []string {
	var props *object
	if p, ok := s.get("properties"); ok {
		props, _ = p.(*object)
	}
	var pats []*regexp.Regexp
	if pp, ok := s.get("patternProperties"); ok {
		if po, ok := pp.(*object); ok {
			for _, p := range po.keys {
				if re, err := pyRegexp(p); err == nil {
					pats = append(pats, re)
				}
			}
		}
	}
	var extras []string
	for _, k := range v.r.orderedKeys(m, v.dotted(path)) {
		if props != nil {
			if _, ok := props.values[k]; ok {
				continue
			}
		}
		matched := false
		for _, re := range pats {
			if re.MatchString(k) {
				matched = true
				break
			}
		}
		if !matched {
			extras = append(extras, k)
		}
	}
	return extras
}

func splitDeprecations(all []problem) (errs, deps []problem) {
	for _, p := range all {
		if p.deprecated {
			deps = append(deps, p)
		} else {
			errs = append(errs, p)
		}
	}
	return errs, deps
}

// anyOf is cloud-init's: the first branch without errors wins and its
// deprecations are reported; otherwise one error for the instance.
func (v *validator) anyOf(branches []any, inst any, path []any, depth int) []problem {
	for _, sub := range branches {
		errs, deps := splitDeprecations(v.validate(inst, sub, path, depth+1))
		if len(errs) == 0 {
			return deps
		}
	}
	return v.fail(path, "%s is not valid under any of the given schemas", v.repr(inst, path))
}

// oneOf is cloud-init's: as anyOf, plus an error when a later branch
// matches as well.
func (v *validator) oneOf(branches []any, inst any, path []any, depth int) []problem {
	first := -1
	var deps []problem
	for i, sub := range branches {
		errs, d := splitDeprecations(v.validate(inst, sub, path, depth+1))
		if len(errs) == 0 {
			first, deps = i, d
			break
		}
	}
	if first < 0 {
		return v.fail(path, "%s is not valid under any of the given schemas", v.repr(inst, path))
	}
	var more []string
	for _, sub := range branches[first+1:] {
		if v.isValid(inst, sub, path) {
			more = append(more, v.r.repr(sub, ""))
		}
	}
	if len(more) > 0 {
		more = append(more, v.r.repr(branches[first], ""))
		return v.fail(path, "%s is valid under each of %s", v.repr(inst, path), strings.Join(more, ", "))
	}
	return deps
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// asNumber reads a number from the schema.
func asNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case float64:
		return t, true
	}
	return 0, false
}

// instNumber reads a number from the instance; booleans are not numbers.
func instNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

// isType is draft 4's type check as cloud-init configures it: an integer
// is an int and not a float (1.0 is not an integer in draft 4), booleans
// are not numbers, and bytes (!!binary) count as strings.
func isType(inst any, name string) bool {
	switch name {
	case "object":
		_, ok := inst.(map[string]any)
		return ok
	case "array":
		_, ok := inst.([]any)
		return ok
	case "string":
		_, ok := inst.(string)
		return ok
	case "boolean":
		_, ok := inst.(bool)
		return ok
	case "null":
		return inst == nil
	case "integer":
		switch inst.(type) {
		case int, int64, uint64:
			return true
		}
		return false
	case "number":
		_, ok := instNumber(inst)
		return ok
	}
	return false
}

// jsonEqual is jsonschema's equality: Python's ==, except that booleans
// never equal the numbers 0 and 1.
func jsonEqual(a, b any) bool {
	if s, ok := b.(json.Number); ok {
		f, err := s.Float64()
		if err != nil {
			return false
		}
		b = f
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, has := y[k]
			if !has || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	case timestamp:
		y, ok := b.(timestamp)
		return ok && x == y
	}
	xn, ok := instNumber(a)
	if !ok {
		return false
	}
	yn, ok := instNumber(b)
	return ok && xn == yn
}

var weekDateRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d{4})-W(\d{2})(?:-[1-7])?$|^(\d{4})W(\d{2})[1-7]?$`)
})

// isISODate is Python 3.11's date.fromisoformat, which the "date" format
// check calls: YYYY-MM-DD, YYYYMMDD and ISO week dates.
func isISODate(s string) bool {
	if !isASCII(s) {
		return false
	}
	for _, layout := range []string{"2006-01-02", "20060102"} {
		if len(s) == len(layout) {
			if _, err := time.Parse(layout, s); err == nil {
				return true
			}
		}
	}
	m := weekDateRE().FindStringSubmatch(s)
	if m == nil {
		return false
	}
	y, w := m[1]+m[3], m[2]+m[4]
	year, _ := strconv.Atoi(y)
	week, _ := strconv.Atoi(w)
	if year < 1 || week < 1 {
		return false
	}
	// A year has 53 ISO weeks when December 28th falls in week 53.
	_, last := time.Date(year, 12, 28, 0, 0, 0, 0, time.UTC).ISOWeek()
	return week <= last
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
