package jinja

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// number returns v as int64 or float64 when Python would treat it as a
// number (bool included).
func number(v value) (value, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return int64(1), true
		}
		return int64(0), true
	case int64, float64:
		return v, true
	}
	return nil, false
}

func asFloat(v value) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

func unsupportedOperands(op string, l, r value) error {
	return fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

// subtractionHint is cloud-init's error for "a - b" on a missing variable,
// which is nearly always a key written with a dash.
func subtractionHint(u *undefinedValue, other value) error {
	otherText, _ := strValue(other)
	otherText = strings.ReplaceAll(otherText, missingPrefix, "")
	name, _ := strValue(u.name)
	return fmt.Errorf("undefined jinja variable: %q. Jinja tried subtraction. Perhaps you meant %q?",
		name+"-"+otherText, name+"_"+otherText)
}

func (r *renderer) arith(op string, l, rv value) (value, error) {
	if u, ok := l.(*undefinedValue); ok {
		if op == "-" {
			return nil, subtractionHint(u, rv)
		}
		return nil, u.fail()
	}
	if u, ok := rv.(*undefinedValue); ok {
		return nil, u.fail()
	}
	ln, lok := number(l)
	rn, rok := number(rv)
	if lok && rok {
		return numericOp(op, ln, rn)
	}
	switch op {
	case "+":
		if ls, ok := l.(string); ok {
			if rs, ok := rv.(string); ok {
				if err := r.checkSize(len(ls) + len(rs)); err != nil {
					return nil, err
				}
				if err := r.allocate(len(ls) + len(rs)); err != nil {
					return nil, err
				}
				return ls + rs, nil
			}
		}
		if ll, ok := l.(*pyList); ok {
			if rl, ok := rv.(*pyList); ok && ll.kind == rl.kind && (ll.kind == kindList || ll.kind == kindTuple) {
				if err := r.checkItems(len(ll.items) + len(rl.items)); err != nil {
					return nil, err
				}
				items := append(append([]value(nil), ll.items...), rl.items...)
				return &pyList{items: items, kind: ll.kind}, nil
			}
		}
	case "*":
		if n, ok := rn.(int64); ok && rok {
			return r.repeat(l, n)
		}
		if n, ok := ln.(int64); ok && lok {
			return r.repeat(rv, n)
		}
	case "%":
		if format, ok := l.(string); ok {
			return r.printf(format, rv)
		}
	}
	return nil, unsupportedOperands(op, l, rv)
}

// repeat is Python's sequence * n.
func (r *renderer) repeat(seq value, n int64) (value, error) {
	if n < 0 {
		n = 0
	}
	switch s := seq.(type) {
	case string:
		if len(s) > 0 && n > int64(r.maxOutput/len(s)) {
			return nil, fmt.Errorf("value exceeds %d bytes", r.maxOutput)
		}
		if err := r.checkSize(len(s) * int(n)); err != nil {
			return nil, err
		}
		if err := r.allocate(len(s) * int(n)); err != nil {
			return nil, err
		}
		return strings.Repeat(s, int(n)), nil
	case *pyList:
		if s.kind != kindList && s.kind != kindTuple {
			break
		}
		if len(s.items) > 0 && n > int64(maxListItems/len(s.items)) {
			return nil, fmt.Errorf("list of more than %d items", maxListItems)
		}
		if err := r.checkItems(len(s.items) * int(n)); err != nil {
			return nil, err
		}
		items := make([]value, 0, len(s.items)*int(n))
		for range n {
			items = append(items, s.items...)
		}
		return &pyList{items: items, kind: s.kind}, nil
	}
	return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(seq))
}

