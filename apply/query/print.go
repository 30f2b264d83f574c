package query

import (
	"bufio"
	"encoding/json"
	"io"
	"sort"
	"unicode/utf8"
)

// WriteJSON writes v as json.MarshalIndent(v, "", " ") spells it, and a
// newline, as it goes: MarshalIndent builds the whole text in memory, two
// and three times over, and with deep nesting the text is many times the
// size of what it prints. v is what json.Unmarshal makes (maps, lists,
// strings, float64, bool, nil).
func WriteJSON(w io.Writer, v any) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	p := printer{w: bw}
	p.value(v, 0)
	bw.WriteByte('\n')
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

type printer struct {
	w   *bufio.Writer
	err error
}

func (p *printer) indent(depth int) {
	p.w.WriteByte('\n')
	for range depth {
		p.w.WriteByte(' ')
	}
}

func (p *printer) value(v any, depth int) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			p.w.WriteString("null")
			return
		}
		if len(x) == 0 {
			p.w.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		p.w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				p.w.WriteByte(',')
			}
			p.indent(depth + 1)
			p.string(k)
			p.w.WriteString(": ")
			p.value(x[k], depth+1)
		}
		p.indent(depth)
		p.w.WriteByte('}')
	case []any:
		if x == nil {
			p.w.WriteString("null")
			return
		}
		if len(x) == 0 {
			p.w.WriteString("[]")
			return
		}
		p.w.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				p.w.WriteByte(',')
			}
			p.indent(depth + 1)
			p.value(item, depth+1)
		}
		p.indent(depth)
		p.w.WriteByte(']')
	case string:
		p.string(x)
	default:
		b, err := json.Marshal(x)
		if err != nil && p.err == nil {
			p.err = err
		}
		p.w.Write(b)
	}
}

// string writes s quoted as json.Marshal quotes it, a block at a time, so
// that a long string is never escaped whole in memory. Blocks end before
// a byte that starts a UTF-8 sequence: escaping works rune by rune, and
// an invalid byte is one rune wherever it is.
func (p *printer) string(s string) {
	const block = 32 << 10
	p.w.WriteByte('"')
	for len(s) > 0 {
		n := min(block, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		b, _ := json.Marshal(s[:n])
		p.w.Write(b[1 : len(b)-1])
		s = s[n:]
	}
	p.w.WriteByte('"')
}
