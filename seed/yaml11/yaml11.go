// Package yaml11 loads YAML the way cloud-init's PyYAML safe_load does, so
// that user-data means the same thing to seedinit as to cloud-init.
//
// go.yaml.in/yaml/v3 parses (YAML 1.2); this package resolves plain scalars
// with YAML 1.1's rules as PyYAML applies them: yes/no/on/off are booleans,
// 0644 is octal, 1_000 and 1:20 are integers, 1e3 is a string. Values come
// out as map[string]any, []any, string, bool, int64, float64 and nil.
// Mapping keys that are not strings are spelled as json.dumps would spell
// them, because everything downstream compares against cloud-init's JSON;
// equal numbers (1, 1.0, true) are one key, as in a Python dict. Explicit
// tags run PyYAML's constructors (!!float '1e3' is 1000.0). An alias shares
// its anchor's value, as PyYAML shares the object, and the expansion of
// aliases is bounded.
package yaml11

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/seed/pyfmt"
	"go.yaml.in/yaml/v3"
)

// Error is a YAML problem with the line it was found on (1-based; 0 when
// the parser did not say).
type Error struct {
	Line int
	Msg  string
	// limit marks the errors of Limits, which match ErrLimit.
	limit bool
}

func (e *Error) Is(target error) bool { return e.limit && target == ErrLimit }

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var lineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// Load decodes a single YAML document within DefaultLimits. An empty
// document is nil. More than one document is an error, as with safe_load.
//
// An alias yields the very value its anchor produced, as PyYAML gives the
// same object: changing a loaded map changes it wherever it was aliased.
// A document that contains itself through an alias is an error.
func Load(data []byte) (any, error) {
	v, _, err := LoadLimited(data, DefaultLimits)
	return v, err
}

// Limits bound what one document may make, so that a hostile one is
// refused before it takes the machine's memory: seedinit runs as PID 1 on
// appliances with 512 MiB. Each is far above what real cloud-configs
// reach; the README's table of limits says why each number.
type Limits struct {
	// Nodes bounds the scalars, collections and aliases of the stream,
	// checked before parsing; and of the document with every alias
	// counted as a copy of what it names, checked while converting.
	Nodes int
	// Comments bounds the comments, which yaml.v3 keeps with the nodes.
	Comments int
	// Items bounds the entries of one list, Keys those of one mapping.
	Items, Keys int
	// Depth bounds the nesting of collections.
	Depth int
}

// DefaultLimits are Load's limits. At 200,000 nodes yaml.v3's tree takes
// about 40 MiB and a second to build; the largest real cloud-configs
// (tens of thousands of lines) have a few tens of thousands of nodes.
var DefaultLimits = Limits{Nodes: 200_000, Comments: 100_000, Items: 100_000, Keys: 100_000, Depth: 200}

// ErrLimit matches (with errors.Is) every error that says a document
// passed one of its Limits.
var ErrLimit = errors.New("YAML limit")

// limitError says what passed which limit, on a line (0 when the limit
// was checked before parsing). what words it for the message: "YAML
// nodes", "items in a list".
func limitError(line int, what string, max int) *Error {
	return &Error{Line: line, Msg: fmt.Sprintf("more than %d %s", max, what), limit: true}
}

// LimitReached is the error of a document given no nodes at all: a budget
// shared by several documents that earlier ones used up.
func LimitReached() error {
	return limitError(0, "YAML nodes", DefaultLimits.Nodes)
}

// LoadLimited is Load with the given limits (a zero field takes
// DefaultLimits'). It also returns how many nodes the document stands
// for, aliases expanded, so that a caller can hold several documents to
// one budget.
func LoadLimited(data []byte, lim Limits) (any, int, error) {
	lim = lim.withDefaults()
	if c := scanStream(data, lim.Nodes, lim.Comments); c.nodes > lim.Nodes {
		return nil, 0, limitError(0, "YAML nodes", lim.Nodes)
	} else if c.comments > lim.Comments {
		return nil, 0, limitError(0, "YAML comments", lim.Comments)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, nil
		}
		return nil, 0, parserError(err, data)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, 0, &Error{Line: extra.Line, Msg: "expected a single document in the stream, found another"}
	} else if !errors.Is(err, io.EOF) {
		return nil, 0, parserError(err, data)
	}
	c := &converter{lim: lim, done: map[*yaml.Node]any{}, active: map[*yaml.Node]bool{}, size: map[*yaml.Node]int{}}
	v, err := c.convert(&doc, 0)
	if err != nil {
		return nil, 0, err
	}
	return v, c.expanded, nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Nodes > 0 {
		d.Nodes = l.Nodes
	}
	if l.Comments > 0 {
		d.Comments = l.Comments
	}
	if l.Items > 0 {
		d.Items = l.Items
	}
	if l.Keys > 0 {
		d.Keys = l.Keys
	}
	if l.Depth > 0 {
		d.Depth = l.Depth
	}
	return d
}

