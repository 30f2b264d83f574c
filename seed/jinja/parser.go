package jinja

import (
	"fmt"
	"strings"
)

// maxNesting bounds how deep blocks, brackets and expressions may nest, so
// that a hostile template cannot exhaust the stack of the parser or of the
// evaluator.
const maxNesting = 100

// Template nodes.
type (
	node interface{}

	textNode struct{ text string }

	outputNode struct {
		expr expr
		line int
	}

	ifNode struct {
		conds  []expr
		bodies [][]node
		orElse []node
	}

	forNode struct {
		targets []string
		iter    expr
		filter  expr
		body    []node
		orElse  []node
		line    int
		// bodyUndefined and elseUndefined name what starts undefined
		// in each iteration and in the else block (see scoping.go).
		bodyUndefined []string
		elseUndefined []string
	}

	// template is a parsed template and the names that start undefined
	// in its top-level frame.
	template struct {
		body      []node
		undefined []string
	}

	setNode struct {
		targets []string
		// attr is set for {% set ns.attr = ... %}: targets[0] is then
		// the namespace.
		attr string
		expr expr
		line int
	}

	doNode struct {
		expr expr
		line int
	}
)

// Expression nodes; every one knows its line for error messages.
type (
	expr interface{ exprLine() int }

	constExpr struct {
		val  value
		line int
	}
	nameExpr struct {
		name string
		line int
	}
	attrExpr struct {
		obj  expr
		name string
		line int
	}
	itemExpr struct {
		obj  expr
		key  expr
		line int
	}
	sliceExpr struct {
		obj               expr
		start, stop, step expr // nil when omitted
		line              int
	}
	callExpr struct {
		fn     expr
		args   []expr
		kwargs map[string]expr
		line   int
	}
	filterExpr struct {
		arg    expr
		name   string
		args   []expr
		kwargs map[string]expr
		line   int
	}
	testExpr struct {
		arg    expr
		name   string
		args   []expr
		negate bool
		line   int
	}
	binExpr struct {
		op   string
		l, r expr
		line int
	}
	unaryExpr struct {
		op   string // "not", "-", "+"
		x    expr
		line int
	}
	compareExpr struct {
		first expr
		ops   []string
		rest  []expr
		line  int
	}
	concatExpr struct {
		parts []expr
		line  int
	}
	condExpr struct {
		cond, then, orElse expr // orElse nil: undefined when false
		line               int
	}
	listExpr struct {
		items []expr
		tuple bool
		line  int
	}
	dictExpr struct {
		keys, vals []expr
		line       int
	}
)

func (e *constExpr) exprLine() int   { return e.line }
func (e *nameExpr) exprLine() int    { return e.line }
func (e *attrExpr) exprLine() int    { return e.line }
func (e *itemExpr) exprLine() int    { return e.line }
func (e *sliceExpr) exprLine() int   { return e.line }
func (e *callExpr) exprLine() int    { return e.line }
func (e *filterExpr) exprLine() int  { return e.line }
func (e *testExpr) exprLine() int    { return e.line }
func (e *binExpr) exprLine() int     { return e.line }
func (e *unaryExpr) exprLine() int   { return e.line }
func (e *compareExpr) exprLine() int { return e.line }
func (e *concatExpr) exprLine() int  { return e.line }
func (e *condExpr) exprLine() int    { return e.line }
func (e *listExpr) exprLine() int    { return e.line }
func (e *dictExpr) exprLine() int    { return e.line }

type parser struct {
	toks  []token
	pos   int
	depth int
}

func parse(src string) (*template, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, end, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf(p.cur(), "unexpected '%s'", end)
	}
	foldConstants(body)
	return &template{body: body, undefined: analyzeFrame(body, nil, nil)}, nil
}

