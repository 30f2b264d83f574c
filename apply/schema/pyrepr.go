package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// reprer spells values as Python's repr() does, because cloud-init's
// messages quote the offending value that way ("'maybe' is not of type
// 'boolean'"). Mappings list their keys in the document's order, as a
// Python dict built by PyYAML does.
type reprer struct {
	positions map[string]yaml11.Position
}

func (r *reprer) repr(v any, path string) string {
	var b strings.Builder
	r.write(&b, v, path, 0)
	return b.String()
}

// maxReprDepth keeps a hostile, deeply nested value from making a huge
// message.
const maxReprDepth = 50

func (r *reprer) write(b *strings.Builder, v any, path string, depth int) {
	if depth > maxReprDepth {
		b.WriteString("...")
		return
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		pyfmt.WriteQuoted(b, t)
	case timestamp:
		b.WriteString(t.repr())
	case int:
		b.WriteString(strconv.Itoa(t))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(t, 10))
	case float64:
		b.WriteString(pyfmt.Float(t))
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			f, _ := t.Float64()
			b.WriteString(pyfmt.Float(f))
		} else {
			b.WriteString(string(t))
		}
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			r.write(b, e, joinPath(path, strconv.Itoa(i)), depth+1)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range r.orderedKeys(t, path) {
			if i > 0 {
				b.WriteString(", ")
			}
			pyfmt.WriteQuoted(b, k)
			b.WriteString(": ")
			r.write(b, t[k], joinPath(path, k), depth+1)
		}
		b.WriteByte('}')
	case *object:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyfmt.WriteQuoted(b, k)
			b.WriteString(": ")
			r.write(b, t.values[k], "", depth+1)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%v", t)
	}
}

// orderedKeys lists a mapping's keys in the order they are written in the
// document; keys the document does not place (merged in, or a value made
// in Go) come after, sorted.
func (r *reprer) orderedKeys(m map[string]any, path string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	pos := func(k string) (yaml11.Position, bool) {
		p, ok := r.positions[joinPath(path, k)]
		return p, ok
	}
	sort.Slice(keys, func(i, j int) bool {
		pi, oki := pos(keys[i])
		pj, okj := pos(keys[j])
		switch {
		case oki && okj:
			if pi.Line != pj.Line {
				return pi.Line < pj.Line
			}
			if pi.Column != pj.Column {
				return pi.Column < pj.Column
			}
			return keys[i] < keys[j]
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	return keys
}

func joinPath(prefix, elem string) string {
	if prefix == "" {
		return elem
	}
	return prefix + "." + elem
}
