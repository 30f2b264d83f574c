package merge

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// This file applies #cloud-config-jsonp parts: RFC 6902 JSON patches over
// the config merged so far, with the behaviour of the python jsonpatch 1.32
// and jsonpointer 2.3 libraries cloud-init 22.4.2 uses, including where
// they bend the RFC (duplicate JSON keys become a list, "01" is index 1,
// strings can be indexed by "copy" and "test", a mapping key "-" cannot be
// replaced). A patch applies whole or not at all.

// ApplyPatch applies the JSON patch text (without the #cloud-config-jsonp
// line) to doc and returns the patched document; doc is not changed.
func ApplyPatch(doc any, patchText []byte) (any, error) {
	return applyPatch(doc, patchText, nil)
}

// applyPatch is ApplyPatch charging what it copies to acc, if any.
func applyPatch(doc any, patchText []byte, acc *accumulator) (any, error) {
	raw, err := parseJSON(patchText)
	if err != nil {
		return nil, fmt.Errorf("parse JSON patch: %w", err)
	}
	ops, err := patchOps(raw)
	if err != nil {
		return nil, err
	}
	c := &copier{seen: map[sharedKey]any{}}
	work := c.copy(doc)
	if err := acc.charge(c.copied); err != nil {
		return nil, err
	}
	size := c.copied
	for i, op := range ops {
		// What an operation adds is counted before it is added: a copy of
		// a value into itself doubles it, and forty copies would make a
		// trillion values. The patched config is held to the size a
		// cloud-config's YAML may have.
		if op.name == "copy" || op.has {
			var v any = op.value
			if op.name == "copy" {
				if from, err := fromPointer(op); err == nil {
					v, _ = getAt(work, from)
				}
			}
			size += sizeWithin(v, maxJSONValues-size+1)
			if size > maxJSONValues {
				return nil, fmt.Errorf("apply JSON patch operation %d (%s %s): the patched config would hold more than %d values", i, op.name, op.path, maxJSONValues)
			}
		}
		work, err = op.apply(work, acc)
		if err != nil {
			return nil, fmt.Errorf("apply JSON patch operation %d (%s %s): %w", i, op.name, op.path, err)
		}
	}
	return fromMutable(work), nil
}

// list is a JSON array during patching: operations insert into and delete
// from lists in place, and a Go slice cannot be changed through a copy.
type list struct{ items []any }

// toMutable deep-copies doc for patching. Like Python's deepcopy it keeps
// sharing: a mapping or list that appears twice (a YAML alias) is copied
// once, so a patch through one path shows through the other, as it does in
// cloud-init.
func toMutable(v any) any {
	return (&copier{seen: map[sharedKey]any{}}).copy(v)
}

type sharedKey struct {
	ptr uintptr
	len int
}

type copier struct {
	seen   map[sharedKey]any
	copied int // mappings and lists copied, and their entries
}

func (c *copier) copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		key := sharedKey{ptr: reflect.ValueOf(x).Pointer(), len: -1}
		if done, ok := c.seen[key]; ok {
			return done
		}
		out := make(map[string]any, len(x))
		c.seen[key] = out
		c.copied += 1 + len(x)
		for k, e := range x {
			out[k] = c.copy(e)
		}
		return out
	case []any:
		key := sharedKey{ptr: reflect.ValueOf(x).Pointer(), len: len(x)}
		if len(x) > 0 {
			if done, ok := c.seen[key]; ok {
				return done
			}
		}
		out := &list{items: make([]any, len(x))}
		if len(x) > 0 {
			c.seen[key] = out
		}
		c.copied += 1 + len(x)
		for i, e := range x {
			out.items[i] = c.copy(e)
		}
		return out
	}
	return v
}

// fromMutable turns a patched document back into plain values, keeping
// the sharing that toMutable kept.
func fromMutable(v any) any {
	return (&uncopier{seen: map[any]any{}}).uncopy(v)
}

type uncopier struct{ seen map[any]any }

