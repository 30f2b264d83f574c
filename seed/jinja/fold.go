package jinja

// foldConstants does what Jinja2's optimizer does when it compiles: every
// expression that needs no variable and no call is computed once, and
// replaced by its value when that value is a plain scalar. It matters for
// the rare expressions whose compile-time value differs from the run-time
// one (a constant slice of a number is undefined, not a TypeError).
func foldConstants(body []node) {
	f := &renderer{maxOutput: DefaultMaxOutput, globals: newDict(), folding: true}
	f.foldBody(body)
}

func (f *renderer) foldBody(body []node) {
	for _, n := range body {
		switch n := n.(type) {
		case *outputNode:
			n.expr = f.fold(n.expr)
		case *ifNode:
			for i := range n.conds {
				n.conds[i] = f.fold(n.conds[i])
				f.foldBody(n.bodies[i])
			}
			f.foldBody(n.orElse)
		case *forNode:
			n.iter = f.fold(n.iter)
			if n.filter != nil {
				n.filter = f.fold(n.filter)
			}
			f.foldBody(n.body)
			f.foldBody(n.orElse)
		case *setNode:
			n.expr = f.fold(n.expr)
		case *doNode:
			n.expr = f.fold(n.expr)
		}
	}
}

func (f *renderer) foldAll(es []expr) {
	for i := range es {
		es[i] = f.fold(es[i])
	}
}

func (f *renderer) fold(e expr) expr {
	switch e := e.(type) {
	case *constExpr, *nameExpr:
		return e
	case *attrExpr:
		e.obj = f.fold(e.obj)
	case *itemExpr:
		e.obj, e.key = f.fold(e.obj), f.fold(e.key)
	case *sliceExpr:
		e.obj = f.fold(e.obj)
		for _, b := range []*expr{&e.start, &e.stop, &e.step} {
			if *b != nil {
				*b = f.fold(*b)
			}
		}
	case *callExpr:
		e.fn = f.fold(e.fn)
		f.foldAll(e.args)
		for k, a := range e.kwargs {
			e.kwargs[k] = f.fold(a)
		}
		return e
	case *filterExpr:
		e.arg = f.fold(e.arg)
		f.foldAll(e.args)
		for k, a := range e.kwargs {
			e.kwargs[k] = f.fold(a)
		}
	case *testExpr:
		e.arg = f.fold(e.arg)
		f.foldAll(e.args)
	case *binExpr:
		e.l, e.r = f.fold(e.l), f.fold(e.r)
	case *unaryExpr:
		e.x = f.fold(e.x)
	case *compareExpr:
		e.first = f.fold(e.first)
		f.foldAll(e.rest)
	case *concatExpr:
		f.foldAll(e.parts)
	case *condExpr:
		e.cond, e.then = f.fold(e.cond), f.fold(e.then)
		if e.orElse != nil {
			e.orElse = f.fold(e.orElse)
		}
	case *listExpr:
		f.foldAll(e.items)
	case *dictExpr:
		f.foldAll(e.keys)
		f.foldAll(e.vals)
	}
	v, err := f.eval(e, &scope{})
	if err != nil || !plainScalar(v) {
		return e
	}
	return &constExpr{val: v, line: e.exprLine()}
}

// plainScalar reports whether v is immutable and can stand for the
// expression that made it (Jinja2 keeps values with a "safe repr").
func plainScalar(v value) bool {
	switch v := v.(type) {
	case nil, bool, int64, float64, string:
		return true
	case *pyList:
		if v.kind != kindTuple {
			return false
		}
		for _, item := range v.items {
			if !plainScalar(item) {
				return false
			}
		}
		return true
	}
	return false
}