func numericOp(op string, l, r value) (value, error) {
	li, lInt := l.(int64)
	ri, rInt := r.(int64)
	if lInt && rInt {
		return intOp(op, li, ri)
	}
	lf, rf := asFloat(l), asFloat(r)
	switch op {
	case "+":
		return lf + rf, nil
	case "-":
		return lf - rf, nil
	case "*":
		return lf * rf, nil
	case "/":
		if rf == 0 {
			return nil, errors.New("float division by zero")
		}
		return lf / rf, nil
	case "//", "%":
		if rf == 0 {
			return nil, errors.New("float floor division by zero")
		}
		div, mod := floatDivmod(lf, rf)
		if op == "%" {
			return mod, nil
		}
		return div, nil
	case "**":
		if lf == 0 && rf < 0 {
			return nil, errors.New("0.0 cannot be raised to a negative power")
		}
		if lf < 0 && rf != math.Trunc(rf) {
			return nil, errors.New("unsupported: complex result of a fractional power of a negative number")
		}
		return math.Pow(lf, rf), nil
	}
	return nil, unsupportedOperands(op, l, r)
}

// floatDivmod follows CPython's float floor division and modulo.
func floatDivmod(a, b float64) (float64, float64) {
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 {
		if (b < 0) != (mod < 0) {
			mod += b
			div -= 1
		}
	} else {
		mod = math.Copysign(0, b)
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv += 1
		}
	} else {
		floordiv = math.Copysign(0, a/b)
	}
	return floordiv, mod
}

func intOp(op string, a, b int64) (value, error) {
	switch op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			return nil, errIntOverflow
		}
		return s, nil
	case "-":
		s := a - b
		if (s < a) != (b > 0) {
			return nil, errIntOverflow
		}
		return s, nil
	case "*":
		if a == 0 || b == 0 {
			return int64(0), nil
		}
		p := a * b
		if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return nil, errIntOverflow
		}
		return p, nil
	case "/":
		if b == 0 {
			return nil, errors.New("division by zero")
		}
		return float64(a) / float64(b), nil
	case "//", "%":
		if b == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		if a == math.MinInt64 && b == -1 {
			if op == "%" {
				return int64(0), nil
			}
			return nil, errIntOverflow
		}
		q, m := a/b, a%b
		if m != 0 && (m < 0) != (b < 0) {
			q--
			m += b
		}
		if op == "%" {
			return m, nil
		}
		return q, nil
	case "**":
		if b < 0 {
			if a == 0 {
				return nil, errors.New("0.0 cannot be raised to a negative power")
			}
			return math.Pow(float64(a), float64(b)), nil
		}
		result := int64(1)
		base := a
		for b > 0 {
			if b&1 == 1 {
				v, err := intOp("*", result, base)
				if err != nil {
					return nil, err
				}
				result = v.(int64)
			}
			b >>= 1
			if b > 0 {
				v, err := intOp("*", base, base)
				if err != nil {
					return nil, err
				}
				base = v.(int64)
			}
		}
		return result, nil
	}
	return nil, fmt.Errorf("unsupported operator %s", op)
}

func (r *renderer) compare(op string, l, rv value) (bool, error) {
	switch op {
	case "==":
		return r.equal(l, rv, 0)
	case "!=":
		eq, err := r.equal(l, rv, 0)
		return !eq, err
	case "in":
		return r.contains(rv, l)
	case "not in":
		in, err := r.contains(rv, l)
		return !in, err
	}
	if u, ok := l.(*undefinedValue); ok {
		return false, u.fail()
	}
	if u, ok := rv.(*undefinedValue); ok {
		return false, u.fail()
	}
	c, err := r.order(l, rv, 0)
	if err != nil {
		if errors.Is(err, errNotOrderable) {
			return false, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(l), typeName(rv))
		}
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unsupported comparison %s", op)
}

var errNotOrderable = errors.New("values are not orderable")