func (p *parser) cur() token  { return p.toks[p.pos] }
func (p *parser) peek() token { return p.toks[min(p.pos+1, len(p.toks)-1)] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

func (p *parser) errorf(t token, format string, args ...any) error {
	return &SyntaxError{Line: t.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tokOp && t.text == op
}

func (p *parser) isName(name string) bool {
	t := p.cur()
	return t.kind == tokName && t.text == name
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errorf(p.cur(), "expected '%s', got %s", op, p.cur().describe())
	}
	p.next()
	return nil
}

func (p *parser) expectKind(kind tokenKind, what string) (token, error) {
	t := p.cur()
	if t.kind != kind {
		return t, p.errorf(t, "expected %s, got %s", what, t.describe())
	}
	return p.next(), nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return p.errorf(p.cur(), "template nests deeper than %d levels", maxNesting)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// unsupportedStatements are Jinja2 tags this renderer refuses by name.
var unsupportedStatements = map[string]bool{
	"macro": true, "call": true, "filter": true, "block": true, "extends": true,
	"include": true, "import": true, "from": true, "with": true,
	"autoescape": true, "break": true, "continue": true, "trans": true,
	"namespace": true, "print": true,
}

// subparse reads nodes until a block tag whose name is in endTags (which it
// consumes up to the name and returns) or the end of the template.
func (p *parser) subparse(endTags []string) ([]node, string, error) {
	if err := p.enter(); err != nil {
		return nil, "", err
	}
	defer p.leave()
	var body []node
	for {
		t := p.cur()
		switch t.kind {
		case tokEOF:
			if len(endTags) > 0 {
				return nil, "", p.errorf(t, "unexpected end of template, expected %s", quoteList(endTags))
			}
			return body, "", nil
		case tokData:
			p.next()
			body = append(body, &textNode{text: t.text})
		case tokVarBegin:
			p.next()
			e, err := p.parseTuple(true)
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectKind(tokVarEnd, "end of print statement"); err != nil {
				return nil, "", err
			}
			body = append(body, &outputNode{expr: e, line: t.line})
		case tokBlockBegin:
			p.next()
			nameTok := p.cur()
			if nameTok.kind != tokName {
				return nil, "", p.errorf(nameTok, "tag name expected")
			}
			for _, end := range endTags {
				if nameTok.text == end {
					p.next()
					return body, end, nil
				}
			}
			n, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			body = append(body, n)
		default:
			return nil, "", p.errorf(t, "unexpected %s", t.describe())
		}
	}
}

func quoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return strings.Join(quoted, " or ")
}

func (p *parser) endBlock() error {
	_, err := p.expectKind(tokBlockEnd, "end of statement block")
	return err
}

func (p *parser) parseStatement() (node, error) {
	t := p.next()
	switch t.text {
	case "if":
		return p.parseIf()
	case "for":
		return p.parseFor(t)
	case "set":
		return p.parseSet(t)
	case "do":
		e, err := p.parseTuple(true)
		if err != nil {
			return nil, err
		}
		return &doNode{expr: e, line: t.line}, p.endBlock()
	}
	if unsupportedStatements[t.text] {
		return nil, p.errorf(t, "unsupported statement %q", t.text)
	}
	if strings.HasPrefix(t.text, "end") || t.text == "else" || t.text == "elif" {
		return nil, p.errorf(t, "unexpected '%s'", t.text)
	}
	return nil, p.errorf(t, "unknown tag %q", t.text)
}

func (p *parser) parseIf() (node, error) {
	n := &ifNode{}
	for {
		cond, err := p.parseTuple(false)
		if err != nil {
			return nil, err
		}
		if err := p.endBlock(); err != nil {
			return nil, err
		}
		body, end, err := p.subparse([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.endBlock(); err != nil {
				return nil, err
			}
			n.orElse, _, err = p.subparse([]string{"endif"})
			if err != nil {
				return nil, err
			}
		}
		return n, p.endBlock()
	}
}

// parseTargets reads "a" or "a, b" (with optional parentheses) as names to
// assign to.
func (p *parser) parseTargets() ([]string, error) {
	paren := p.isOp("(")
	if paren {
		p.next()
	}
	var names []string
	for {
		t, err := p.expectKind(tokName, "name to assign to")
		if err != nil {
			return nil, err
		}
		names = append(names, t.text)
		if !p.isOp(",") {
			break
		}
		p.next()
		if p.cur().kind != tokName {
			break
		}
	}
	if paren {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (p *parser) parseFor(t token) (node, error) {
	n := &forNode{line: t.line}
	var err error
	if n.targets, err = p.parseTargets(); err != nil {
		return nil, err
	}
	if !p.isName("in") {
		return nil, p.errorf(p.cur(), "expected 'in', got %s", p.cur().describe())
	}
	p.next()
	if n.iter, err = p.parseTupleUntil(false, "if", "recursive"); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.next()
		if n.filter, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errorf(p.cur(), "unsupported recursive for loop")
	}
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	body, end, err := p.subparse([]string{"endfor", "else"})
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.endBlock(); err != nil {
			return nil, err
		}
		if n.orElse, _, err = p.subparse([]string{"endfor"}); err != nil {
			return nil, err
		}
	}
	return n, p.endBlock()
}

func (p *parser) parseSet(t token) (node, error) {
	attr := ""
	var targets []string
	if p.cur().kind == tokName && p.peek().kind == tokOp && p.peek().text == "." {
		ns := p.next()
		p.next()
		attrTok, err := p.expectKind(tokName, "attribute name")
		if err != nil {
			return nil, err
		}
		targets, attr = []string{ns.text}, attrTok.text
	} else {
		var err error
		if targets, err = p.parseTargets(); err != nil {
			return nil, err
		}
	}
	if !p.isOp("=") {
		if p.cur().kind == tokBlockEnd || p.isOp("|") {
			return nil, p.errorf(t, "unsupported block set (use {%% set x = ... %%})")
		}
		return nil, p.errorf(p.cur(), "expected '=', got %s", p.cur().describe())
	}
	p.next()
	e, err := p.parseTuple(true)
	if err != nil {
		return nil, err
	}
	return &setNode{targets: targets, attr: attr, expr: e, line: t.line}, p.endBlock()
}

// tupleEnds reports whether the current token closes a tuple.
func (p *parser) tupleEnds(extraEnds []string) bool {
	t := p.cur()
	switch t.kind {
	case tokVarEnd, tokBlockEnd, tokEOF:
		return true
	case tokOp:
		return t.text == ")"
	case tokName:
		for _, e := range extraEnds {
			if t.text == e {
				return true
			}
		}
	}
	return false
}

func (p *parser) parseTuple(withCond bool) (expr, error) {
	return p.parseTupleUntil(withCond)
}

// parseTupleUntil reads "a" or "a, b, ..." (a tuple) as Jinja2's
// parse_tuple does.
func (p *parser) parseTupleUntil(withCond bool, extraEnds ...string) (expr, error) {
	line := p.cur().line
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.tupleEnds(extraEnds) {
			break
		}
		e, err := p.parseExpression(withCond)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) == 0 {
			return nil, p.errorf(p.cur(), "expected an expression, got %s", p.cur().describe())
		}
		return items[0], nil
	}
	return &listExpr{items: items, tuple: true, line: line}, nil
}