func (u *uncopier) uncopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		key := reflect.ValueOf(x).Pointer()
		if done, ok := u.seen[key]; ok {
			return done
		}
		out := make(map[string]any, len(x))
		u.seen[key] = out
		for k, e := range x {
			out[k] = u.uncopy(e)
		}
		return out
	case *list:
		if done, ok := u.seen[x]; ok {
			return done
		}
		out := make([]any, len(x.items))
		u.seen[x] = out
		for i, e := range x.items {
			out[i] = u.uncopy(e)
		}
		return out
	}
	return v
}

type patchOp struct {
	name  string
	path  string
	ptr   []string
	value any
	has   bool // value given
	from  any  // the "from" member, nil when absent
	raw   map[string]any
}

func patchOps(raw any) ([]patchOp, error) {
	var items []any
	switch x := raw.(type) {
	case []any:
		items = x
	case map[string]any:
		// jsonpatch iterates the object: its keys are not operations.
		if len(x) == 0 {
			return nil, nil
		}
		return nil, errors.New("read JSON patch: want a list of operations, got an object")
	case string:
		if x == "" {
			return nil, nil
		}
		return nil, errors.New("read JSON patch: want a list of operations, got a string")
	default:
		return nil, fmt.Errorf("read JSON patch: want a list of operations, got %s", typeName(raw))
	}
	ops := make([]patchOp, 0, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("read JSON patch operation %d: want an object, got %s", i, typeName(item))
		}
		name, ok := m["op"]
		if !ok {
			return nil, fmt.Errorf("read JSON patch operation %d: want an \"op\"", i)
		}
		ns, ok := name.(string)
		if !ok {
			return nil, fmt.Errorf("read JSON patch operation %d: want a string \"op\", got %s", i, typeName(name))
		}
		switch ns {
		case "add", "remove", "replace", "move", "copy", "test":
		default:
			return nil, fmt.Errorf("read JSON patch operation %d: unknown op %q", i, ns)
		}
		p, ok := m["path"]
		if !ok {
			return nil, fmt.Errorf("read JSON patch operation %d (%s): want a \"path\"", i, ns)
		}
		ps, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("read JSON patch operation %d (%s): want a string \"path\", got %s", i, ns, typeName(p))
		}
		ptr, err := parsePointer(ps)
		if err != nil {
			return nil, fmt.Errorf("read JSON patch operation %d (%s) path: %w", i, ns, err)
		}
		v, has := m["value"]
		ops = append(ops, patchOp{name: ns, path: ps, ptr: ptr, value: v, has: has, from: m["from"], raw: m})
	}
	return ops, nil
}

var invalidEscapeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`~[^01]|~$`) })

