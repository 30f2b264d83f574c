package jinja

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// builtins are Jinja2's global functions; only range is callable here.
var builtins = map[string]bool{
	"range": true, "dict": true, "lipsum": true, "cycler": true, "joiner": true, "namespace": true,
}

// Python's method names per type: a name listed here is an attribute (so
// obj.name is the method, not the item), and calling one this renderer does
// not implement is an "unsupported method" error.
var pyMethods = map[string]string{
	"str": " capitalize casefold center count encode endswith expandtabs find format format_map" +
		" index isalnum isalpha isascii isdecimal isdigit isidentifier islower isnumeric isprintable" +
		" isspace istitle isupper join ljust lower lstrip maketrans partition removeprefix" +
		" removesuffix replace rfind rindex rjust rpartition rsplit rstrip split splitlines" +
		" startswith strip swapcase title translate upper zfill ",
	"dict":  " clear copy fromkeys get items keys pop popitem setdefault update values ",
	"list":  " append clear copy count extend index insert pop remove reverse sort ",
	"tuple": " count index ",
}

func hasMethod(obj value, name string) bool {
	var names string
	switch o := obj.(type) {
	case string:
		names = pyMethods["str"]
	case *pyDict:
		names = pyMethods["dict"]
	case *pyList:
		switch o.kind {
		case kindList:
			names = pyMethods["list"]
		case kindTuple:
			names = pyMethods["tuple"]
		}
	}
	if _, ok := obj.(*loopInfo); ok {
		names = " cycle changed "
	}
	return names != "" && strings.Contains(names, " "+name+" ")
}

func (r *renderer) call(fn value, args []value, kwargs map[string]value) (value, error) {
	switch f := fn.(type) {
	case *undefinedValue:
		return nil, f.fail()
	case *method:
		v, err := r.callMethod(f, args, kwargs)
		if err != nil {
			return nil, fmt.Errorf("%s.%s(): %w", typeName(f.recv), f.name, err)
		}
		return v, nil
	case builtin:
		switch f {
		case "range":
			if len(kwargs) > 0 {
				return nil, errors.New("range() takes no keyword arguments")
			}
			return r.pyRange(args)
		case "namespace":
			return r.namespace(args, kwargs)
		}
		return nil, fmt.Errorf("unsupported function %s()", string(f))
	}
	return nil, fmt.Errorf("'%s' object is not callable", typeName(fn))
}

// namespace is Jinja2's namespace(mapping, **attrs). Python keeps the
// order of keyword arguments; a Go map has none, so they are sorted.
func (r *renderer) namespace(args []value, kwargs map[string]value) (value, error) {
	attrs := newDict()
	if len(args) > 1 {
		return nil, fmt.Errorf("namespace expected at most 1 argument, got %d", len(args))
	}
	if len(args) == 1 {
		d, ok := args[0].(*pyDict)
		if !ok {
			return nil, fmt.Errorf("namespace needs a mapping, not %s", typeName(args[0]))
		}
		for i, k := range d.keys {
			if err := attrs.set(k, d.vals[i]); err != nil {
				return nil, err
			}
		}
	}
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		attrs.setString(k, kwargs[k])
	}
	return &namespaceValue{attrs: attrs}, nil
}

func (r *renderer) pyRange(args []value) (value, error) {
	var bounds []int64
	for _, a := range args {
		n, ok := indexValue(a)
		if !ok {
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		bounds = append(bounds, n)
	}
	start, step := int64(0), int64(1)
	var stop int64
	switch len(bounds) {
	case 1:
		stop = bounds[0]
	case 2:
		start, stop = bounds[0], bounds[1]
	case 3:
		start, stop, step = bounds[0], bounds[1], bounds[2]
	default:
		return nil, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(bounds))
	}
	if step == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	var count int64
	if step > 0 && start < stop {
		count = (stop-start-1)/step + 1
	} else if step < 0 && start > stop {
		count = (start-stop-1)/(-step) + 1
	}
	if count < 0 || count > maxIterations {
		return nil, fmt.Errorf("range of more than %d items", maxIterations)
	}
	if err := r.spend(int(count)); err != nil {
		return nil, err
	}
	if err := r.allocate(int(count) * (itemBytes + 8)); err != nil {
		return nil, err
	}
	items := make([]value, count)
	for i := range items {
		items[i] = start + int64(i)*step
	}
	return &pyList{items: items, kind: kindRange, rangeArgs: [3]int64{start, stop, step}}, nil
}

