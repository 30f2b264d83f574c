package inventory

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A template is a string of the inventory with {{ ... }} in it, filled
// from the instance's own facts when the inventory is loaded:
//
//	hostname: waf-{{ index | pad 3 }}
//	addresses: ["{{ pool.mgmt.cidr }}"]
//	match: {macaddress: "{{ mac }}"}
//	fqdn: "{{ mac | nocolons }}.lab.example"
//
// Between the braces: a fact (name, index, mac, system-uuid, serial,
// address, group, pool.NAME, pool.NAME.cidr, pool.NAME.prefix,
// pool.NAME.gateway) or a "quoted" literal, then any number of filters,
// each after a |: upper, lower, nocolons (drops : and -), pad N (left-pad
// with zeros to N characters), last N (the last N characters). The
// language is this small on purpose: everything it can say is checked
// by `seedinit serve check` for every instance, and what it cannot say
// (loops, conditions) belongs in the user-data's own jinja, which
// cloud-init renders on the instance.
type template struct {
	text  string
	parts []templatePart
}

// templatePart is a literal run of text or one {{ expression }}.
type templatePart struct {
	literal string
	expr    *templateExpr
}

type templateExpr struct {
	// fact is the fact's name; "" for a quoted literal, in value.
	fact    string
	value   string
	filters []templateFilter
}

type templateFilter struct {
	name string
	n    int
}

// maxTemplatePad bounds pad N: a typo of 1000000 must not allocate a
// megabyte per instance.
const maxTemplatePad = 64

// hasTemplate says whether s holds a template to fill.
func hasTemplate(s string) bool { return strings.Contains(s, "{{") }

// parseTemplate reads s; an error names the expression that is wrong.
func parseTemplate(s string) (*template, error) {
	t := &template{text: s}
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if strings.Contains(rest, "}}") {
				return nil, errors.New(`"}}" without "{{" before it`)
			}
			if rest != "" {
				t.parts = append(t.parts, templatePart{literal: rest})
			}
			return t, nil
		}
		if strings.Contains(rest[:i], "}}") {
			return nil, errors.New(`"}}" without "{{" before it`)
		}
		if i > 0 {
			t.parts = append(t.parts, templatePart{literal: rest[:i]})
		}
		body, after, ok := cutExpression(rest[i+2:])
		if !ok {
			return nil, fmt.Errorf(`"{{%s": no "}}" closes it`, clip(rest[i+2:]))
		}
		e, err := parseExpression(body)
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: %w", body, err)
		}
		t.parts = append(t.parts, templatePart{expr: e})
		rest = after
	}
}

// cutExpression splits at the "}}" that closes an expression, passing over
// one inside a quoted literal.
func cutExpression(s string) (body, after string, ok bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], "}}"):
			return s[:i], s[i+2:], true
		}
	}
	return "", "", false
}

func parseExpression(body string) (*templateExpr, error) {
	terms := splitPipes(body)
	head := strings.TrimSpace(terms[0])
	e := &templateExpr{}
	switch {
	case head == "":
		return nil, errors.New("empty: want a fact (name, index, mac, ...) or a \"literal\"")
	case strings.HasPrefix(head, `"`):
		if len(head) < 2 || !strings.HasSuffix(head, `"`) {
			return nil, fmt.Errorf("%s: a literal is closed by a \"", head)
		}
		e.value = head[1 : len(head)-1]
	default:
		if err := checkFactName(head); err != nil {
			return nil, err
		}
		e.fact = head
	}
	for _, term := range terms[1:] {
		words := strings.Fields(term)
		if len(words) == 0 {
			return nil, errors.New("a | with no filter after it")
		}
		f := templateFilter{name: words[0]}
		switch f.name {
		case "upper", "lower", "nocolons":
			if len(words) != 1 {
				return nil, fmt.Errorf("filter %s takes no argument", f.name)
			}
		case "pad", "last":
			if len(words) != 2 {
				return nil, fmt.Errorf("filter %s takes a number: %s 3", f.name, f.name)
			}
			n, err := strconv.Atoi(words[1])
			if err != nil || n < 1 || n > maxTemplatePad {
				return nil, fmt.Errorf("filter %s %s: want a number from 1 to %d", f.name, words[1], maxTemplatePad)
			}
			f.n = n
		default:
			return nil, fmt.Errorf("unknown filter %q: want upper, lower, nocolons, pad N or last N", f.name)
		}
		e.filters = append(e.filters, f)
	}
	return e, nil
}

// splitPipes splits an expression at the | outside quotes.
func splitPipes(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case s[i] == '|' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// The facts a template may name; pool facts are pool.NAME[.FIELD].
var templateFacts = []string{"name", "index", "mac", "system-uuid", "serial", "address", "group"}

func checkFactName(name string) error {
	for _, f := range templateFacts {
		if name == f {
			return nil
		}
	}
	if rest, ok := strings.CutPrefix(name, "pool."); ok {
		pool, field, _ := strings.Cut(rest, ".")
		if !validName(pool) {
			return fmt.Errorf("%s: want pool.NAME, a pool's name of letters, digits, - and _", name)
		}
		switch field {
		case "", "cidr", "prefix", "gateway":
			return nil
		}
		return fmt.Errorf("%s: a pool gives .cidr, .prefix or .gateway, not .%s", name, field)
	}
	return fmt.Errorf("unknown fact %q: want one of %s, pool.NAME", name, strings.Join(templateFacts, ", "))
}

// factSource gives a fact's value for one instance, or why it has none.
type factSource func(name string) (string, error)

// fill renders t with the instance's facts.
func (t *template) fill(facts factSource) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.literal)
			continue
		}
		v := p.expr.value
		if p.expr.fact != "" {
			var err error
			if v, err = facts(p.expr.fact); err != nil {
				return "", err
			}
		}
		for _, f := range p.expr.filters {
			v = f.apply(v)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

func (f templateFilter) apply(v string) string {
	switch f.name {
	case "upper":
		return strings.ToUpper(v)
	case "lower":
		return strings.ToLower(v)
	case "nocolons":
		return strings.NewReplacer(":", "", "-", "").Replace(v)
	case "pad":
		if len(v) < f.n {
			return strings.Repeat("0", f.n-len(v)) + v
		}
	case "last":
		if len(v) > f.n {
			return v[len(v)-f.n:]
		}
	}
	return v
}

// validName is a name of a group, instance or pool: letters, digits,
// '-', '_' and '.', not starting with a '.'.
func validName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