func (p *parser) parseExpression(withCond bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if withCond {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	line := p.cur().line
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.isName("if") {
		p.next()
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var orElse expr
		if p.isName("else") {
			p.next()
			if orElse, err = p.parseCondExpr(); err != nil {
				return nil, err
			}
		}
		e = &condExpr{cond: cond, then: e, orElse: orElse, line: line}
	}
	return e, nil
}

func (p *parser) parseOr() (expr, error) {
	e, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isName("or") {
		t := p.next()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		e = &binExpr{op: "or", l: e, r: r, line: t.line}
	}
	return e, nil
}

func (p *parser) parseAnd() (expr, error) {
	e, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.isName("and") {
		t := p.next()
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		e = &binExpr{op: "and", l: e, r: r, line: t.line}
	}
	return e, nil
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "not", x: x, line: t.line}, nil
	}
	return p.parseCompare()
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

func (p *parser) parseCompare() (expr, error) {
	line := p.cur().line
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{first: first, line: line}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tokOp && compareOps[t.text]:
			op = t.text
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.peek().kind == tokName && p.peek().text == "in":
			op = "not in"
			p.next()
			p.next()
		default:
			if len(c.ops) == 0 {
				return first, nil
			}
			return c, nil
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
}

func (p *parser) parseMath1() (expr, error) {
	e, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		e = &binExpr{op: t.text, l: e, r: r, line: t.line}
	}
	return e, nil
}