func (r *renderer) callMethod(m *method, args []value, kwargs map[string]value) (value, error) {
	switch recv := m.recv.(type) {
	case string:
		return r.callStringMethod(recv, m.name, args, kwargs)
	case *pyDict:
		return r.callDictMethod(recv, m.name, args, kwargs)
	case *pyList:
		return r.callListMethod(recv, m.name, args, kwargs)
	case *loopInfo:
		if m.name == "cycle" && len(kwargs) == 0 {
			if len(args) == 0 {
				return nil, errors.New("no items for cycling given")
			}
			return args[recv.index0%len(args)], nil
		}
	}
	return nil, errors.New("unsupported method")
}

func wantString(v value, what string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be str, not %s", what, typeName(v))
	}
	return s, nil
}

func (r *renderer) callStringMethod(s, name string, args []value, kwargs map[string]value) (value, error) {
	if err := r.spend(len(s)); err != nil {
		return nil, err
	}
	switch name {
	case "lower", "upper", "capitalize", "title", "swapcase", "casefold",
		"isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "splitlines":
		if _, err := bind(args, kwargs); err != nil {
			return nil, err
		}
	}
	switch name {
	case "lower", "casefold":
		return strings.ToLower(s), nil
	case "upper":
		return strings.ToUpper(s), nil
	case "capitalize":
		return pyCapitalize(s), nil
	case "title":
		return pyTitle(s), nil
	case "isdigit":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsDigit(c) }) < 0, nil
	case "isalpha":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsLetter(c) }) < 0, nil
	case "isalnum":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) < 0, nil
	case "isspace":
		return s != "" && strings.IndexFunc(s, func(c rune) bool { return !isPySpace(c) }) < 0, nil
	case "islower", "isupper":
		cased := false
		for _, c := range s {
			if unicode.IsUpper(c) || unicode.IsTitle(c) {
				if name == "islower" {
					return false, nil
				}
				cased = true
			} else if unicode.IsLower(c) {
				if name == "isupper" {
					return false, nil
				}
				cased = true
			}
		}
		return cased, nil
	case "splitlines":
		return stringList(splitLines(s)), nil
	case "strip", "lstrip", "rstrip":
		a, err := bind(args, kwargs, param{"chars", nil})
		if err != nil {
			return nil, err
		}
		return pyStrip(s, a[0], name != "rstrip", name != "lstrip")
	case "split", "rsplit":
		a, err := bind(args, kwargs, param{"sep", nil}, param{"maxsplit", int64(-1)})
		if err != nil {
			return nil, err
		}
		maxsplit, ok := indexValue(a[1])
		if !ok {
			return nil, fmt.Errorf("maxsplit must be int, not %s", typeName(a[1]))
		}
		if a[0] == nil {
			return stringList(splitWhitespace(s, maxsplit, name == "rsplit")), nil
		}
		sep, err := wantString(a[0], "separator")
		if err != nil {
			return nil, err
		}
		if sep == "" {
			return nil, errors.New("empty separator")
		}
		if err := r.spend(len(s)); err != nil {
			return nil, err
		}
		if maxsplit < 0 {
			return stringList(strings.Split(s, sep)), nil
		}
		if name == "split" {
			return stringList(strings.SplitN(s, sep, int(min(maxsplit, int64(len(s))))+1)), nil
		}
		return stringList(rsplitN(s, sep, maxsplit)), nil
	case "startswith", "endswith":
		a, err := bind(args, kwargs, param{"prefix", nil})
		if err != nil {
			return nil, err
		}
		var candidates []value
		if l, ok := a[0].(*pyList); ok && l.kind == kindTuple {
			candidates = l.items
		} else {
			candidates = []value{a[0]}
		}
		for _, c := range candidates {
			p, err := wantString(c, name+" first arg")
			if err != nil {
				return nil, err
			}
			if (name == "startswith" && strings.HasPrefix(s, p)) || (name == "endswith" && strings.HasSuffix(s, p)) {
				return true, nil
			}
		}
		return false, nil
	case "replace":
		a, err := bind(args, kwargs, param{"old", nil}, param{"new", nil}, param{"count", int64(-1)})
		if err != nil {
			return nil, err
		}
		old, err := wantString(a[0], "replace() argument 1")
		if err != nil {
			return nil, err
		}
		repl, err := wantString(a[1], "replace() argument 2")
		if err != nil {
			return nil, err
		}
		n, ok := indexValue(a[2])
		if !ok {
			return nil, fmt.Errorf("count must be int, not %s", typeName(a[2]))
		}
		return r.replace(s, old, repl, n)
	case "join":
		a, err := bind(args, kwargs, param{"iterable", nil})
		if err != nil {
			return nil, err
		}
		items, err := iterate(a[0])
		if err != nil {
			return nil, fmt.Errorf("can only join an iterable")
		}
		parts := make([]string, len(items))
		size := 0
		for i, item := range items {
			p, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(item))
			}
			parts[i] = p
			size += len(p) + len(s)
		}
		if err := r.checkSize(size); err != nil {
			return nil, err
		}
		if err := r.allocate(size); err != nil {
			return nil, err
		}
		return strings.Join(parts, s), nil
	case "find", "count", "removeprefix", "removesuffix":
		a, err := bind(args, kwargs, param{"sub", nil})
		if err != nil {
			return nil, err
		}
		sub, err := wantString(a[0], name+"() argument")
		if err != nil {
			return nil, err
		}
		switch name {
		case "find":
			i := strings.Index(s, sub)
			if i < 0 {
				return int64(-1), nil
			}
			return int64(utf8.RuneCountInString(s[:i])), nil
		case "count":
			return int64(strings.Count(s, sub)), nil
		case "removeprefix":
			return strings.TrimPrefix(s, sub), nil
		}
		return strings.TrimSuffix(s, sub), nil
	}
	return nil, errors.New("unsupported method")
}