// parserProblems are the messages of libyaml's parser (not scanner)
// errors, for which yaml.v3 reports a 0-based line.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

var unknownAnchorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown anchor '(.*)' referenced$`) })

func parserError(err error, data []byte) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := lineRE().FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if parserProblems[msg] {
			line++
		}
	} else if parserProblems[msg] {
		// yaml.v3 leaves out "line 0": the problem is on the first line.
		line = 1
	} else if m := unknownAnchorRE().FindStringSubmatch(msg); m != nil {
		line = lineOf(data, "*"+m[1])
	}
	return &Error{Line: line, Msg: msg}
}

// lineOf is the 1-based line where needle first occurs, 0 if nowhere.
func lineOf(data []byte, needle string) int {
	i := bytes.Index(data, []byte(needle))
	if i < 0 {
		return 0
	}
	return 1 + bytes.Count(data[:i], []byte("\n"))
}

// converter turns nodes into values. done holds the value of each anchored
// node already converted, so that aliases share it (and a billion laughs
// costs nothing to load); active holds the nodes being converted, to refuse
// an alias to an enclosing node.
type converter struct {
	lim    Limits
	done   map[*yaml.Node]any
	active map[*yaml.Node]bool
	// size is how many nodes an anchored node stands for once aliases
	// are expanded, and expanded the running total for the document:
	// sharing makes a billion laughs cheap to load, but not to walk or
	// to write out as JSON, so the expansion is held to the node limit
	// as if every alias were a copy.
	size     map[*yaml.Node]int
	expanded int
}

func (c *converter) tooDeep(n *yaml.Node, depth int) error {
	if depth > c.lim.Depth {
		return limitError(n.Line, "levels of nesting", c.lim.Depth)
	}
	return nil
}

func (c *converter) grow(n *yaml.Node, by int) error {
	c.expanded += by
	if c.expanded > c.lim.Nodes {
		return limitError(n.Line, "YAML nodes once aliases are expanded", c.lim.Nodes)
	}
	return nil
}

func (c *converter) convert(n *yaml.Node, depth int) (any, error) {
	if err := c.tooDeep(n, depth); err != nil {
		return nil, err
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if c.active[target] {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("alias *%s refers to a node that contains it", n.Value)}
		}
		if v, ok := c.done[target]; ok {
			if err := c.grow(n, c.size[target]); err != nil {
				return nil, err
			}
			return v, nil
		}
		return c.convert(target, depth+1)
	}
	if err := c.grow(n, 1); err != nil {
		return nil, err
	}
	before := c.expanded
	if n.Anchor != "" {
		c.active[n] = true
		defer delete(c.active, n)
	}
	v, err := c.convertNode(n, depth)
	if err != nil {
		return nil, err
	}
	if n.Anchor != "" {
		c.done[n] = v
		c.size[n] = c.expanded - before + 1
	}
	return v, nil
}

func (c *converter) convertNode(n *yaml.Node, depth int) (any, error) {
	explicit := n.Style&yaml.TaggedStyle != 0
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.convert(n.Content[0], depth+1)
	case yaml.SequenceNode:
		if explicit {
			switch n.Tag {
			case "!!seq":
			case "!!omap", "!!pairs":
				return c.convertPairs(n, depth)
			default:
				return nil, tagError(n)
			}
		}
		if len(n.Content) > c.lim.Items {
			return nil, limitError(n.Line, "items in a list", c.lim.Items)
		}
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.convert(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if explicit && n.Tag != "!!map" && n.Tag != "!!set" {
			return nil, tagError(n)
		}
		return c.convertMapping(n, depth)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("unexpected node kind %d", n.Kind)}
}

func tagError(n *yaml.Node) error {
	switch n.Tag {
	case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!binary", "!!timestamp":
		return &Error{Line: n.Line, Msg: "expected a scalar node for " + n.Tag}
	case "!!seq", "!!omap", "!!pairs":
		return &Error{Line: n.Line, Msg: "expected a sequence node for " + n.Tag}
	case "!!map", "!!set":
		return &Error{Line: n.Line, Msg: "expected a mapping node for " + n.Tag}
	}
	return &Error{Line: n.Line, Msg: fmt.Sprintf("could not determine a constructor for the tag %s", n.Tag)}
}

// convertPairs builds !!omap and !!pairs as PyYAML's safe loader does: a
// list of [key, value] pairs from a sequence of one-entry mappings.
func (c *converter) convertPairs(n *yaml.Node, depth int) (any, error) {
	if len(n.Content) > c.lim.Items {
		return nil, limitError(n.Line, "items in a list", c.lim.Items)
	}
	out := make([]any, 0, len(n.Content))
	for _, e := range n.Content {
		if e.Kind != yaml.MappingNode || len(e.Content) != 2 {
			return nil, &Error{Line: e.Line, Msg: "expected a single mapping item in " + n.Tag}
		}
		k, err := c.convert(e.Content[0], depth+1)
		if err != nil {
			return nil, err
		}
		v, err := c.convert(e.Content[1], depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, []any{k, v})
	}
	return out, nil
}

func (c *converter) convertMapping(n *yaml.Node, depth int) (map[string]any, error) {
	if err := c.tooDeep(n, depth); err != nil {
		return nil, err
	}
	if len(n.Content)/2 > c.lim.Keys {
		return nil, limitError(n.Line, "keys in a mapping", c.lim.Keys)
	}
	out := make(map[string]any, len(n.Content)/2)
	// Python's dict treats equal numbers (1, 1.0, True) as one key and
	// keeps the spelling of the first; json.dumps then writes that one.
	spelling := map[string]string{}
	var merges []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			ms, err := c.mergeSources(v, depth)
			if err != nil {
				return nil, err
			}
			merges = append(merges, ms...)
			continue
		}
		key, err := c.convert(k, depth+1)
		if err != nil {
			return nil, err
		}
		ks, err := keyString(key)
		if err != nil {
			return nil, &Error{Line: k.Line, Msg: err.Error()}
		}
		if id, numeric := numericKey(key); numeric {
			if first, seen := spelling[id]; seen {
				ks = first
			} else {
				spelling[id] = ks
			}
		}
		val, err := c.convert(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[ks] = val
	}
	// Explicit keys win over merged ones; among merged maps the first wins.
	for _, m := range merges {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
		if len(out) > c.lim.Keys {
			return nil, limitError(n.Line, "keys in a mapping", c.lim.Keys)
		}
	}
	return out, nil
}

// numericKey gives the identity Python's dict uses for a number key.
func numericKey(k any) (string, bool) {
	switch v := k.(type) {
	case bool:
		if v {
			return "1", true
		}
		return "0", true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return strconv.FormatInt(int64(v), 10), true
		}
		return strconv.FormatFloat(v, 'g', -1, 64), true
	}
	return "", false
}

func (c *converter) mergeSources(v *yaml.Node, depth int) ([]map[string]any, error) {
	if err := c.tooDeep(v, depth); err != nil {
		return nil, err
	}
	one := func(n *yaml.Node) (map[string]any, error) {
		val, err := c.convert(n, depth+1)
		if err != nil {
			return nil, err
		}
		m, ok := val.(map[string]any)
		if !ok {
			return nil, &Error{Line: n.Line, Msg: "merge key expects a mapping or a list of mappings"}
		}
		return m, nil
	}
	target := v
	if target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	switch target.Kind {
	case yaml.MappingNode:
		m, err := one(v)
		if err != nil {
			return nil, err
		}
		return []map[string]any{m}, nil
	case yaml.SequenceNode:
		var out []map[string]any
		for _, e := range target.Content {
			m, err := one(e)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, &Error{Line: v.Line, Msg: "merge key expects a mapping or a list of mappings"}
}

func keyString(k any) (string, error) {
	switch v := k.(type) {
	case string:
		return v, nil
	case nil:
		return "null", nil
	case bool:
		if v {
			return "true", nil
		}
		return "false", nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return FormatFloat(v), nil
	}
	return "", fmt.Errorf("a %T cannot be a mapping key", k)
}

// FormatFloat spells a float as Python's json.dumps does: repr's digits,
// with JSON's names for the values that are not finite.
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	return pyfmt.Float(f)
}

var (
	boolRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	})
	intRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	})
	floatRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	})
	nullRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:~|null|Null|NULL|)$`) })
)

