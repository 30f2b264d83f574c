package jinja

// Jinja2 decides when it compiles which frame a name belongs to (the
// template, or one iteration of a for body), and a frame that assigns a
// name before anything reads it starts with that name undefined, hiding
// the variable of the same name that the caller passed. A loop placed
// before {% set x %} therefore sees x undefined. The analysis below
// follows jinja2/idtracking.py so that such templates render the same.

type refKind int

const (
	refResolve   refKind = iota // read from the context when the frame starts
	refAlias                    // copied from the enclosing frame
	refUndefined                // starts undefined
)

type symbols struct {
	parent *symbols
	refs   map[string]refKind
	stores map[string]bool
}

func newSymbols(parent *symbols) *symbols {
	return &symbols{parent: parent, refs: map[string]refKind{}, stores: map[string]bool{}}
}

func (s *symbols) findRef(name string) bool {
	for p := s; p != nil; p = p.parent {
		if _, ok := p.refs[name]; ok {
			return true
		}
	}
	return false
}

func (s *symbols) load(name string) {
	if !s.findRef(name) {
		s.refs[name] = refResolve
	}
}

func (s *symbols) store(name string) {
	s.stores[name] = true
	if _, ok := s.refs[name]; ok {
		return
	}
	if s.parent != nil && s.parent.findRef(name) {
		s.refs[name] = refAlias
		return
	}
	s.refs[name] = refUndefined
}

func (s *symbols) copy() *symbols {
	c := newSymbols(s.parent)
	for k, v := range s.refs {
		c.refs[k] = v
	}
	for k := range s.stores {
		c.stores[k] = true
	}
	return c
}

// branchUpdate merges the branches of an if: a name assigned in some
// branches only is read from outside when the frame starts.
func (s *symbols) branchUpdate(branches []*symbols) {
	counts := map[string]int{}
	for _, b := range branches {
		for name := range b.stores {
			if !s.stores[name] {
				counts[name]++
			}
		}
	}
	for _, b := range branches {
		for k, v := range b.refs {
			s.refs[k] = v
		}
		for k := range b.stores {
			s.stores[k] = true
		}
	}
	for name, n := range counts {
		if n == len(branches) {
			continue
		}
		if s.parent != nil && s.parent.findRef(name) {
			s.refs[name] = refAlias
			continue
		}
		s.refs[name] = refResolve
	}
}

// frameAnalysis walks one frame's nodes; the for loops it meets are
// analyzed afterwards, as frames of their own.
type frameAnalysis struct {
	sym   *symbols
	loops []*forNode
}

func (a *frameAnalysis) nodes(body []node) {
	for _, n := range body {
		switch n := n.(type) {
		case *outputNode:
			a.expr(n.expr)
		case *setNode:
			a.expr(n.expr)
			if n.attr != "" {
				a.sym.load(n.targets[0])
				continue
			}
			for _, t := range n.targets {
				a.sym.store(t)
			}
		case *doNode:
			a.expr(n.expr)
		case *forNode:
			a.expr(n.iter)
			a.loops = append(a.loops, n)
		case *ifNode:
			a.ifChain(n.conds, n.bodies, n.orElse)
		}
	}
}

// ifChain mirrors Jinja2's If node: the first test and body, the elifs
// visited as nested ifs in one branch, and the else branch.
func (a *frameAnalysis) ifChain(conds []expr, bodies [][]node, orElse []node) {
	a.expr(conds[0])
	original := a.sym
	branch := func(visit func()) *symbols {
		a.sym = original.copy()
		visit()
		rv := a.sym
		a.sym = original
		return rv
	}
	body := branch(func() { a.nodes(bodies[0]) })
	elifs := branch(func() {
		for i := 1; i < len(conds); i++ {
			a.ifChain(conds[i:i+1], bodies[i:i+1], nil)
		}
	})
	orElseSym := branch(func() { a.nodes(orElse) })
	a.sym.branchUpdate([]*symbols{body, elifs, orElseSym})
}

func (a *frameAnalysis) expr(e expr) {
	walkExpr(e, func(x expr) {
		if n, ok := x.(*nameExpr); ok {
			a.sym.load(n.name)
		}
	})
}

// analyzeFrame returns the names that start undefined in a frame, and
// records the same for the for loops inside it.
func analyzeFrame(body []node, parent *symbols, targets []string) []string {
	a := &frameAnalysis{sym: newSymbols(parent)}
	for _, t := range targets {
		a.sym.store(t)
	}
	a.nodes(body)
	for _, loop := range a.loops {
		loop.bodyUndefined = analyzeFrame(loop.body, a.sym, append([]string{"loop"}, loop.targets...))
		loop.elseUndefined = analyzeFrame(loop.orElse, a.sym, nil)
	}
	var undefined []string
	for name, kind := range a.sym.refs {
		if kind == refUndefined && !contains(targets, name) && name != "loop" {
			undefined = append(undefined, name)
		}
	}
	return undefined
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// walkExpr calls fn on e and every expression inside it.
func walkExpr(e expr, fn func(expr)) {
	if e == nil {
		return
	}
	fn(e)
	walkAll := func(es []expr) {
		for _, x := range es {
			walkExpr(x, fn)
		}
	}
	switch e := e.(type) {
	case *attrExpr:
		walkExpr(e.obj, fn)
	case *itemExpr:
		walkExpr(e.obj, fn)
		walkExpr(e.key, fn)
	case *sliceExpr:
		walkAll([]expr{e.obj, e.start, e.stop, e.step})
	case *callExpr:
		walkExpr(e.fn, fn)
		walkAll(e.args)
		for _, a := range e.kwargs {
			walkExpr(a, fn)
		}
	case *filterExpr:
		walkExpr(e.arg, fn)
		walkAll(e.args)
		for _, a := range e.kwargs {
			walkExpr(a, fn)
		}
	case *testExpr:
		walkExpr(e.arg, fn)
		walkAll(e.args)
	case *binExpr:
		walkExpr(e.l, fn)
		walkExpr(e.r, fn)
	case *unaryExpr:
		walkExpr(e.x, fn)
	case *compareExpr:
		walkExpr(e.first, fn)
		walkAll(e.rest)
	case *concatExpr:
		walkAll(e.parts)
	case *condExpr:
		walkAll([]expr{e.cond, e.then, e.orElse})
	case *listExpr:
		walkAll(e.items)
	case *dictExpr:
		walkAll(e.keys)
		walkAll(e.vals)
	}
}