// parsePointer splits an RFC 6901 pointer into its unescaped parts.
func parsePointer(s string) ([]string, error) {
	if m := invalidEscapeRE().FindString(s); m != "" {
		return nil, fmt.Errorf("pointer %q: invalid escape %q", s, m)
	}
	parts := strings.Split(s, "/")
	if parts[0] != "" {
		return nil, fmt.Errorf("pointer %q: must start with /", s)
	}
	parts = parts[1:]
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// step is a resolved last pointer part: a mapping key, a sequence index,
// the end of a sequence ("-"), or nothing (the pointer is the root).
type step struct {
	kind  stepKind
	key   string
	index int
}

type stepKind int

const (
	stepRoot stepKind = iota
	stepKey
	stepIndex
	stepEnd
)

// endOfList is what walking "-" of a list yields: equal to nothing.
type endOfList struct{}

// indexRE is jsonpointer's index check, which Python's re.match anchors at
// the start only for the "0" branch: "01" and "0_1" pass, and int() reads
// them.
var indexRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:0|[1-9][0-9]*\n?$)`) })

func resolvePart(doc any, part string) (step, error) {
	switch d := doc.(type) {
	case map[string]any:
		return step{kind: stepKey, key: part}, nil
	case *list, string:
		if part == "-" {
			return step{kind: stepEnd}, nil
		}
		if !indexRE().MatchString(part) {
			return step{}, fmt.Errorf("%q is not a valid sequence index", part)
		}
		n, ok := pyInt(part)
		if !ok {
			return step{}, fmt.Errorf("%q is not a valid sequence index", part)
		}
		return step{kind: stepIndex, index: n}, nil
	default:
		return step{}, fmt.Errorf("cannot index into %s", typeName(d))
	}
}

// pyInt reads a decimal the way Python's int() does (surrounding space and
// single underscores between digits allowed). Indexes too large for an int
// are out of any list's range and reported as math.MaxInt.
func pyInt(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	s = strings.ReplaceAll(s, "_", "")
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return math.MaxInt, true
	}
	return n, true
}

func walk(doc any, part string) (any, error) {
	st, err := resolvePart(doc, part)
	if err != nil {
		return nil, err
	}
	switch d := doc.(type) {
	case map[string]any:
		v, ok := d[st.key]
		if !ok {
			return nil, fmt.Errorf("member %q not found", st.key)
		}
		return v, nil
	case *list:
		if st.kind == stepEnd {
			return endOfList{}, nil
		}
		if st.index >= len(d.items) {
			return nil, fmt.Errorf("index %d is out of bounds", st.index)
		}
		return d.items[st.index], nil
	case string:
		if st.kind == stepEnd {
			return endOfList{}, nil
		}
		return pyCharAt(d, st.index)
	}
	return nil, fmt.Errorf("cannot index into %s", typeName(doc))
}

func pyCharAt(s string, i int) (any, error) {
	runes := []rune(s)
	if i >= len(runes) {
		return nil, fmt.Errorf("index %d is out of bounds", i)
	}
	return string(runes[i]), nil
}

// toLast walks all but the last part and resolves the last against the
// container it names.
func toLast(doc any, ptr []string) (any, step, error) {
	if len(ptr) == 0 {
		return doc, step{kind: stepRoot}, nil
	}
	for _, p := range ptr[:len(ptr)-1] {
		var err error
		if doc, err = walk(doc, p); err != nil {
			return nil, step{}, err
		}
	}
	st, err := resolvePart(doc, ptr[len(ptr)-1])
	return doc, st, err
}

func (op patchOp) apply(doc any, _ *accumulator) (any, error) {
	switch op.name {
	case "add":
		if !op.has {
			return nil, errors.New("want a \"value\"")
		}
		return add(doc, op.ptr, toMutable(op.value))
	case "remove":
		return remove(doc, op.ptr)
	case "replace":
		return replace(doc, op.ptr, op)
	case "move":
		return move(doc, op)
	case "copy":
		from, err := fromPointer(op)
		if err != nil {
			return nil, err
		}
		v, err := getAt(doc, from)
		if err != nil {
			return nil, err
		}
		return add(doc, op.ptr, toMutable(fromMutable(v)))
	case "test":
		return test(doc, op)
	}
	return nil, fmt.Errorf("unknown op %q", op.name)
}

func add(doc any, ptr []string, value any) (any, error) {
	sub, st, err := toLast(doc, ptr)
	if err != nil {
		return nil, err
	}
	switch s := sub.(type) {
	case *list:
		switch st.kind {
		case stepEnd:
			s.items = append(s.items, value)
		case stepIndex:
			if st.index > len(s.items) {
				return nil, errors.New("can't insert outside of list")
			}
			s.items = slices.Insert(s.items, st.index, value)
		default:
			return nil, errors.New("cannot add to the root list itself")
		}
		return doc, nil
	case map[string]any:
		if st.kind == stepRoot {
			return value, nil
		}
		s[st.key] = value
		return doc, nil
	}
	return nil, fmt.Errorf("cannot add into %s", typeName(sub))
}

func remove(doc any, ptr []string) (any, error) {
	sub, st, err := toLast(doc, ptr)
	if err != nil {
		return nil, err
	}
	switch s := sub.(type) {
	case *list:
		if st.kind != stepIndex {
			return nil, errors.New("cannot remove that part of a list")
		}
		if st.index >= len(s.items) {
			return nil, fmt.Errorf("can't remove a non-existent index %d", st.index)
		}
		s.items = slices.Delete(s.items, st.index, st.index+1)
		return doc, nil
	case map[string]any:
		if st.kind == stepRoot {
			return nil, errors.New("cannot remove the root")
		}
		if _, ok := s[st.key]; !ok {
			return nil, fmt.Errorf("can't remove a non-existent object %q", st.key)
		}
		delete(s, st.key)
		return doc, nil
	}
	return nil, fmt.Errorf("cannot remove from %s", typeName(sub))
}

func replace(doc any, ptr []string, op patchOp) (any, error) {
	if !op.has {
		return nil, errors.New("want a \"value\"")
	}
	sub, st, err := toLast(doc, ptr)
	if err != nil {
		return nil, err
	}
	value := toMutable(op.value)
	if st.kind == stepRoot {
		return value, nil
	}
	// jsonpatch refuses "-" before it looks at the container, so a mapping
	// key "-" cannot be replaced either.
	if st.kind == stepEnd || (st.kind == stepKey && st.key == "-") {
		return nil, errors.New("'path' with '-' can't be applied to 'replace' operation")
	}
	switch s := sub.(type) {
	case *list:
		if st.index >= len(s.items) {
			return nil, errors.New("can't replace outside of list")
		}
		s.items[st.index] = value
		return doc, nil
	case map[string]any:
		if _, ok := s[st.key]; !ok {
			return nil, fmt.Errorf("can't replace a non-existent object %q", st.key)
		}
		s[st.key] = value
		return doc, nil
	}
	return nil, fmt.Errorf("cannot replace in %s", typeName(sub))
}

func fromPointer(op patchOp) ([]string, error) {
	if _, ok := op.raw["from"]; !ok {
		return nil, errors.New("want a \"from\"")
	}
	s, ok := op.from.(string)
	if !ok {
		return nil, fmt.Errorf("want a string \"from\", got %s", typeName(op.from))
	}
	ptr, err := parsePointer(s)
	if err != nil {
		return nil, fmt.Errorf("read from: %w", err)
	}
	return ptr, nil
}

// getAt is subobj[part] as move and copy read it: unlike walk, "-" and
// the root are errors, and a string yields a character.
func getAt(doc any, ptr []string) (any, error) {
	sub, st, err := toLast(doc, ptr)
	if err != nil {
		return nil, err
	}
	if st.kind == stepRoot || st.kind == stepEnd {
		return nil, errors.New("cannot take the root or the end of a list")
	}
	switch s := sub.(type) {
	case map[string]any:
		v, ok := s[st.key]
		if !ok {
			return nil, fmt.Errorf("member %q not found", st.key)
		}
		return v, nil
	case *list:
		if st.index >= len(s.items) {
			return nil, fmt.Errorf("index %d is out of bounds", st.index)
		}
		return s.items[st.index], nil
	case string:
		return pyCharAt(s, st.index)
	}
	return nil, fmt.Errorf("cannot index into %s", typeName(sub))
}

func move(doc any, op patchOp) (any, error) {
	from, err := fromPointer(op)
	if err != nil {
		return nil, err
	}
	value, err := getAt(doc, from)
	if err != nil {
		return nil, err
	}
	if slices.Equal(from, op.ptr) {
		return doc, nil
	}
	parent, _, _ := toLast(doc, from)
	if _, isMap := parent.(map[string]any); isMap && len(op.ptr) >= len(from) && slices.Equal(op.ptr[:len(from)], from) {
		return nil, errors.New("cannot move values into their own children")
	}
	if doc, err = remove(doc, from); err != nil {
		return nil, err
	}
	return add(doc, op.ptr, value)
}

func test(doc any, op patchOp) (any, error) {
	sub, st, err := toLast(doc, op.ptr)
	if err != nil {
		return nil, fmt.Errorf("test failed: %w", err)
	}
	val := sub
	if st.kind != stepRoot {
		if val, err = walk(sub, op.ptr[len(op.ptr)-1]); err != nil {
			return nil, fmt.Errorf("test failed: %w", err)
		}
	}
	if !op.has {
		return nil, errors.New("want a \"value\"")
	}
	if !pyEqual(fromMutable(val), op.value) {
		return nil, errors.New("test failed: value differs")
	}
	return doc, nil
}

// pyEqual is Python's == on decoded JSON/YAML values: numbers compare by
// value across bool, int and float (True == 1 == 1.0); NaN equals nothing.
func pyEqual(a, b any) bool {
	if x, ok := pyNumber(a); ok {
		y, ok := pyNumber(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// pyNumber gives a number's value for comparison. int64 beyond 2^53 lose
// precision as float64, which only matters for tests of huge integers.
func pyNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// sizeWithin counts v's mappings, lists and their entries, shared ones as
// copies, up to limit (then it stops and returns more than limit). A
// scalar counts 1.
func sizeWithin(v any, limit int) int {
	n := 0
	switch v.(type) {
	case map[string]any, []any, *list:
	default:
		return 1
	}
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			n += 1 + len(x)
			for _, e := range x {
				walk(e)
			}
		case []any:
			n += 1 + len(x)
			for _, e := range x {
				walk(e)
			}
		case *list:
			walk(x.items)
		}
	}
	walk(v)
	return n
}

// maxJSONValues bounds the values of one patch, as yaml11's node limit
// bounds a cloud-config's.
var maxJSONValues = yaml11.DefaultLimits.Nodes

// parseJSON decodes JSON as Python's json.loads with jsonpatch's hook: an
// object's repeated key collects its values in a list; NaN, Infinity and
// -Infinity are numbers; integers are int64 (text when out of range, as
// seed/yaml11 does), other numbers float64.
func parseJSON(data []byte) (any, error) {
	p := &jsonParser{s: string(data), left: maxJSONValues}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, p.errorf("extra data")
	}
	return v, nil
}

type jsonParser struct {
	s string
	i int
	// left is how many more values the text may hold.
	left int
}

const maxJSONDepth = 200

func (p *jsonParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.s[:p.i], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("more than %d levels of nesting", maxJSONDepth)
	}
	if p.left--; p.left < 0 {
		return nil, p.errorf("more than %d JSON values", maxJSONValues)
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("expecting value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return nil, nil
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return false, nil
	case strings.HasPrefix(p.s[p.i:], "NaN"):
		p.i += 3
		return math.NaN(), nil
	case strings.HasPrefix(p.s[p.i:], "Infinity"):
		p.i += 8
		return math.Inf(1), nil
	case strings.HasPrefix(p.s[p.i:], "-Infinity"):
		p.i += 9
		return math.Inf(-1), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("expecting value")
}

var jsonNumberRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?`)
})

