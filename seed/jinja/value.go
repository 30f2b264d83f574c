package jinja

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/seed/pyfmt"
)

// Values inside the renderer mirror the Python objects Jinja2 works on:
//
//	nil              None
//	bool             bool
//	int64            int (bounded: overflow is an error, Python would grow)
//	float64          float
//	string           str
//	*pyList          list, tuple, range and the dict views
//	*pyDict          dict (insertion ordered, as Python's)
//	*undefinedValue  jinja2 Undefined with cloud-init's string form
//	*iterator        a generator or reverse iterator
//	*loopInfo        the "loop" variable of a for block
//	*method          a bound method (str.split, dict.items ...)
//	builtin          a global function (range)
type value any

// listKind says which Python type a *pyList stands for; it only changes how
// the value prints and compares.
type listKind int

const (
	kindList listKind = iota
	kindTuple
	kindRange
	kindDictItems
	kindDictKeys
	kindDictValues
)

// pyList is a Python sequence. Lists are shared by reference, as in Python,
// so that {% do l.append(x) %} is seen through every name bound to l.
type pyList struct {
	items []value
	kind  listKind
	// rangeArgs keeps range(start, stop, step) for its repr.
	rangeArgs [3]int64
}

func newList(items []value) *pyList  { return &pyList{items: items} }
func newTuple(items []value) *pyList { return &pyList{items: items, kind: kindTuple} }

// dictKey is the hashable form of a Python dict key. Python treats True, 1
// and 1.0 as the same key, so numbers are folded onto one representation.
type dictKey struct {
	kind byte // 's' string, 'i' int, 'f' float, 'n' None
	s    string
	i    int64
	f    float64
}

// pyDict is an insertion-ordered Python dict.
type pyDict struct {
	keys  []value
	index map[dictKey]int
	vals  []value
}

func newDict() *pyDict { return &pyDict{index: map[dictKey]int{}} }

func hashKey(k value) (dictKey, error) {
	switch k := k.(type) {
	case string:
		return dictKey{kind: 's', s: k}, nil
	case bool:
		if k {
			return dictKey{kind: 'i', i: 1}, nil
		}
		return dictKey{kind: 'i'}, nil
	case int64:
		return dictKey{kind: 'i', i: k}, nil
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<63 {
			return dictKey{kind: 'i', i: int64(k)}, nil
		}
		return dictKey{kind: 'f', f: k}, nil
	case nil:
		return dictKey{kind: 'n'}, nil
	case *pyList:
		if k.kind == kindTuple {
			// Tuples are hashable in Python; their repr is a faithful key.
			s, err := reprString(k)
			if err != nil {
				return dictKey{}, err
			}
			return dictKey{kind: 't', s: s}, nil
		}
	}
	return dictKey{}, fmt.Errorf("unhashable type: '%s'", typeName(k))
}

func (d *pyDict) get(k value) (value, bool) {
	h, err := hashKey(k)
	if err != nil {
		return nil, false
	}
	i, ok := d.index[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// set assigns like Python: an existing key keeps its position.
func (d *pyDict) set(k value, v value) error {
	h, err := hashKey(k)
	if err != nil {
		return err
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

func (d *pyDict) setString(k string, v value) { _ = d.set(k, v) }

func (d *pyDict) len() int { return len(d.keys) }

// undefinedValue is Jinja2's Undefined as cloud-init subclasses it: it prints as
// CI_MISSING_JINJA_VAR/<name> and fails on arithmetic and attribute access.
type undefinedValue struct {
	// name is what cloud-init prints after the prefix: the variable,
	// attribute or key that was missing (a string, an int64, or nil).
	name value
	// hint replaces the default message of the error raised when the
	// value is used ("No first item, sequence was empty.").
	hint string
	// hasObj is set when the value came from a lookup on an object, whose
	// type objType describes as Jinja2 does ("dict object", "None").
	hasObj  bool
	objType string
	// plain marks Jinja2's own Undefined, which prints as "".
	plain bool
}

const missingPrefix = "CI_MISSING_JINJA_VAR/"

func (u *undefinedValue) String() string {
	if u.plain {
		return ""
	}
	name, err := strValue(u.name)
	if err != nil {
		name = "?"
	}
	return missingPrefix + name
}

// message is what Jinja2's UndefinedError says about this value.
func (u *undefinedValue) message() string {
	if u.hint != "" {
		return u.hint
	}
	nameRepr, _ := reprString(u.name)
	if !u.hasObj {
		return nameRepr + " is undefined"
	}
	if _, ok := u.name.(string); !ok {
		return u.objType + " has no element " + nameRepr
	}
	return "'" + u.objType + "' has no attribute " + nameRepr
}

func (u *undefinedValue) fail() error { return &UndefinedError{Msg: u.message()} }

// UndefinedError is raised when a template uses a missing variable in a
// way that cannot print it (arithmetic, attribute access, int()). cloud-init
// ignores the whole part in that case.
type UndefinedError struct{ Msg string }

func (e *UndefinedError) Error() string { return e.Msg }

// loopInfo is the "loop" variable inside a for block.
type loopInfo struct {
	index0, length int
	items          []value
}

// method is a bound method of a value, called as recv.name(args).
type method struct {
	recv value
	name string
}

// builtin is a global function of the template environment.
type builtin string

// namespaceValue is what namespace() makes: the one object whose
// attributes {% set ns.attr = ... %} may assign, to carry values out of a
// loop.
type namespaceValue struct{ attrs *pyDict }

// iterator is a Python iterator or generator, which the items and reverse
// filters return: always true, not printable, and failing only once it is
// walked.
type iterator struct {
	items []value
	err   error
	kind  string // Python's type name: "generator", "list_reverseiterator"
}

func typeName(v value) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *pyList:
		switch v.kind {
		case kindTuple:
			return "tuple"
		case kindRange:
			return "range"
		case kindDictItems:
			return "dict_items"
		case kindDictKeys:
			return "dict_keys"
		case kindDictValues:
			return "dict_values"
		}
		return "list"
	case *pyDict:
		return "dict"
	case *undefinedValue:
		return "Undefined"
	case *loopInfo:
		return "LoopContext"
	case *method:
		return "builtin_function_or_method"
	case builtin:
		return "type"
	case *iterator:
		return v.kind
	case *namespaceValue:
		return "Namespace"
	}
	return fmt.Sprintf("%T", v)
}

func truthy(v value) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case *pyList:
		return len(v.items) > 0
	case *pyDict:
		return v.len() > 0
	case *undefinedValue:
		return false
	}
	return true
}

