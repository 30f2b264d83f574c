// Package yaml11 loads YAML the way cloud-init's PyYAML safe_load does, so
// that user-data means the same thing to seedinit as to cloud-init.
//
// go.yaml.in/yaml/v3 parses (YAML 1.2); this package resolves plain scalars
// with YAML 1.1's rules as PyYAML applies them: yes/no/on/off are booleans,
// 0644 is octal, 1_000 and 1:20 are integers, 1e3 is a string. Values come
// out as map[string]any, []any, string, bool, int64, float64 and nil.
// Mapping keys that are not strings are spelled as json.dumps would spell
// them, because everything downstream compares against cloud-init's JSON.
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

	"go.yaml.in/yaml/v3"
)

// Error is a YAML problem with the line it was found on (1-based; 0 when
// the parser did not say).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Load decodes a single YAML document. An empty document is nil. More than
// one document is an error, as with safe_load.
func Load(data []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, parserError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Line: extra.Line, Msg: "expected a single document in the stream, found another"}
	} else if !errors.Is(err, io.EOF) {
		return nil, parserError(err)
	}
	return convert(&doc, 0)
}

func parserError(err error) error {
	msg := err.Error()
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{Line: n, Msg: m[2]}
	}
	return &Error{Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// maxDepth bounds nesting and alias expansion (billion laughs).
const maxDepth = 200

func convert(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, &Error{Line: n.Line, Msg: "nesting too deep"}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return convert(n.Content[0], depth+1)
	case yaml.AliasNode:
		return convert(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := convert(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return convertMapping(n, depth)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("unexpected node kind %d", n.Kind)}
}

func convertMapping(n *yaml.Node, depth int) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			ms, err := mergeSources(v, depth)
			if err != nil {
				return nil, err
			}
			merges = append(merges, ms...)
			continue
		}
		key, err := convert(k, depth+1)
		if err != nil {
			return nil, err
		}
		ks, err := keyString(key)
		if err != nil {
			return nil, &Error{Line: k.Line, Msg: err.Error()}
		}
		val, err := convert(v, depth+1)
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
	}
	return out, nil
}

func mergeSources(v *yaml.Node, depth int) ([]map[string]any, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		m, err := convertMapping(v, depth+1)
		if err != nil {
			return nil, err
		}
		return []map[string]any{m}, nil
	case yaml.SequenceNode:
		var out []map[string]any
		for _, c := range v.Content {
			if c.Kind == yaml.AliasNode {
				c = c.Alias
			}
			if c.Kind != yaml.MappingNode {
				return nil, &Error{Line: c.Line, Msg: "merge key expects a mapping or a list of mappings"}
			}
			m, err := convertMapping(c, depth+1)
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

// FormatFloat spells a float as Python's repr/json.dumps do.
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if exp := strings.IndexByte(s, 'e'); exp >= 0 {
		// Python writes 1e+20, Go 1e+20: the same, but Python switches to
		// exponent form only from 1e16 on and below 1e-4.
		if f != 0 && math.Abs(f) < 1e16 && math.Abs(f) >= 1e-4 {
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	if !strings.ContainsAny(s, ".eEIN") {
		s += ".0"
	}
	return s
}

var (
	boolRE  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	intRE   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	floatRE = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	nullRE  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
)

func scalar(n *yaml.Node) (any, error) {
	tag := n.Tag
	plain := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
	explicit := n.Style&yaml.TaggedStyle != 0
	if plain && !explicit {
		return resolvePlain(n.Value, n.Line)
	}
	if !explicit {
		return n.Value, nil
	}
	switch tag {
	case "!!str":
		return n.Value, nil
	case "!!bool", "!!int", "!!float", "!!null":
		v, err := resolvePlain(n.Value, n.Line)
		if err != nil {
			return nil, err
		}
		if !tagMatches(tag, v) {
			return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("%q is not a valid %s", n.Value, tag)}
		}
		return v, nil
	case "!!binary":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(n.Value), ""))
		if err != nil {
			return nil, &Error{Line: n.Line, Msg: "invalid !!binary: " + err.Error()}
		}
		return string(b), nil
	case "!!timestamp":
		return n.Value, nil
	}
	return nil, &Error{Line: n.Line, Msg: fmt.Sprintf("could not determine a constructor for the tag %s", tag)}
}

func tagMatches(tag string, v any) bool {
	switch v.(type) {
	case bool:
		return tag == "!!bool"
	case int64:
		return tag == "!!int" || tag == "!!float"
	case float64:
		return tag == "!!float"
	case nil:
		return tag == "!!null"
	}
	return false
}

func resolvePlain(s string, line int) (any, error) {
	switch {
	case nullRE.MatchString(s):
		return nil, nil
	case boolRE.MatchString(s):
		switch s[0] {
		case 'y', 'Y', 't', 'T':
			return true, nil
		case 'o', 'O':
			return s == "on" || s == "On" || s == "ON", nil
		}
		return false, nil
	case intRE.MatchString(s):
		return parseInt(s, line)
	case floatRE.MatchString(s):
		return parseFloat(s, line)
	}
	return s, nil
}

func parseInt(s string, line int) (any, error) {
	v := strings.ReplaceAll(s, "_", "")
	sign := int64(1)
	switch {
	case strings.HasPrefix(v, "-"):
		sign, v = -1, v[1:]
	case strings.HasPrefix(v, "+"):
		v = v[1:]
	}
	var n int64
	var err error
	switch {
	case v == "0":
		return int64(0), nil
	case strings.HasPrefix(v, "0b"):
		n, err = strconv.ParseInt(v[2:], 2, 64)
	case strings.HasPrefix(v, "0x"):
		n, err = strconv.ParseInt(v[2:], 16, 64)
	case strings.HasPrefix(v, "0"):
		n, err = strconv.ParseInt(v[1:], 8, 64)
	case strings.Contains(v, ":"):
		for _, d := range strings.Split(v, ":") {
			x, e := strconv.ParseInt(d, 10, 64)
			if e != nil {
				err = e
				break
			}
			n = n*60 + x
		}
	default:
		n, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		// Python's ints are unbounded; ours are not. Keep the text rather
		// than guess, so nothing is silently changed.
		return s, nil
	}
	return sign * n, nil
}

func parseFloat(s string, line int) (any, error) {
	v := strings.ReplaceAll(s, "_", "")
	switch strings.ToLower(strings.TrimLeft(v, "+-")) {
	case ".inf":
		if strings.HasPrefix(v, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case ".nan":
		return math.NaN(), nil
	}
	if strings.Contains(v, ":") {
		sign := 1.0
		switch {
		case strings.HasPrefix(v, "-"):
			sign, v = -1, v[1:]
		case strings.HasPrefix(v, "+"):
			v = v[1:]
		}
		var f float64
		for _, d := range strings.Split(v, ":") {
			x, err := strconv.ParseFloat(d, 64)
			if err != nil {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("invalid float %q", s)}
			}
			f = f*60 + x
		}
		return sign * f, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, &Error{Line: line, Msg: fmt.Sprintf("invalid float %q", s)}
	}
	return f, nil
}