func stringList(parts []string) *pyList {
	items := make([]value, len(parts))
	for i, p := range parts {
		items[i] = p
	}
	return newList(items)
}

// splitWhitespace is Python's str.split() / str.rsplit() with no separator.
func splitWhitespace(s string, maxsplit int64, fromRight bool) []string {
	if fromRight {
		// Split the reversed text and reverse back.
		runes := []rune(s)
		slicesReverse(runes)
		parts := splitWhitespace(string(runes), maxsplit, false)
		for i, p := range parts {
			pr := []rune(p)
			slicesReverse(pr)
			parts[i] = string(pr)
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		return parts
	}
	parts := []string{}
	rest := strings.TrimLeftFunc(s, isPySpace)
	for rest != "" {
		if maxsplit >= 0 && int64(len(parts)) == maxsplit {
			parts = append(parts, rest)
			break
		}
		end := strings.IndexFunc(rest, isPySpace)
		if end < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:end])
		rest = strings.TrimLeftFunc(rest[end:], isPySpace)
	}
	return parts
}

func slicesReverse(r []rune) {
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
}

func rsplitN(s, sep string, maxsplit int64) []string {
	var parts []string
	for int64(len(parts)) < maxsplit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		parts = append(parts, s[i+len(sep):])
		s = s[:i]
	}
	parts = append(parts, s)
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}

// pyTitle is Python's str.title: a letter after a cased letter is lowered,
// any other letter is title-cased.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, c := range s {
		cased := unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c)
		if prevCased {
			b.WriteRune(unicode.ToLower(c))
		} else {
			b.WriteRune(unicode.ToTitle(c))
		}
		prevCased = cased
	}
	return b.String()
}