// maxReprDepth bounds the nesting that str() walks: a template can build
// arbitrarily deep lists with {% set x = [x] %} in a loop.
const maxReprDepth = 500

// strValue is Python's str().
func strValue(v value) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case *undefinedValue:
		return v.String(), nil
	}
	var b strings.Builder
	if err := writeRepr(&b, v, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

// reprString is Python's repr().
func reprString(v value) (string, error) {
	var b strings.Builder
	if err := writeRepr(&b, v, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

// errTooLarge is returned when a value or the output outgrows its cap.
var errTooLarge = fmt.Errorf("output exceeds %d bytes", DefaultMaxOutput)

// writeRepr prints v; open holds the containers being printed, so that a
// list holding itself prints as [...] as in Python.
func writeRepr(b *strings.Builder, v value, open []value) error {
	if len(open) > maxReprDepth {
		return fmt.Errorf("maximum recursion depth exceeded while printing a value")
	}
	if b.Len() > DefaultMaxOutput {
		return errTooLarge
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(pyfmt.Float(v))
	case string:
		pyfmt.WriteQuoted(b, v)
	case *pyList:
		if slices.Contains(open, value(v)) {
			b.WriteString("[...]")
			return nil
		}
		return writeListRepr(b, v, append(open, v))
	case *pyDict:
		if slices.Contains(open, value(v)) {
			b.WriteString("{...}")
			return nil
		}
		open = append(open, v)
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, k, open); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := writeRepr(b, v.vals[i], open); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *undefinedValue:
		b.WriteString("Undefined")
	case *loopInfo:
		fmt.Fprintf(b, "<LoopContext %d/%d>", v.index0+1, v.length)
	case *method:
		return fmt.Errorf("cannot print method %s.%s", typeName(v.recv), v.name)
	case builtin:
		return fmt.Errorf("cannot print function %s", string(v))
	case *iterator:
		return fmt.Errorf("cannot print %s object", v.kind)
	case *namespaceValue:
		b.WriteString("<Namespace ")
		if err := writeRepr(b, v.attrs, open); err != nil {
			return err
		}
		b.WriteString(">")
	default:
		return fmt.Errorf("cannot print value of type %T", v)
	}
	return nil
}

func writeListRepr(b *strings.Builder, l *pyList, open []value) error {
	opening, closing := "[", "]"
	switch l.kind {
	case kindTuple:
		opening, closing = "(", ")"
		if len(l.items) == 1 {
			closing = ",)"
		}
	case kindRange:
		start, stop, step := l.rangeArgs[0], l.rangeArgs[1], l.rangeArgs[2]
		if step == 1 {
			fmt.Fprintf(b, "range(%d, %d)", start, stop)
		} else {
			fmt.Fprintf(b, "range(%d, %d, %d)", start, stop, step)
		}
		return nil
	case kindDictItems:
		opening, closing = "dict_items([", "])"
	case kindDictKeys:
		opening, closing = "dict_keys([", "])"
	case kindDictValues:
		opening, closing = "dict_values([", "])"
	}
	b.WriteString(opening)
	for i, item := range l.items {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := writeRepr(b, item, open); err != nil {
			return err
		}
	}
	b.WriteString(closing)
	return nil
}