func (p *parser) parseConcat() (expr, error) {
	line := p.cur().line
	e, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	if !p.isOp("~") {
		return e, nil
	}
	parts := []expr{e}
	for p.isOp("~") {
		p.next()
		r, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		parts = append(parts, r)
	}
	return &concatExpr{parts: parts, line: line}, nil
}

func (p *parser) parseMath2() (expr, error) {
	e, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		t := p.next()
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		e = &binExpr{op: t.text, l: e, r: r, line: t.line}
	}
	return e, nil
}

func (p *parser) parsePow() (expr, error) {
	e, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.isOp("**") {
		t := p.next()
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		e = &binExpr{op: "**", l: e, r: r, line: t.line}
	}
	return e, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	var e expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		p.next()
		x, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{op: t.text, x: x, line: t.line}
	} else if e, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if e, err = p.parsePostfix(e); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(e)
	}
	return e, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tokName:
		p.next()
		switch t.text {
		case "true", "True":
			return &constExpr{val: true, line: t.line}, nil
		case "false", "False":
			return &constExpr{val: false, line: t.line}, nil
		case "none", "None":
			return &constExpr{val: nil, line: t.line}, nil
		}
		return &nameExpr{name: t.text, line: t.line}, nil
	case tokString:
		p.next()
		text := t.text
		for p.cur().kind == tokString {
			text += p.next().text
		}
		return &constExpr{val: text, line: t.line}, nil
	case tokInt, tokFloat:
		p.next()
		return &constExpr{val: t.num, line: t.line}, nil
	case tokOp:
		switch t.text {
		case "(":
			p.next()
			e, err := p.parseParenthesized()
			if err != nil {
				return nil, err
			}
			return e, p.expectOp(")")
		case "[":
			return p.parseList()
		case "{":
			return p.parseDict()
		}
	}
	return nil, p.errorf(t, "unexpected %s", t.describe())
}

// parseParenthesized reads what is inside "( )": an expression, a tuple,
// or "()" the empty tuple.
func (p *parser) parseParenthesized() (expr, error) {
	line := p.cur().line
	if p.isOp(")") {
		return &listExpr{tuple: true, line: line}, nil
	}
	var items []expr
	for {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
		if !p.isOp(",") {
			if len(items) == 1 {
				return e, nil
			}
			return &listExpr{items: items, tuple: true, line: line}, nil
		}
		p.next()
		if p.isOp(")") {
			return &listExpr{items: items, tuple: true, line: line}, nil
		}
	}
}