func scalar(n *yaml.Node) (any, error) {
	plain := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
	explicit := n.Style&yaml.TaggedStyle != 0
	if plain && !explicit {
		return resolvePlain(n.Value, n.Line)
	}
	if !explicit {
		return n.Value, nil
	}
	// An explicit tag runs PyYAML's constructor on the text, whatever the
	// text looks like: !!float '1e3' is 1000.0, !!null 'x' is null.
	switch n.Tag {
	case "!!str", "!!python/unicode":
		// cloud-init's loader adds python/unicode to safe_load's tags.
		return n.Value, nil
	case "!!bool":
		switch strings.ToLower(n.Value) {
		case "yes", "true", "on":
			return true, nil
		case "no", "false", "off":
			return false, nil
		}
		return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a valid !!bool", n.Value)}
	case "!!int":
		v, err := constructInt(n.Value)
		if err != nil {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a valid !!int", n.Value)}
		}
		return v, nil
	case "!!float":
		v, err := constructFloat(n.Value)
		if err != nil {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a valid !!float", n.Value)}
		}
		return v, nil
	case "!!null":
		return nil, nil
	case "!!binary":
		b, err := decodeBinary(n.Value)
		if err != nil {
			return nil, &Error{Line: n.Line, Msg: "failed to decode !!binary base64 data: " + err.Error()}
		}
		return string(b), nil
	case "!!timestamp":
		return n.Value, nil
	}
	return nil, tagError(n)
}

