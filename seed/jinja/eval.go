package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

const (
	// DefaultMaxOutput caps the rendered text, and any one string or
	// list a template builds, so that a hostile template cannot blow
	// memory.
	DefaultMaxOutput = 16 << 20
	// maxIterations caps the for-loop iterations of one rendering.
	maxIterations = 1_000_000
	// maxWork caps the work of one rendering, which bounds its time even
	// when loops are short: a byte or element copied costs 1, a loop
	// iteration or one step of a comparison costs more, as it takes
	// longer. About a second of CPU at most.
	maxWork       = 1 << 28
	costCompare   = 64
	costIteration = 64
	// maxListItems caps one list a template builds: a list doubled forty
	// times took 391 MiB before it reached the output cap.
	maxListItems = 1_000_000
	// maxAlloc caps the bytes of strings, lists and dicts a rendering
	// builds in all, whatever it keeps, so that what it holds at once
	// stays within a PID 1's means: the output is capped apart.
	maxAlloc = 64 << 20
	// The bytes a list item and a dict entry take.
	itemBytes  = 16
	entryBytes = 48
)

// RenderError is a failure while rendering, at a line of the template.
type RenderError struct {
	Line int
	Err  error
}

func (e *RenderError) Error() string { return fmt.Sprintf("jinja line %d: %v", e.Line, e.Err) }
func (e *RenderError) Unwrap() error { return e.Err }

// scope is one frame of template variables. Frames hold few names, so
// slices beat a map that every loop iteration would allocate.
type scope struct {
	names  []string
	vals   []value
	parent *scope
}

// newScope starts a frame in which the names of undefined hide what the
// enclosing frames hold.
func newScope(parent *scope, undefined []string) *scope {
	s := &scope{parent: parent}
	for _, name := range undefined {
		s.set(name, &undefinedValue{name: name})
	}
	return s
}

func (s *scope) lookup(name string) (value, bool) {
	for ; s != nil; s = s.parent {
		for i := len(s.names) - 1; i >= 0; i-- {
			if s.names[i] == name {
				return s.vals[i], true
			}
		}
	}
	return nil, false
}

func (s *scope) set(name string, v value) {
	for i, n := range s.names {
		if n == name {
			s.vals[i] = v
			return
		}
	}
	s.names = append(s.names, name)
	s.vals = append(s.vals, v)
}

type renderer struct {
	out        strings.Builder
	maxOutput  int
	iterations int
	work       int
	allocated  int
	globals    *pyDict
	// folding is set while a {{ }} is tried as a constant: Jinja2
	// computes the text of an output that needs no variable and no call
	// when it compiles, and slices then go through environment.getitem.
	folding bool
}

func (r *renderer) spend(n int) error {
	r.work += n
	if r.work > maxWork {
		return errors.New("template does too much work")
	}
	return nil
}

// allocate charges n bytes of values built to the rendering's maxAlloc.
func (r *renderer) allocate(n int) error {
	r.allocated += n
	if r.allocated > maxAlloc || n < 0 {
		return fmt.Errorf("template builds more than %d bytes of values", maxAlloc)
	}
	return nil
}

// checkItems refuses a list of more than maxListItems and charges its
// items to maxAlloc.
func (r *renderer) checkItems(n int) error {
	if n > maxListItems || n < 0 {
		return fmt.Errorf("list of more than %d items", maxListItems)
	}
	if err := r.allocate(n * itemBytes); err != nil {
		return err
	}
	return r.spend(n)
}

// checkSize refuses a string or list that would outgrow the output cap.
func (r *renderer) checkSize(n int) error {
	if n > r.maxOutput {
		return fmt.Errorf("value exceeds %d bytes", r.maxOutput)
	}
	return r.spend(n)
}

func at(line int, err error) error {
	if err == nil {
		return nil
	}
	var re *RenderError
	if errors.As(err, &re) {
		return err
	}
	return &RenderError{Line: line, Err: err}
}

func (r *renderer) write(s string) error {
	if r.out.Len()+len(s) > r.maxOutput {
		return fmt.Errorf("output exceeds %d bytes", r.maxOutput)
	}
	r.out.WriteString(s)
	return nil
}