func (p *jsonParser) number() (any, error) {
	m := jsonNumberRE().FindStringSubmatch(p.s[p.i:])
	if m == nil {
		return nil, p.errorf("expecting value")
	}
	p.i += len(m[0])
	if m[2] == "" && m[3] == "" {
		n, err := strconv.ParseInt(m[0], 10, 64)
		if err != nil {
			return m[0], nil
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(m[0], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("invalid number %q", m[0])
	}
	return f, nil
}

func (p *jsonParser) array(depth int) (any, error) {
	p.i++ // [
	out := []any{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.errorf("expecting ',' delimiter")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("expecting ',' delimiter")
		}
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	p.i++ // {
	out := map[string]any{}
	// Keys seen more than once: jsonpatch's multidict turns their values
	// into a list in document order.
	repeated := map[string]bool{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.errorf("expecting property name enclosed in double quotes")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("expecting ':' delimiter")
		}
		p.i++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key := k.(string)
		if prev, seen := out[key]; seen {
			if repeated[key] {
				out[key] = append(prev.([]any), v)
			} else {
				out[key] = []any{prev, v}
				repeated[key] = true
			}
		} else {
			out[key] = v
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.errorf("expecting ',' delimiter")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, p.errorf("expecting ',' delimiter")
		}
	}
}

func (p *jsonParser) str() (any, error) {
	p.i++ // "
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return nil, p.errorf("invalid control character in string")
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, p.errorf("unterminated string")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return nil, err
				}
				if utf16.IsSurrogate(r) && strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					r2, err := p.hex4()
					if err == nil {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							continue
						}
					}
					p.i = save
				}
				// A lone surrogate: Python keeps it, Go strings cannot.
				b.WriteRune(r)
			default:
				return nil, p.errorf("invalid \\escape")
			}
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r)
			p.i += size
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	p.i += 4
	return rune(n), nil
}