func (p *parser) parseList() (expr, error) {
	t := p.next()
	l := &listExpr{line: t.line}
	for !p.isOp("]") {
		if len(l.items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		l.items = append(l.items, e)
	}
	p.next()
	return l, nil
}

func (p *parser) parseDict() (expr, error) {
	t := p.next()
	d := &dictExpr{line: t.line}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	p.next()
	return d, nil
}

func (p *parser) parsePostfix(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			e, err = p.parseSubscript(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseFilterExpr(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			e, err = p.parseFilter(e)
		case p.isName("is"):
			e, err = p.parseTest(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseSubscript(obj expr) (expr, error) {
	t := p.next()
	if t.text == "." {
		attr := p.next()
		switch attr.kind {
		case tokName:
			return &attrExpr{obj: obj, name: attr.text, line: attr.line}, nil
		case tokInt:
			return &itemExpr{obj: obj, key: &constExpr{val: attr.num, line: attr.line}, line: attr.line}, nil
		}
		return nil, p.errorf(attr, "expected name or number after '.', got %s", attr.describe())
	}
	var keys []expr
	for !p.isOp("]") {
		if len(keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		k, err := p.parseSubscribed(obj)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	p.next()
	switch len(keys) {
	case 0:
		// Jinja2 reads x[] as x[()].
		return &itemExpr{obj: obj, key: &listExpr{tuple: true, line: t.line}, line: t.line}, nil
	case 1:
		if s, ok := keys[0].(*sliceExpr); ok {
			return s, nil
		}
		return &itemExpr{obj: obj, key: keys[0], line: t.line}, nil
	}
	for _, k := range keys {
		if _, ok := k.(*sliceExpr); ok {
			return nil, p.errorf(t, "unsupported multi-dimensional slice")
		}
	}
	return &itemExpr{obj: obj, key: &listExpr{items: keys, tuple: true, line: t.line}, line: t.line}, nil
}

// parseSubscribed reads one subscript: an expression or a slice a:b:c.
func (p *parser) parseSubscribed(obj expr) (expr, error) {
	line := p.cur().line
	var parts [3]expr
	if !p.isOp(":") {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return e, nil
		}
		parts[0] = e
	}
	p.next() // the first ":"
	if !p.isOp("]") && !p.isOp(",") && !p.isOp(":") {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		parts[1] = e
	}
	if p.isOp(":") {
		p.next()
		if !p.isOp("]") && !p.isOp(",") {
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			parts[2] = e
		}
	}
	return &sliceExpr{obj: obj, start: parts[0], stop: parts[1], step: parts[2], line: line}, nil
}

// parseArgs reads "(a, b, key=c)".
func (p *parser) parseArgs() ([]expr, map[string]expr, error) {
	open := p.next()
	var args []expr
	var kwargs map[string]expr
	first := true
	for !p.isOp(")") {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		first = false
		if p.isOp("*") || p.isOp("**") {
			return nil, nil, p.errorf(p.cur(), "unsupported *args or **kwargs in a call")
		}
		if p.cur().kind == tokName && p.peek().kind == tokOp && p.peek().text == "=" {
			key := p.next().text
			p.next()
			v, err := p.parseExpression(true)
			if err != nil {
				return nil, nil, err
			}
			if kwargs == nil {
				kwargs = map[string]expr{}
			}
			kwargs[key] = v
			continue
		}
		if kwargs != nil {
			return nil, nil, p.errorf(p.cur(), "positional argument after keyword argument")
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if p.cur().kind == tokEOF {
		return nil, nil, p.errorf(open, "unclosed '('")
	}
	p.next()
	return args, kwargs, nil
}

func (p *parser) parseCall(fn expr) (expr, error) {
	line := p.cur().line
	args, kwargs, err := p.parseArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{fn: fn, args: args, kwargs: kwargs, line: line}, nil
}

func (p *parser) parseFilter(arg expr) (expr, error) {
	p.next() // "|"
	nameTok, err := p.expectKind(tokName, "filter name")
	if err != nil {
		return nil, err
	}
	name := nameTok.text
	for p.isOp(".") {
		p.next()
		part, err := p.expectKind(tokName, "filter name")
		if err != nil {
			return nil, err
		}
		name += "." + part.text
	}
	if _, ok := filters[name]; !ok {
		return nil, p.errorf(nameTok, "unsupported filter %q", name)
	}
	f := &filterExpr{arg: arg, name: name, line: nameTok.line}
	if p.isOp("(") {
		if f.args, f.kwargs, err = p.parseArgs(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseTest(arg expr) (expr, error) {
	p.next() // "is"
	negate := false
	if p.isName("not") {
		p.next()
		negate = true
	}
	nameTok, err := p.expectKind(tokName, "test name")
	if err != nil {
		return nil, err
	}
	name := nameTok.text
	if _, ok := tests[name]; !ok {
		return nil, p.errorf(nameTok, "unsupported test %q", name)
	}
	te := &testExpr{arg: arg, name: name, negate: negate, line: nameTok.line}
	t := p.cur()
	switch {
	case p.isOp("("):
		args, kwargs, err := p.parseArgs()
		if err != nil {
			return nil, err
		}
		if len(kwargs) > 0 {
			return nil, p.errorf(t, "unsupported keyword arguments to test %q", name)
		}
		te.args = args
	case t.kind == tokString || t.kind == tokInt || t.kind == tokFloat || p.isOp("[") || p.isOp("{") ||
		(t.kind == tokName && t.text != "else" && t.text != "or" && t.text != "and"):
		// "x is divisibleby 3": one argument without parentheses.
		if t.kind == tokName && t.text == "is" {
			return nil, p.errorf(t, "unexpected 'is'")
		}
		a, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		te.args = []expr{a}
	}
	return te, nil
}
