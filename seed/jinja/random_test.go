package jinja

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exprGen builds random expressions from the supported grammar, so that
// the differential test covers combinations nobody would write by hand.
type exprGen struct{ rng *rand.Rand }

var (
	genAtoms = []string{
		"0", "1", "2", "-3", "7", "10", "0.5", "2.0", "-1.25", "1e3", "0.1",
		"'a'", "'Ab c'", "''", "'42'", "' x '", "'a,b'", "'é'",
		"none", "true", "false", "[]", "[1, 2]", "['b', 'a']", "(1,)", "{'k': 1}",
		"extra.n", "extra.f", "extra.nums", "extra.words", "extra.empty", "extra.nothing",
		"extra.mixed", "extra.unicode", "extra.third", "extra.neg",
		"v1.local_hostname", "v1.public_ssh_keys", "v1.region", "ds.meta_data.meta",
		"nope", "v1.nope", "extra.nums[0]", "extra.nums[-1]", "local_hostname",
	}
	genBinary  = []string{"+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", "<=", ">", ">=", "and", "or", "in", "not in"}
	genFilters = []string{
		"length", "string", "upper", "lower", "default('d')", "default('d', true)", "int", "float",
		"first", "last", "join(',')", "join", "trim", "title", "capitalize", "abs", "list",
		"round", "round(1)", "replace('a', 'X')", "count", "d(0)", "tojson", "reverse",
		"sort", "indent(2)", "format", "items", "dictsort",
	}
	genTests = []string{
		"defined", "undefined", "none", "string", "number", "integer", "float", "odd", "even",
		"mapping", "sequence", "iterable", "boolean", "true", "false", "lower", "upper",
		"divisibleby 2", "eq 1", "in [1, 'a']", "sameas none",
	}
	genPostfix = []string{"[0]", "[-1]", "[1:]", "[::-1]", ".split()", ".upper()", ".strip()", ".items()", ".keys()", ".get('k')", "[1]", ".n"}
)

func (g *exprGen) pick(options []string) string { return options[g.rng.IntN(len(options))] }

func (g *exprGen) expr(depth int) string {
	if depth <= 0 {
		return g.pick(genAtoms)
	}
	switch g.rng.IntN(9) {
	case 0, 1:
		op := g.pick(genBinary)
		return g.expr(depth-1) + " " + op + " " + g.expr(depth-1)
	case 2:
		return g.expr(depth-1) + "|" + g.pick(genFilters)
	case 3:
		negate := ""
		if g.rng.IntN(2) == 0 {
			negate = "not "
		}
		return g.expr(depth-1) + " is " + negate + g.pick(genTests)
	case 4:
		return "(" + g.expr(depth-1) + ")" + g.pick(genPostfix)
	case 5:
		return "not " + g.expr(depth-1)
	case 6:
		return g.expr(depth-1) + " if " + g.expr(depth-1) + " else " + g.expr(depth-1)
	case 7:
		return "[" + g.expr(depth-1) + ", " + g.expr(depth-1) + "]"
	case 8:
		return "(" + g.expr(depth-1) + ") ** " + g.pick([]string{"0", "1", "2", "3", "-1", "0.5"})
	}
	return g.pick(genAtoms)
}