func (r *renderer) callDictMethod(d *pyDict, name string, args []value, kwargs map[string]value) (value, error) {
	switch name {
	case "items", "keys", "values", "copy":
		if _, err := bind(args, kwargs); err != nil {
			return nil, err
		}
	}
	switch name {
	case "items":
		if err := r.allocate(d.len() * (itemBytes + entryBytes)); err != nil {
			return nil, err
		}
		return dictItems(r, d, kindDictItems)
	case "keys":
		if err := r.checkItems(d.len()); err != nil {
			return nil, err
		}
		return &pyList{items: append([]value(nil), d.keys...), kind: kindDictKeys}, nil
	case "values":
		if err := r.checkItems(d.len()); err != nil {
			return nil, err
		}
		return &pyList{items: append([]value(nil), d.vals...), kind: kindDictValues}, nil
	case "copy":
		if err := r.allocate(d.len() * entryBytes); err != nil {
			return nil, err
		}
		c := newDict()
		for i, k := range d.keys {
			_ = c.set(k, d.vals[i])
		}
		return c, r.spend(d.len())
	case "update":
		if len(args) > 1 {
			return nil, fmt.Errorf("update expected at most 1 argument, got %d", len(args))
		}
		if len(args) == 1 {
			switch src := args[0].(type) {
			case *pyDict:
				if err := r.allocate(src.len() * entryBytes); err != nil {
					return nil, err
				}
				for i, k := range src.keys {
					if err := d.set(k, src.vals[i]); err != nil {
						return nil, err
					}
				}
			default:
				pairs, err := iterate(src)
				if err != nil {
					return nil, err
				}
				if err := r.allocate(len(pairs) * entryBytes); err != nil {
					return nil, err
				}
				for i, p := range pairs {
					kv, err := iterate(p)
					if err != nil || len(kv) != 2 {
						return nil, fmt.Errorf("dictionary update sequence element #%d is not a pair", i)
					}
					if err := d.set(kv[0], kv[1]); err != nil {
						return nil, err
					}
				}
			}
		}
		keys := make([]string, 0, len(kwargs))
		for k := range kwargs {
			keys = append(keys, k)
		}
		// Python keeps keyword order; a Go map has none, so sort.
		slices.Sort(keys)
		for _, k := range keys {
			d.setString(k, kwargs[k])
		}
		return nil, r.spend(d.len())
	case "get":
		if len(kwargs) > 0 {
			return nil, errors.New("get() takes no keyword arguments")
		}
		a, err := bind(args, nil, param{"key", nil}, param{"default", nil})
		if err != nil {
			return nil, err
		}
		if len(args) == 0 {
			return nil, errors.New("get expected at least 1 argument, got 0")
		}
		if _, err := hashKey(a[0]); err != nil {
			return nil, err
		}
		if v, ok := d.get(a[0]); ok {
			return v, nil
		}
		return a[1], nil
	}
	return nil, errors.New("unsupported method")
}

func (r *renderer) callListMethod(l *pyList, name string, args []value, kwargs map[string]value) (value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("%s() takes no keyword arguments", name)
	}
	switch name {
	case "append":
		a, err := bind(args, nil, param{"object", nil})
		if err != nil || len(args) != 1 {
			return nil, errors.New("append() takes exactly one argument")
		}
		if len(l.items)+1 > maxListItems {
			return nil, fmt.Errorf("list of more than %d items", maxListItems)
		}
		if err := r.allocate(itemBytes); err != nil {
			return nil, err
		}
		l.items = append(l.items, a[0])
		return nil, nil
	case "extend":
		if len(args) != 1 {
			return nil, errors.New("extend() takes exactly one argument")
		}
		items, err := iterate(args[0])
		if err != nil {
			return nil, err
		}
		if len(l.items)+len(items) > maxListItems {
			return nil, fmt.Errorf("list of more than %d items", maxListItems)
		}
		if err := r.allocate(len(items) * itemBytes); err != nil {
			return nil, err
		}
		l.items = append(l.items, items...)
		return nil, nil
	case "count", "index":
		if len(args) != 1 {
			return nil, fmt.Errorf("%s() takes exactly one argument", name)
		}
		n := int64(0)
		for i, item := range l.items {
			eq, err := r.equal(item, args[0], 0)
			if err != nil {
				return nil, err
			}
			if eq {
				if name == "index" {
					return int64(i), nil
				}
				n++
			}
		}
		if name == "index" {
			s, _ := reprString(args[0])
			return nil, fmt.Errorf("%s is not in list", s)
		}
		return n, nil
	case "copy":
		if len(args) != 0 {
			return nil, errors.New("copy() takes no arguments")
		}
		return newList(append([]value(nil), l.items...)), r.spend(len(l.items))
	}
	return nil, errors.New("unsupported method")
}

