package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// isTrue is cloud-init's util.is_true.
func isTrue(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	switch strings.ToLower(strings.TrimSpace(pyfmt.Str(v))) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

// toInt is Python's int() on a decoded scalar.
func toInt(v any) (int, error) {
	switch x := v.(type) {
	case int64:
		if x > math.MaxInt32 || x < math.MinInt32 {
			return 0, fmt.Errorf("%d is out of range", x)
		}
		return int(x), nil
	case int:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return 0, fmt.Errorf("%s is not an integer", pyfmt.Str(x))
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer", quoteValue(x))
		}
		return n, nil
	}
	return 0, fmt.Errorf("a %s is not an integer", yaml11.Kind(v))
}

// asMap returns v as a mapping; nil is an empty mapping.
func asMap(v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return x, nil
	}
	return nil, fmt.Errorf("expected a mapping, got a %s", yaml11.Kind(v))
}

// asList returns v as a list; nil is an empty list.
func asList(v any) ([]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return x, nil
	}
	return nil, fmt.Errorf("expected a list, got a %s", yaml11.Kind(v))
}

// scalarList turns a scalar or a list of scalars into strings: one
// scalar is a one-item list, as cloud-init treats "address: 8.8.8.8".
func scalarList(v any) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]string, 0, len(x))
		for i, item := range x {
			switch item.(type) {
			case []any, map[string]any:
				return nil, fmt.Errorf("item %d: expected a scalar, got a %s", i, yaml11.Kind(item))
			}
			out = append(out, pyfmt.Str(item))
		}
		return out, nil
	case []string:
		return x, nil
	case map[string]any:
		return nil, fmt.Errorf("expected a list, got a mapping")
	}
	return []string{pyfmt.Str(v)}, nil
}

// splitList is scalarList, except that a string is split on whitespace,
// as cloud-init does for subnet dns_nameservers and dns_search.
func splitList(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return strings.Fields(s), nil
	}
	return scalarList(v)
}

// paramValue keeps a link attribute in the shape the input gave it.
func paramValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, item := range x {
			out = append(out, pyfmt.Str(item))
		}
		return out
	case int:
		return int64(x)
	}
	return v
}

// orderedKeys lists m's keys in the order the document wrote them
// (order may be nil or incomplete), then any others sorted.
func orderedKeys(m map[string]any, order []string) []string {
	out := make([]string, 0, len(m))
	seen := make(map[string]bool, len(m))
	for _, k := range order {
		if _, ok := m[k]; ok && !seen[k] {
			out = append(out, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// decodePythonJSON decodes one JSON value as Python's json module does:
// an integer literal becomes an int64, any other number a float64.
func decodePythonJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return pythonNumbers(doc), nil
}

// pythonNumbers gives decoded JSON numbers the types Python's json module
// gives them: an integer literal is an int (int64), any other a float.
func pythonNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = pythonNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = pythonNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64() // out of range: ±Inf, as Python reads it
		return f
	}
	return v
}