// decodeBinary decodes base64 as Python's base64.decodebytes does:
// characters outside the alphabet are skipped, padding is required.
func decodeBinary(s string) ([]byte, error) {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '+', r == '/', r == '=':
			return r
		}
		return -1
	}, s)
	return base64.StdEncoding.DecodeString(clean)
}

func resolvePlain(s string, line int) (any, error) {
	switch {
	case nullRE().MatchString(s):
		return nil, nil
	case boolRE().MatchString(s):
		switch s[0] {
		case 'y', 'Y', 't', 'T':
			return true, nil
		case 'o', 'O':
			return s == "on" || s == "On" || s == "ON", nil
		}
		return false, nil
	case intRE().MatchString(s):
		v, err := constructInt(s)
		if err != nil {
			// PyYAML raises ValueError (0b_, 0x_): the document fails.
			return nil, &Error{Line: line, Msg: fmt.Sprintf("invalid integer %q", s)}
		}
		return v, nil
	case floatRE().MatchString(s):
		v, err := constructFloat(s)
		if err != nil {
			return nil, &Error{Line: line, Msg: fmt.Sprintf("invalid float %q", s)}
		}
		return v, nil
	}
	return s, nil
}

var errNotNumber = errors.New("not a number")

// constructInt is PyYAML's construct_yaml_int. An integer beyond int64
// stays text: Python's ints are unbounded, ours are not, and a string keeps
// every digit.
func constructInt(s string) (any, error) {
	v := strings.ReplaceAll(s, "_", "")
	if v == "" {
		return nil, errNotNumber
	}
	neg := v[0] == '-'
	if v[0] == '-' || v[0] == '+' {
		v = v[1:]
	}
	var u uint64
	var err error
	switch {
	case v == "0":
		return int64(0), nil
	case strings.HasPrefix(v, "0b"):
		u, err = parseDigits(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		u, err = parseDigits(v[2:], 16)
	case strings.HasPrefix(v, "0"):
		// Python's int(v, 8) also takes an 0o prefix.
		digits := v[1:]
		if strings.HasPrefix(v, "0o") || strings.HasPrefix(v, "0O") {
			digits = v[2:]
		}
		u, err = parseDigits(digits, 8)
	case strings.Contains(v, ":"):
		for _, d := range strings.Split(v, ":") {
			x, e := parseDigits(d, 10)
			if e != nil {
				return nil, e
			}
			if u > (math.MaxUint64-x)/60 {
				return s, nil
			}
			u = u*60 + x
		}
	default:
		u, err = parseDigits(strings.TrimSpace(v), 10)
	}
	if errors.Is(err, strconv.ErrRange) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if neg {
		if u > 1<<63 {
			return s, nil
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return s, nil
	}
	return int64(u), nil
}

func parseDigits(d string, base int) (uint64, error) {
	if d == "" || strings.ContainsAny(d, "+-") {
		return 0, errNotNumber
	}
	return strconv.ParseUint(d, base, 64)
}

// constructFloat is PyYAML's construct_yaml_float: Python's float() on
// the text without underscores, plus .inf, .nan and base-60 parts.
func constructFloat(s string) (float64, error) {
	v := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	if v == "" {
		return 0, errNotNumber
	}
	sign := 1.0
	if v[0] == '-' {
		sign = -1
	}
	if v[0] == '-' || v[0] == '+' {
		v = v[1:]
	}
	switch {
	case v == ".inf":
		return sign * math.Inf(1), nil
	case v == ".nan":
		return math.NaN(), nil
	case strings.Contains(v, ":"):
		var f float64
		for _, d := range strings.Split(v, ":") {
			x, err := pyFloat(d)
			if err != nil {
				return 0, err
			}
			f = f*60 + x
		}
		return sign * f, nil
	}
	f, err := pyFloat(v)
	return sign * f, err
}

// pyFloat is Python's float() for decimal text: surrounding space allowed,
// "inf" and "nan" spelled out, no hexadecimal.
func pyFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "xXpP") {
		return 0, errNotNumber
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, err
	}
	return f, nil
}