type testFunc func(r *renderer, v value, args []value) (bool, error)

// tests are the Jinja2 tests ("x is defined") this renderer knows.
var tests map[string]testFunc

func init() {
	isType := func(fn func(value) bool) testFunc {
		return func(_ *renderer, v value, args []value) (bool, error) {
			if len(args) != 0 {
				return false, errors.New("takes no arguments")
			}
			return fn(v), nil
		}
	}
	compareTest := func(op string) testFunc {
		return func(r *renderer, v value, args []value) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("takes exactly one argument")
			}
			return r.compare(op, v, args[0])
		}
	}
	oddEven := func(wantOdd bool) testFunc {
		return func(r *renderer, v value, args []value) (bool, error) {
			if len(args) != 0 {
				return false, errors.New("takes no arguments")
			}
			m, err := r.arith("%", v, int64(2))
			if err != nil {
				return false, err
			}
			want := int64(0)
			if wantOdd {
				want = 1
			}
			return r.equal(m, want, 0)
		}
	}
	tests = map[string]testFunc{
		"defined":   isType(func(v value) bool { _, u := v.(*undefinedValue); return !u }),
		"undefined": isType(func(v value) bool { _, u := v.(*undefinedValue); return u }),
		"none":      isType(func(v value) bool { return v == nil }),
		"string":    isType(func(v value) bool { _, ok := v.(string); return ok }),
		"number": isType(func(v value) bool {
			_, ok := number(v)
			return ok
		}),
		"integer": isType(func(v value) bool { _, ok := v.(int64); return ok }),
		"float":   isType(func(v value) bool { _, ok := v.(float64); return ok }),
		"boolean": isType(func(v value) bool { _, ok := v.(bool); return ok }),
		"true":    isType(func(v value) bool { return v == true }),
		"false":   isType(func(v value) bool { return v == false }),
		"mapping": isType(func(v value) bool { _, ok := v.(*pyDict); return ok }),
		"sequence": isType(func(v value) bool {
			switch v.(type) {
			case string, *pyList, *pyDict, *undefinedValue:
				return true
			}
			return false
		}),
		"iterable": isType(func(v value) bool {
			_, err := iterate(v)
			return err == nil
		}),
		"lower": isType(func(v value) bool {
			s, err := strValue(v)
			return err == nil && s == strings.ToLower(s) && strings.IndexFunc(s, unicode.IsLetter) >= 0
		}),
		"upper": isType(func(v value) bool {
			s, err := strValue(v)
			return err == nil && s == strings.ToUpper(s) && strings.IndexFunc(s, unicode.IsLetter) >= 0
		}),
		"odd":  oddEven(true),
		"even": oddEven(false),
		"divisibleby": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("takes exactly one argument")
			}
			m, err := r.arith("%", v, args[0])
			if err != nil {
				return false, err
			}
			return r.equal(m, int64(0), 0)
		},
		"eq":          compareTest("=="),
		"equalto":     compareTest("=="),
		"ne":          compareTest("!="),
		"lt":          compareTest("<"),
		"lessthan":    compareTest("<"),
		"le":          compareTest("<="),
		"gt":          compareTest(">"),
		"greaterthan": compareTest(">"),
		"ge":          compareTest(">="),
		"in": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("takes exactly one argument")
			}
			return r.contains(args[0], v)
		},
		"sameas": func(r *renderer, v value, args []value) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("takes exactly one argument")
			}
			switch v.(type) {
			case nil, bool:
				return v == args[0], nil
			case *pyList, *pyDict:
				return v == args[0], nil
			}
			return r.equal(v, args[0], 0)
		},
	}
}
