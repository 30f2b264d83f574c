package yaml11

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Position is where a node starts in the document, 1-based.
type Position struct {
	Line   int
	Column int
}

// Positions maps each key path of a document to where its node starts:
// a mapping key's path is its parent's path, a dot and the key as written
// ("users.0.name"), a sequence item's is its parent's path, a dot and its
// index. The paths are the ones cloud-init's schema errors name, so that
// an error can be put back on its line. A mapping entry is placed at its
// key, a sequence item at the item. Keys reached through aliases are
// placed where the anchored node is written; merge keys (<<) add the
// merged keys under the merging mapping.
func Positions(data []byte) (map[string]Position, error) {
	lim := DefaultLimits
	if c := scanStream(data, lim.Nodes, lim.Comments); c.nodes > lim.Nodes {
		return nil, limitError(0, "YAML nodes", lim.Nodes)
	} else if c.comments > lim.Comments {
		return nil, limitError(0, "YAML comments", lim.Comments)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]Position{}, nil
		}
		return nil, parserError(err, data)
	}
	w := &positionWalker{out: map[string]Position{}}
	if len(doc.Content) > 0 {
		w.walk(doc.Content[0], "", 0)
	}
	return w.out, nil
}

// Lines is Positions reduced to line numbers.
func Lines(data []byte) (map[string]int, error) {
	pos, err := Positions(data)
	if err != nil {
		return nil, err
	}
	lines := make(map[string]int, len(pos))
	for k, p := range pos {
		lines[k] = p.Line
	}
	return lines, nil
}

type positionWalker struct {
	out   map[string]Position
	nodes int
}

// maxPositions bounds the walk: aliases could make a small document
// stand for a huge tree.
const maxPositions = 1 << 20

func (w *positionWalker) record(path string, n *yaml.Node) {
	if _, seen := w.out[path]; !seen {
		w.out[path] = Position{Line: n.Line, Column: n.Column}
	}
}

func (w *positionWalker) walk(n *yaml.Node, prefix string, depth int) {
	w.nodes++
	if depth > DefaultLimits.Depth || w.nodes > maxPositions {
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				w.walkMerge(v, prefix, depth+1)
				continue
			}
			path := join(k.Value)
			w.record(path, k)
			w.walk(v, path, depth+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			path := join(strconv.Itoa(i))
			w.record(path, item)
			w.walk(item, path, depth+1)
		}
	}
}

// walkMerge adds the keys a merge key brings in, under the merging map.
func (w *positionWalker) walkMerge(v *yaml.Node, prefix string, depth int) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		w.walk(v, prefix, depth)
	case yaml.SequenceNode:
		for _, m := range v.Content {
			w.walkMerge(m, prefix, depth+1)
		}
	}
}