// order compares like Python's < on numbers, strings and sequences.
// NaN compares as unordered both ways, which is close enough for output.
func (r *renderer) order(a, b value, depth int) (int, error) {
	if depth > maxReprDepth {
		return 0, errors.New("maximum recursion depth exceeded in comparison")
	}
	if err := r.spend(costCompare); err != nil {
		return 0, err
	}
	an, aok := number(a)
	bn, bok := number(b)
	if aok && bok {
		ai, aInt := an.(int64)
		bi, bInt := bn.(int64)
		if aInt && bInt {
			return cmpOrdered(ai, bi), nil
		}
		return cmpOrdered(asFloat(an), asFloat(bn)), nil
	}
	switch a := a.(type) {
	case string:
		if bs, ok := b.(string); ok {
			return strings.Compare(a, bs), r.spend(min(len(a), len(bs)))
		}
	case *pyList:
		bl, ok := b.(*pyList)
		if !ok || a.kind != bl.kind || (a.kind != kindList && a.kind != kindTuple) {
			break
		}
		for i := 0; i < len(a.items) && i < len(bl.items); i++ {
			eq, err := r.equal(a.items[i], bl.items[i], depth+1)
			if err != nil {
				return 0, err
			}
			if !eq {
				return r.order(a.items[i], bl.items[i], depth+1)
			}
		}
		return cmpOrdered(len(a.items), len(bl.items)), nil
	}
	return 0, errNotOrderable
}

func cmpOrdered[T int | int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// equal is Python's ==.
func (r *renderer) equal(a, b value, depth int) (bool, error) {
	if depth > maxReprDepth {
		return false, errors.New("maximum recursion depth exceeded in comparison")
	}
	if err := r.spend(costCompare); err != nil {
		return false, err
	}
	_, aUndef := a.(*undefinedValue)
	_, bUndef := b.(*undefinedValue)
	if aUndef || bUndef {
		return aUndef && bUndef, nil
	}
	an, aok := number(a)
	bn, bok := number(b)
	if aok || bok {
		if !aok || !bok {
			return false, nil
		}
		ai, aInt := an.(int64)
		bi, bInt := bn.(int64)
		if aInt && bInt {
			return ai == bi, nil
		}
		return asFloat(an) == asFloat(bn), nil
	}
	switch a := a.(type) {
	case nil:
		return b == nil, nil
	case string:
		bs, ok := b.(string)
		if !ok {
			return false, nil
		}
		return a == bs, r.spend(min(len(a), len(bs)))
	case *pyList:
		bl, ok := b.(*pyList)
		if !ok || !sameSequenceType(a.kind, bl.kind) || len(a.items) != len(bl.items) {
			return false, nil
		}
		for i := range a.items {
			if sameObject(a.items[i], bl.items[i]) {
				continue
			}
			eq, err := r.equal(a.items[i], bl.items[i], depth+1)
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case *pyDict:
		bd, ok := b.(*pyDict)
		if !ok || a.len() != bd.len() {
			return false, nil
		}
		for i, k := range a.keys {
			bv, ok := bd.get(k)
			if !ok {
				return false, nil
			}
			if sameObject(a.vals[i], bv) {
				continue
			}
			eq, err := r.equal(a.vals[i], bv, depth+1)
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case *method:
		bm, ok := b.(*method)
		return ok && a == bm, nil
	}
	return a == b, nil
}

// sameObject is Python's identity check, which container comparison does
// before ==.
func sameObject(a, b value) bool {
	switch a := a.(type) {
	case *pyList:
		bl, ok := b.(*pyList)
		return ok && a == bl
	case *pyDict:
		bd, ok := b.(*pyDict)
		return ok && a == bd
	}
	return false
}

func sameSequenceType(a, b listKind) bool {
	if a == kindDictItems || a == kindDictKeys {
		return b == kindDictItems || b == kindDictKeys
	}
	return a == b && a != kindDictValues
}

// contains is Python's "needle in container".
func (r *renderer) contains(container, needle value) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := needle.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(needle))
		}
		return strings.Contains(c, s), r.spend(len(c))
	case *pyList:
		for _, item := range c.items {
			eq, err := r.equal(item, needle, 0)
			if err != nil {
				return false, err
			}
			if eq {
				return true, nil
			}
		}
		return false, nil
	case *pyDict:
		if _, err := hashKey(needle); err != nil {
			if _, isUndef := needle.(*undefinedValue); isUndef {
				return false, nil
			}
			return false, err
		}
		_, ok := c.get(needle)
		return ok, nil
	case *undefinedValue:
		return false, nil
	case *iterator:
		if c.err != nil {
			return false, c.err
		}
		return r.contains(newList(c.items), needle)
	}
	return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
}
