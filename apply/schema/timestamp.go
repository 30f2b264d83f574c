package schema

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/seedinit/seedinit/seed/pyfmt"
	"go.yaml.in/yaml/v3"
)

// timestamp stands for a plain scalar that PyYAML turns into a
// datetime.date or datetime.datetime: such a value is no JSON type, so
// `expiredate: 2030-01-01` fails "type: string" in cloud-init's schema
// check, although seedinit's loader keeps the text for the modules.
type timestamp struct {
	text string
}

var timestampRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$`)
})

// timestampHint is in the text of every timestamp.
var timestampHint = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]{4}-[0-9]`) })

var dateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})$`) })

// repr is Python's repr of the date; a datetime is shown by its text.
func (t timestamp) repr() string {
	if m := dateRE().FindStringSubmatch(t.text); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("datetime.date(%d, %d, %d)", y, mo, d)
	}
	return "datetime.datetime(" + pyfmt.Quote(t.text) + ")"
}

// markTimestamps replaces, in the loaded config, each plain scalar that
// YAML 1.1 resolves as a timestamp by a timestamp value.
func markTimestamps(data []byte, cfg map[string]any) {
	// Parsing the document again costs as much as loading it: skip it
	// when no text in it can be a timestamp.
	if !timestampHint().Match(data) {
		return
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return
	}
	var walk func(n *yaml.Node, container any, key any, depth int)
	walk = func(n *yaml.Node, container any, key any, depth int) {
		if depth > 100 {
			return
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var value any
		switch c := container.(type) {
		case map[string]any:
			value = c[key.(string)]
		case []any:
			value = c[key.(int)]
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				return
			}
			if s, ok := value.(string); ok && s == n.Value && timestampRE().MatchString(s) {
				switch c := container.(type) {
				case map[string]any:
					c[key.(string)] = timestamp{text: s}
				case []any:
					c[key.(int)] = timestamp{text: s}
				}
			}
		case yaml.MappingNode:
			m, ok := value.(map[string]any)
			if !ok {
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
					continue
				}
				if _, has := m[k.Value]; has {
					walk(n.Content[i+1], m, k.Value, depth+1)
				}
			}
		case yaml.SequenceNode:
			l, ok := value.([]any)
			if !ok || len(l) != len(n.Content) {
				return
			}
			for i, item := range n.Content {
				walk(item, l, i, depth+1)
			}
		}
	}
	root := map[string]any{"": cfg}
	walk(doc.Content[0], root, "", 0)
}
