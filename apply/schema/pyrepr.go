package schema

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/seed/pyfmt"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// reprer spells values as Python's repr() does, because cloud-init's
// messages quote the offending value that way ("'maybe' is not of type
// 'boolean'"). Mappings list their keys in the document's order, as a
// Python dict built by PyYAML does.
type reprer struct {
	data      []byte
	positions map[string]yaml11.Position // nil until place asks
}

// place returns the document's key positions, read on first use: a valid
// file needs none, and reading them parses the document again.
func (r *reprer) place() map[string]yaml11.Position {
	if r.positions == nil {
		p, err := yaml11.Positions(r.data)
		if err != nil || p == nil {
			p = map[string]yaml11.Position{}
		}
		r.positions = p
	}
	return r.positions
}

func (r *reprer) repr(v any, path string) string {
	return pyfmt.Reprer{Keys: r.orderedKeys, Other: reprOther}.Repr(v, path)
}

// reprOther turns the schema's own types into ones pyfmt spells.
func reprOther(v any) (any, bool) {
	switch t := v.(type) {
	case timestamp:
		return pyfmt.Raw(t.repr()), true
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			f, _ := t.Float64()
			return f, true
		}
		return pyfmt.Raw(t), true
	case *object:
		return pyfmt.Dict{Keys: t.keys, Values: t.values}, true
	}
	return nil, false
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
		p, ok := r.place()[pyfmt.JoinPath(path, k)]
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