// TestRandomExpressionsMatchJinja2 renders generated expressions through
// Jinja2 and Render: both must fail, or both print the same text.
func TestRandomExpressionsMatchJinja2(t *testing.T) {
	python := findOracle(t)
	const count = 1500
	seed := uint64(2026)
	if s := os.Getenv("JINJA_RANDOM_SEED"); s != "" {
		// Explore other expressions: JINJA_RANDOM_SEED=7 go test -run Random
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	g := &exprGen{rng: rand.New(rand.NewPCG(seed, 11))}
	templates := make([]string, count)
	for i := range templates {
		templates[i] = "{{ " + g.expr(1+i%4) + " }}"
	}
	vars := decodeVars(t, instanceData)
	results := runOracle(t, python, templates, vars)
	mismatches := 0
	for i, tmpl := range templates {
		want := results[i]
		got, err := RenderWith([]byte(tmpl), decodeVars(t, instanceData), quietOptions())
		var problem string
		switch {
		case want.Err != nil && err == nil:
			problem = fmt.Sprintf("Render gave %q; Jinja2 failed: %s", got, *want.Err)
		case want.Err == nil && err != nil:
			if knownDifference(*want.Out, err) {
				continue
			}
			problem = fmt.Sprintf("Render failed: %v; Jinja2 gave %q", err, *want.Out)
		case want.Err == nil:
			// tojson gives Markup, which prints differently inside a list.
			if strings.Contains(*want.Out, "Markup(") {
				continue
			}
			if diff := cmp.Diff(*want.Out, string(got)); diff != "" {
				problem = fmt.Sprintf("output differs (-jinja2 +render):\n%s", diff)
			}
		}
		if problem != "" {
			mismatches++
			if mismatches <= 25 {
				t.Errorf("template %s: %s", tmpl, problem)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d generated templates differ from Jinja2", mismatches, count)
	}
}

// knownDifference accepts the documented gaps: integers beyond 64 bits,
// complex numbers, and values whose Python text holds a memory address.
func knownDifference(jinjaOut string, err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "integer overflow") || strings.Contains(msg, "complex result") ||
		(strings.Contains(jinjaOut, " at 0x") && strings.Contains(msg, "cannot print"))
}

// structGen builds random templates of text, tags and whitespace, to test
// the lexer's whitespace rules (trim_blocks, "-" and "+") against Jinja2.
type structGen struct{ rng *rand.Rand }

func (g *structGen) pick(options []string) string { return options[g.rng.IntN(len(options))] }

func (g *structGen) text() string {
	return g.pick([]string{"", "a", " ", "  ", "\n", " \n", "\n\n", "\t", "x\n  ", "\n  y", "\r\n", "  \n\t "})
}

func (g *structGen) open(kind string) string {
	return kind + g.pick([]string{"", "", "-", "+"}) + g.pick([]string{" ", "  ", "\n"})
}

func (g *structGen) close(kind string) string {
	return g.pick([]string{" ", "\n", ""}) + g.pick([]string{"", "", "-", "+"}) + kind
}

func (g *structGen) body(depth int) string {
	var b strings.Builder
	for range 1 + g.rng.IntN(4) {
		b.WriteString(g.text())
		switch g.rng.IntN(8) {
		case 0:
			// Jinja2 has no "+}}".
			closing := strings.Replace(g.close("}}"), "+}}", "}}", 1)
			b.WriteString(g.open("{{") + g.pick([]string{"1", "'v'", "x", "loop.index"}) + closing)
		case 1:
			b.WriteString(g.open("{#") + g.pick([]string{"c", "", " note "}) + g.close("#}"))
		case 2:
			b.WriteString(g.open("{%") + "set x = " + g.pick([]string{"2", "'s'"}) + g.close("%}"))
		case 3:
			if depth > 0 {
				b.WriteString(g.open("{%") + "if " + g.pick([]string{"true", "false", "x"}) + g.close("%}"))
				b.WriteString(g.body(depth - 1))
				if g.rng.IntN(2) == 0 {
					b.WriteString(g.open("{%") + "else" + g.close("%}"))
					b.WriteString(g.body(depth - 1))
				}
				b.WriteString(g.open("{%") + "endif" + g.close("%}"))
			}
		case 4:
			if depth > 0 {
				b.WriteString(g.open("{%") + "for i in " + g.pick([]string{"[1, 2]", "[]", "'ab'"}) + g.close("%}"))
				b.WriteString(g.body(depth - 1))
				b.WriteString(g.open("{%") + "endfor" + g.close("%}"))
			}
		case 5:
			b.WriteString(g.open("{%") + "raw" + g.close("%}") + g.text() + "{{ r }}" + g.text() + g.open("{%") + "endraw" + g.close("%}"))
		}
		b.WriteString(g.text())
	}
	return b.String()
}

// TestRandomLayoutsMatchJinja2 renders generated layouts of text and tags
// through Jinja2 and Render and wants the same bytes.
func TestRandomLayoutsMatchJinja2(t *testing.T) {
	python := findOracle(t)
	const count = 800
	seed := uint64(7)
	if s := os.Getenv("JINJA_RANDOM_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	g := &structGen{rng: rand.New(rand.NewPCG(seed, 3))}
	templates := make([]string, count)
	for i := range templates {
		templates[i] = g.body(2)
	}
	vars := map[string]any{"x": "X"}
	results := runOracle(t, python, templates, vars)
	mismatches := 0
	for i, tmpl := range templates {
		want := results[i]
		got, err := RenderWith([]byte(tmpl), map[string]any{"x": "X"}, quietOptions())
		var problem string
		switch {
		case want.Err != nil && err == nil:
			problem = fmt.Sprintf("Render gave %q; Jinja2 failed: %s", got, *want.Err)
		case want.Err == nil && err != nil:
			problem = fmt.Sprintf("Render failed: %v; Jinja2 gave %q", err, *want.Out)
		case want.Err == nil:
			if diff := cmp.Diff(*want.Out, string(got)); diff != "" {
				problem = fmt.Sprintf("output differs (-jinja2 +render):\n%s", diff)
			}
		}
		if problem != "" {
			mismatches++
			if mismatches <= 10 {
				t.Errorf("template %q: %s", tmpl, problem)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d generated templates differ from Jinja2", mismatches, count)
	}
}