func (r *renderer) execBody(body []node, sc *scope) error {
	for _, n := range body {
		if err := r.exec(n, sc); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) exec(n node, sc *scope) error {
	switch n := n.(type) {
	case *textNode:
		return r.write(n.text)
	case *outputNode:
		r.folding = true
		v, err := r.eval(n.expr, sc)
		r.folding = false
		if err != nil {
			// Not a constant, or failing as one: evaluate when rendering,
			// as Jinja2 does.
			v, err = r.eval(n.expr, sc)
		}
		if err != nil {
			return err
		}
		s, err := strValue(v)
		if err != nil {
			return at(n.line, err)
		}
		if err := r.spend(len(s)); err != nil {
			return at(n.line, err)
		}
		if err := r.write(s); err != nil {
			return at(n.line, err)
		}
		return nil
	case *ifNode:
		for i, cond := range n.conds {
			v, err := r.eval(cond, sc)
			if err != nil {
				return err
			}
			if truthy(v) {
				return r.execBody(n.bodies[i], sc)
			}
		}
		return r.execBody(n.orElse, sc)
	case *forNode:
		return r.execFor(n, sc)
	case *setNode:
		v, err := r.eval(n.expr, sc)
		if err != nil {
			return err
		}
		if n.attr != "" {
			ns, _ := sc.lookup(n.targets[0])
			if ns == nil {
				ns, _ = r.globals.get(n.targets[0])
			}
			target, ok := ns.(*namespaceValue)
			if !ok {
				return at(n.line, errors.New("cannot assign attribute on non-namespace object"))
			}
			target.attrs.setString(n.attr, v)
			return nil
		}
		return at(n.line, assign(sc, n.targets, v))
	case *doNode:
		_, err := r.eval(n.expr, sc)
		return err
	}
	return fmt.Errorf("internal error: unknown node %T", n)
}

// assign binds names in the innermost scope, unpacking like Python.
func assign(sc *scope, targets []string, v value) error {
	if len(targets) == 1 {
		sc.set(targets[0], v)
		return nil
	}
	items, err := iterate(v)
	if err != nil {
		return fmt.Errorf("cannot unpack non-iterable %s object", typeName(v))
	}
	if len(items) != len(targets) {
		if len(items) > len(targets) {
			return fmt.Errorf("too many values to unpack (expected %d)", len(targets))
		}
		return fmt.Errorf("not enough values to unpack (expected %d, got %d)", len(targets), len(items))
	}
	for i, name := range targets {
		sc.set(name, items[i])
	}
	return nil
}

// iterate lists what Python's iter() yields for a value.
func iterate(v value) ([]value, error) {
	switch v := v.(type) {
	case *pyList:
		return v.items, nil
	case *pyDict:
		return v.keys, nil
	case string:
		chars := make([]value, 0, len(v))
		for _, c := range v {
			chars = append(chars, string(c))
		}
		return chars, nil
	case *undefinedValue:
		return nil, nil
	case *iterator:
		return v.items, v.err
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

func (r *renderer) execFor(n *forNode, sc *scope) error {
	seq, err := r.eval(n.iter, sc)
	if err != nil {
		return err
	}
	items, err := iterate(seq)
	if err != nil {
		return at(n.line, err)
	}
	if err := r.spend(len(items)); err != nil {
		return at(n.line, err)
	}
	// The loop body may append to the list it walks; Python would see
	// the new items, but a snapshot keeps the loop bounded.
	items = append([]value(nil), items...)
	if n.filter != nil {
		kept := items[:0]
		for _, item := range items {
			if err := r.countIteration(n.line); err != nil {
				return err
			}
			fsc := &scope{parent: sc}
			if err := assign(fsc, n.targets, item); err != nil {
				return at(n.line, err)
			}
			ok, err := r.eval(n.filter, fsc)
			if err != nil {
				return err
			}
			if truthy(ok) {
				kept = append(kept, item)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return r.execBody(n.orElse, newScope(sc, n.elseUndefined))
	}
	for i, item := range items {
		if err := r.countIteration(n.line); err != nil {
			return err
		}
		// Jinja2 gives every iteration a fresh frame: a {% set %} in the
		// body is seen neither by the next iteration nor after the loop.
		isc := newScope(sc, n.bodyUndefined)
		isc.set("loop", &loopInfo{index0: i, length: len(items), items: items})
		if err := assign(isc, n.targets, item); err != nil {
			return at(n.line, err)
		}
		if err := r.execBody(n.body, isc); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) countIteration(line int) error {
	r.iterations++
	if r.iterations > maxIterations {
		return at(line, fmt.Errorf("more than %d loop iterations", maxIterations))
	}
	return at(line, r.spend(costIteration))
}

func (r *renderer) evalAll(exprs []expr, sc *scope) ([]value, error) {
	vals := make([]value, len(exprs))
	for i, e := range exprs {
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func (r *renderer) evalKwargs(kwargs map[string]expr, sc *scope) (map[string]value, error) {
	if len(kwargs) == 0 {
		return nil, nil
	}
	vals := make(map[string]value, len(kwargs))
	for k, e := range kwargs {
		v, err := r.eval(e, sc)
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	return vals, nil
}

func (r *renderer) eval(e expr, sc *scope) (value, error) {
	if err := r.spend(1); err != nil {
		return nil, at(e.exprLine(), err)
	}
	v, err := r.evalNode(e, sc)
	if err != nil {
		return nil, at(e.exprLine(), err)
	}
	return v, nil
}

func (r *renderer) evalNode(e expr, sc *scope) (value, error) {
	switch e := e.(type) {
	case *constExpr:
		return e.val, nil
	case *nameExpr:
		if r.folding {
			return nil, errNotConstant
		}
		if v, ok := sc.lookup(e.name); ok {
			return v, nil
		}
		if v, ok := r.globals.get(e.name); ok {
			return v, nil
		}
		if _, ok := builtins[e.name]; ok {
			return builtin(e.name), nil
		}
		return &undefinedValue{name: e.name}, nil
	case *attrExpr:
		obj, err := r.eval(e.obj, sc)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, e.name)
	case *itemExpr:
		obj, err := r.eval(e.obj, sc)
		if err != nil {
			return nil, err
		}
		key, err := r.eval(e.key, sc)
		if err != nil {
			return nil, err
		}
		if s, ok := obj.(string); ok {
			// Indexing a string walks its characters.
			if err := r.spend(len(s)); err != nil {
				return nil, err
			}
		}
		return getItem(obj, key)
	case *sliceExpr:
		return r.evalSlice(e, sc)
	case *callExpr:
		if r.folding {
			return nil, errNotConstant
		}
		fn, err := r.eval(e.fn, sc)
		if err != nil {
			return nil, err
		}
		args, err := r.evalAll(e.args, sc)
		if err != nil {
			return nil, err
		}
		kwargs, err := r.evalKwargs(e.kwargs, sc)
		if err != nil {
			return nil, err
		}
		return r.call(fn, args, kwargs)
	case *filterExpr:
		arg, err := r.eval(e.arg, sc)
		if err != nil {
			return nil, err
		}
		args, err := r.evalAll(e.args, sc)
		if err != nil {
			return nil, err
		}
		kwargs, err := r.evalKwargs(e.kwargs, sc)
		if err != nil {
			return nil, err
		}
		v, err := filters[e.name](r, arg, args, kwargs)
		if err != nil {
			var ue *UndefinedError
			if errors.As(err, &ue) {
				return nil, err
			}
			return nil, fmt.Errorf("filter %s: %w", e.name, err)
		}
		return v, nil
	case *testExpr:
		arg, err := r.eval(e.arg, sc)
		if err != nil {
			return nil, err
		}
		args, err := r.evalAll(e.args, sc)
		if err != nil {
			return nil, err
		}
		ok, err := tests[e.name](r, arg, args)
		if err != nil {
			return nil, fmt.Errorf("test %s: %w", e.name, err)
		}
		return ok != e.negate, nil
	case *binExpr:
		return r.evalBinary(e, sc)
	case *unaryExpr:
		x, err := r.eval(e.x, sc)
		if err != nil {
			return nil, err
		}
		if e.op == "not" {
			return !truthy(x), nil
		}
		return negate(e.op, x)
	case *compareExpr:
		left, err := r.eval(e.first, sc)
		if err != nil {
			return nil, err
		}
		for i, op := range e.ops {
			right, err := r.eval(e.rest[i], sc)
			if err != nil {
				return nil, err
			}
			ok, err := r.compare(op, left, right)
			if err != nil {
				return nil, err
			}
			if !ok {
				return false, nil
			}
			left = right
		}
		return true, nil
	case *concatExpr:
		var b strings.Builder
		for _, part := range e.parts {
			v, err := r.eval(part, sc)
			if err != nil {
				return nil, err
			}
			s, err := strValue(v)
			if err != nil {
				return nil, err
			}
			if err := r.checkSize(b.Len() + len(s)); err != nil {
				return nil, err
			}
			b.WriteString(s)
		}
		return b.String(), nil
	case *condExpr:
		cond, err := r.eval(e.cond, sc)
		if err != nil {
			return nil, err
		}
		if truthy(cond) {
			return r.eval(e.then, sc)
		}
		if e.orElse == nil {
			if r.folding {
				return nil, errNotConstant
			}
			// Jinja2 uses its plain Undefined here, not the environment's
			// class, so this prints as nothing even under cloud-init.
			return &undefinedValue{plain: true, hint: fmt.Sprintf("the inline if-expression on line %d evaluated to false and no else section was defined.", e.line)}, nil
		}
		return r.eval(e.orElse, sc)
	case *listExpr:
		items, err := r.evalAll(e.items, sc)
		if err != nil {
			return nil, err
		}
		if e.tuple {
			return newTuple(items), nil
		}
		return newList(items), nil
	case *dictExpr:
		d := newDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i], sc)
			if err != nil {
				return nil, err
			}
			v, err := r.eval(e.vals[i], sc)
			if err != nil {
				return nil, err
			}
			if err := d.set(k, v); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("internal error: unknown expression %T", e)
}

func (r *renderer) evalBinary(e *binExpr, sc *scope) (value, error) {
	l, err := r.eval(e.l, sc)
	if err != nil {
		return nil, err
	}
	switch e.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return r.eval(e.r, sc)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return r.eval(e.r, sc)
	}
	rv, err := r.eval(e.r, sc)
	if err != nil {
		return nil, err
	}
	return r.arith(e.op, l, rv)
}

// objectType is Jinja2's object_type_repr.
func objectType(v value) string {
	if v == nil {
		return "None"
	}
	return typeName(v) + " object"
}

func undefinedMember(obj value, name value) *undefinedValue {
	return &undefinedValue{name: name, hasObj: true, objType: objectType(obj)}
}

// getAttr is Jinja2's obj.name: a Python attribute (a method) first, then
// the item.
func getAttr(obj value, name string) (value, error) {
	if u, ok := obj.(*undefinedValue); ok {
		return nil, u.fail()
	}
	if hasMethod(obj, name) {
		return &method{recv: obj, name: name}, nil
	}
	if ns, ok := obj.(*namespaceValue); ok {
		if v, ok := ns.attrs.get(name); ok {
			return v, nil
		}
		return undefinedMember(obj, name), nil
	}
	if l, ok := obj.(*loopInfo); ok {
		if v, ok := l.attr(name); ok {
			return v, nil
		}
		return undefinedMember(obj, name), nil
	}
	if d, ok := obj.(*pyDict); ok {
		if v, ok := d.get(name); ok {
			return v, nil
		}
	}
	return undefinedMember(obj, name), nil
}

// getItem is Jinja2's obj[key]: the item first, then a Python attribute.
func getItem(obj value, key value) (value, error) {
	switch o := obj.(type) {
	case *undefinedValue:
		return nil, o.fail()
	case *pyDict:
		if v, ok := o.get(key); ok {
			return v, nil
		}
	case *pyList:
		if i, ok := indexValue(key); ok {
			if i < 0 {
				i += int64(len(o.items))
			}
			if i >= 0 && i < int64(len(o.items)) {
				return o.items[i], nil
			}
			return undefinedMember(obj, key), nil
		}
	case string:
		if i, ok := indexValue(key); ok {
			runes := []rune(o)
			if i < 0 {
				i += int64(len(runes))
			}
			if i >= 0 && i < int64(len(runes)) {
				return string(runes[i]), nil
			}
			return undefinedMember(obj, key), nil
		}
	}
	if name, ok := key.(string); ok {
		return getAttr(obj, name)
	}
	return undefinedMember(obj, key), nil
}

// indexValue accepts what Python accepts as a sequence index.
func indexValue(v value) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func (l *loopInfo) attr(name string) (value, bool) {
	switch name {
	case "index":
		return int64(l.index0 + 1), true
	case "index0":
		return int64(l.index0), true
	case "revindex":
		return int64(l.length - l.index0), true
	case "revindex0":
		return int64(l.length - l.index0 - 1), true
	case "first":
		return l.index0 == 0, true
	case "last":
		return l.index0 == l.length-1, true
	case "length":
		return int64(l.length), true
	case "depth":
		return int64(1), true
	case "depth0":
		return int64(0), true
	case "previtem":
		if l.index0 == 0 {
			return &undefinedValue{hint: "there is no previous item"}, true
		}
		return l.items[l.index0-1], true
	case "nextitem":
		if l.index0+1 >= len(l.items) {
			return &undefinedValue{hint: "there is no next item"}, true
		}
		return l.items[l.index0+1], true
	}
	return nil, false
}

func (r *renderer) evalSlice(e *sliceExpr, sc *scope) (value, error) {
	obj, err := r.eval(e.obj, sc)
	if err != nil {
		return nil, err
	}
	var bounds [3]value
	for i, b := range []expr{e.start, e.stop, e.step} {
		if b == nil {
			continue
		}
		if bounds[i], err = r.eval(b, sc); err != nil {
			return nil, err
		}
	}
	// Jinja2 compiles obj[a:b] to Python's own slicing, so a TypeError
	// stays an error; but an all-constant {{ }} goes through
	// environment.getitem, which turns the TypeError into an undefined
	// value named after the slice.
	notSliceable := func(typeErr error) (value, error) {
		if !r.folding {
			return nil, typeErr
		}
		parts := make([]string, 3)
		for i, b := range bounds {
			s, err := reprString(b)
			if err != nil {
				return nil, err
			}
			parts[i] = s
		}
		return undefinedMember(obj, "slice("+strings.Join(parts, ", ")+")"), nil
	}
	var items []value
	var runes []rune
	_, isString := obj.(string)
	switch o := obj.(type) {
	case *undefinedValue:
		return nil, o.fail()
	case *pyList:
		if o.kind != kindList && o.kind != kindTuple && o.kind != kindRange {
			return notSliceable(fmt.Errorf("'%s' object is not subscriptable", typeName(obj)))
		}
		items = o.items
	case string:
		if err := r.spend(len(o)); err != nil {
			return nil, err
		}
		runes = []rune(o)
	case *pyDict:
		return notSliceable(errors.New("unhashable type: 'slice'"))
	default:
		return notSliceable(fmt.Errorf("'%s' object is not subscriptable", typeName(obj)))
	}
	n := len(items)
	if isString {
		n = len(runes)
	}
	idx, err := sliceIndices(bounds, n)
	if errors.Is(err, errSliceType) {
		return notSliceable(err)
	}
	if err != nil {
		return nil, err
	}
	if err := r.spend(len(idx)); err != nil {
		return nil, err
	}
	if isString {
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return string(out), nil
	}
	out := make([]value, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	l := obj.(*pyList)
	if l.kind == kindTuple {
		return newTuple(out), nil
	}
	return newList(out), nil
}

var errNotConstant = errors.New("expression is not a constant")

var errSliceType = errors.New("slice indices must be integers or None")

// sliceIndices resolves Python slice bounds against a length.
func sliceIndices(bounds [3]value, n int) ([]int, error) {
	step := int64(1)
	if bounds[2] != nil {
		s, ok := indexValue(bounds[2])
		if !ok {
			return nil, errSliceType
		}
		if s == 0 {
			return nil, errors.New("slice step cannot be zero")
		}
		step = s
	}
	clamp := func(v value, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := indexValue(v)
		if !ok {
			return 0, errSliceType
		}
		if i < 0 {
			i += int64(n)
			if i < 0 {
				if step < 0 {
					return -1, nil
				}
				return 0, nil
			}
		}
		if i >= int64(n) {
			if step < 0 {
				return int64(n) - 1, nil
			}
			return int64(n), nil
		}
		return i, nil
	}
	var start, stop int64
	var err error
	if step > 0 {
		if start, err = clamp(bounds[0], 0); err != nil {
			return nil, err
		}
		if stop, err = clamp(bounds[1], int64(n)); err != nil {
			return nil, err
		}
	} else {
		if start, err = clamp(bounds[0], int64(n)-1); err != nil {
			return nil, err
		}
		if stop, err = clamp(bounds[1], -1); err != nil {
			return nil, err
		}
	}
	var idx []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		idx = append(idx, int(i))
	}
	return idx, nil
}

func negate(op string, x value) (value, error) {
	switch x := x.(type) {
	case *undefinedValue:
		return nil, x.fail()
	case bool:
		if x {
			return negate(op, int64(1))
		}
		return negate(op, int64(0))
	case int64:
		if op == "+" {
			return x, nil
		}
		if x == math.MinInt64 {
			return nil, errIntOverflow
		}
		return -x, nil
	case float64:
		if op == "+" {
			return x, nil
		}
		return -x, nil
	}
	return nil, fmt.Errorf("bad operand type for unary %s: '%s'", op, typeName(x))
}

var errIntOverflow = errors.New("integer overflow (numbers beyond 64 bits are not supported)")

// stringLen counts characters as Python does.
func stringLen(s string) int { return utf8.RuneCountInString(s) }
