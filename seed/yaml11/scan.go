package yaml11

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// yaml.v3 builds the whole node tree of a document before anything can
// look at it, at about 190 bytes a node and 450 for a comment after
// content: a 16 MiB flow list ("[1,1,1,...") is 8 million nodes and
// 1.4 GiB. So the stream is scanned first, with yaml.v3's own rules for
// where tokens start and end, and parsed only when the nodes and comments
// it can make are within the limits.
//
// The scan follows yaml.v3's scanner (go.yaml.in/yaml/v3 scannerc.go): the
// same simple keys, indentation stack and flow levels, so that it agrees
// on where quoted and block scalars, plain scalars and comments begin and
// end. It counts, rather than builds: each scalar, alias and collection,
// and each empty node an indicator can imply. Where it is unsure it counts
// more, never less, so its count bounds what yaml.v3 builds (FuzzScanBound
// holds it to that). Where yaml.v3 stops with an error, whatever the scan
// counts after that point only makes the bound looser.

// scanCount is what a scan found: nodes is at least the number of nodes
// yaml.v3 builds for the stream (all its documents), comments at least
// the number of comments it keeps.
type scanCount struct {
	nodes, comments int
}

// scanStream scans data and stops early once a count passes its limit.
func scanStream(data []byte, maxNodes, maxComments int) scanCount {
	if len(data) >= 2 && (data[0] == 0xff && data[1] == 0xfe || data[0] == 0xfe && data[1] == 0xff) {
		// yaml.v3 reads UTF-16 when it starts with a byte-order mark.
		data = utf16ToUTF8(data)
	}
	data = bytes.TrimPrefix(data, bom) // the reader drops a leading BOM
	if bytes.Contains(data, bom) {
		// yaml.v3 skips a character at the start of a line whenever its
		// read buffer happens to begin with a BOM, which depends on how
		// the input falls into 512-byte reads: no scan can follow that.
		return roughCount(data)
	}
	s := &scanner{b: data, indent: -1, allowed: true, keys: []simpleKey{{}},
		maxNodes: maxNodes, maxComments: maxComments}
	s.count.nodes = 1 // the first document
	s.run()
	return s.count
}

var bom = []byte("\ufeff")

// roughCount bounds the nodes without knowing where tokens are: every run
// of characters could be one scalar, and every indicator could open a
// collection, imply an empty node and start a scalar of its own.
func roughCount(data []byte) scanCount {
	c := scanCount{nodes: 2}
	inRun := false
	for _, ch := range data {
		switch ch {
		case '-', '?', ':', ',', '[', ']', '{', '}':
			c.nodes += 3
			inRun = false
		case ' ', '\t', '\r', '\n':
			inRun = false
		default:
			if ch == '#' {
				c.comments++
			}
			if !inRun {
				c.nodes++
			}
			inRun = true
		}
	}
	return c
}

func utf16ToUTF8(data []byte) []byte {
	be := data[0] == 0xfe
	units := make([]uint16, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		if be {
			units = append(units, uint16(data[i])<<8|uint16(data[i+1]))
		} else {
			units = append(units, uint16(data[i+1])<<8|uint16(data[i]))
		}
	}
	out := make([]byte, 0, len(data))
	for _, r := range utf16.Decode(units) {
		out = utf8.AppendRune(out, r)
	}
	return out
}

// simpleKey is a place where a key without "?" may have started; it
// becomes one when a ":" follows on the same line within 1024 characters.
type simpleKey struct {
	possible           bool
	line, col, index   int
	expectedBeforeHand bool // a node was due when the key started
}

// flowLevel is one open "[" or "{" and what its current entry holds.
type flowLevel struct {
	mapping, content, value, pair bool
}

type scanner struct {
	b   []byte
	pos int
	// line, col and index count characters, as yaml.v3's marks do.
	line, col, index int

	flow    int // flow nesting level
	flows   []flowLevel
	indent  int // current block indentation, -1 at the top
	indents []int
	allowed bool // a simple key may start here
	keys    []simpleKey

	// expect is set while an indicator ("-", "?", ":", "---") or a
	// property (anchor, tag) waits for its node: if none comes, yaml.v3
	// makes an empty one.
	expect bool

	count                 scanCount
	maxNodes, maxComments int
}

func (s *scanner) over() bool {
	return s.count.nodes > s.maxNodes || s.count.comments > s.maxComments
}

// at is the byte at p, or 0 past the end (yaml.v3's end-of-input NUL).
func (s *scanner) at(p int) byte {
	if p >= 0 && p < len(s.b) {
		return s.b[p]
	}
	return 0
}

// breakWidth is the length of the line break at p, or 0: \r\n, \r, \n,
// NEL, LS and PS.
func (s *scanner) breakWidth(p int) int {
	switch c := s.at(p); c {
	case '\r':
		if s.at(p+1) == '\n' {
			return 2
		}
		return 1
	case '\n':
		return 1
	case 0xc2:
		if s.at(p+1) == 0x85 {
			return 2
		}
	case 0xe2:
		if s.at(p+1) == 0x80 && (s.at(p+2) == 0xa8 || s.at(p+2) == 0xa9) {
			return 3
		}
	}
	return 0
}

func (s *scanner) isBreak(p int) bool { return s.breakWidth(p) > 0 }
func (s *scanner) isBlank(p int) bool { c := s.at(p); return c == ' ' || c == '\t' }
func (s *scanner) isZ(p int) bool     { return s.at(p) == 0 }
func (s *scanner) isBreakZ(p int) bool {
	return s.isBreak(p) || s.isZ(p)
}
func (s *scanner) isBlankZ(p int) bool { return s.isBlank(p) || s.isBreakZ(p) }

func isAlpha(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-'
}

// skip moves past one character, by yaml.v3's width of its first byte.
func (s *scanner) skip() {
	w := 1
	switch c := s.at(s.pos); {
	case c&0xe0 == 0xc0:
		w = 2
	case c&0xf0 == 0xe0:
		w = 3
	case c&0xf8 == 0xf0:
		w = 4
	}
	s.pos = min(s.pos+w, len(s.b))
	s.col++
	s.index++
}

// skipLine moves past a line break; \r\n counts as two characters.
func (s *scanner) skipLine() {
	w := s.breakWidth(s.pos)
	if w == 0 {
		return
	}
	if s.at(s.pos) == '\r' && w == 2 {
		s.index += 2
	} else {
		s.index++
	}
	s.pos += w
	s.col = 0
	s.line++
}

func (s *scanner) documentIndicator() bool {
	c := s.at(s.pos)
	return s.col == 0 && (c == '-' || c == '.') && s.at(s.pos+1) == c && s.at(s.pos+2) == c && s.isBlankZ(s.pos+3)
}

// node counts a node that is there: a scalar, an alias, a collection.
func (s *scanner) node() {
	s.expect = false
	s.count.nodes++
	if s.flow > 0 {
		s.flows[len(s.flows)-1].content = true
	}
}

// settle counts the empty node a waiting indicator gets when the next
// token is not a node.
func (s *scanner) settle() {
	if s.expect {
		s.count.nodes++
		s.expect = false
	}
}

// property is an anchor or a tag: a node must follow, else an empty one.
func (s *scanner) property() {
	s.expect = true
	if s.flow > 0 {
		s.flows[len(s.flows)-1].content = true
	}
}

func (s *scanner) roll(col int) bool {
	if s.flow > 0 || s.indent >= col {
		return false
	}
	s.indents = append(s.indents, s.indent)
	s.indent = col
	return true
}

func (s *scanner) unroll(col int) {
	if s.flow > 0 {
		return
	}
	for s.indent > col {
		s.indent = s.indents[len(s.indents)-1]
		s.indents = s.indents[:len(s.indents)-1]
	}
}

func (s *scanner) saveKey() {
	if s.allowed {
		s.keys[len(s.keys)-1] = simpleKey{possible: true, line: s.line, col: s.col, index: s.index, expectedBeforeHand: s.expect}
	}
}

func (s *scanner) removeKey() { s.keys[len(s.keys)-1].possible = false }

func (s *scanner) run() {
	for !s.over() {
		s.toNextToken()
		s.unroll(s.col)
		c := s.at(s.pos)
		switch {
		case s.isZ(s.pos):
			s.settle()
			return
		case s.col == 0 && c == '%':
			s.unroll(-1)
			s.removeKey()
			s.allowed = false
			s.count.comments++ // room for a comment after the directive
			s.skipToBreak()
		case s.documentIndicator():
			s.unroll(-1)
			s.removeKey()
			s.allowed = false
			s.settle()
			s.count.nodes++ // a document, explicit or the next implicit one
			s.expect = c == '-'
			s.skip()
			s.skip()
			s.skip()
		case c == '[' || c == '{':
			s.saveKey()
			s.node()
			s.flow++
			s.flows = append(s.flows, flowLevel{mapping: c == '{'})
			s.keys = append(s.keys, simpleKey{})
			s.allowed = true
			s.skip()
		case c == ']' || c == '}':
			s.removeKey()
			if s.flow > 0 {
				s.endFlowEntry()
				s.flow--
				s.flows = s.flows[:len(s.flows)-1]
				s.keys = s.keys[:len(s.keys)-1]
			}
			s.allowed = false
			s.skip()
		case c == ',':
			s.removeKey()
			s.allowed = true
			if s.flow > 0 {
				s.endFlowEntry()
			}
			s.skip()
		case c == '-' && s.isBlankZ(s.pos+1):
			if s.flow == 0 && s.roll(s.col) {
				s.node() // the sequence
			}
			s.removeKey()
			s.allowed = true
			s.indicator()
			s.skip()
		case c == '?' && (s.flow > 0 || s.isBlankZ(s.pos+1)):
			s.key()
		case c == ':' && (s.flow > 0 || s.isBlankZ(s.pos+1)):
			s.value()
		case c == '*':
			s.saveKey()
			s.allowed = false
			s.node()
			s.anchor()
		case c == '&':
			s.saveKey()
			s.allowed = false
			s.property()
			s.anchor()
		case c == '!':
			s.saveKey()
			s.allowed = false
			s.property()
			s.tag()
		case (c == '|' || c == '>') && s.flow == 0:
			s.removeKey()
			s.allowed = true
			s.node()
			s.blockScalar()
		case c == '\'' || c == '"':
			s.saveKey()
			s.allowed = false
			s.node()
			s.quotedScalar(c)
		case s.plainStart(c):
			s.saveKey()
			s.allowed = false
			s.node()
			s.plainScalar()
		default:
			// yaml.v3 stops here ("found character that cannot start
			// any token"); going on can only count more.
			s.skip()
		}
	}
}

// toNextToken is yaml_parser_scan_to_next_token: spaces (tabs where
// allowed), comments and line breaks.
func (s *scanner) toNextToken() {
	for {
		for s.at(s.pos) == ' ' || (s.flow > 0 || !s.allowed) && s.at(s.pos) == '\t' {
			s.skip()
		}
		if s.at(s.pos) == '#' {
			s.count.comments++
			s.skipToBreak()
		}
		if !s.isBreak(s.pos) {
			return
		}
		s.skipLine()
		if s.flow == 0 {
			s.allowed = true
		}
	}
}

func (s *scanner) skipToBreak() {
	for !s.isBreakZ(s.pos) {
		s.skip()
	}
}

// indicator is a "-", "?" or ":": a node is due after it.
func (s *scanner) indicator() {
	s.settle()
	s.expect = true
}

// endFlowEntry closes the entry of the innermost flow collection at a ","
// or its closing bracket.
func (s *scanner) endFlowEntry() {
	s.settle()
	f := &s.flows[len(s.flows)-1]
	if f.mapping && f.content && !f.value {
		s.count.nodes++ // a key without a value gets an empty one
	}
	*f = flowLevel{mapping: f.mapping}
}

func (s *scanner) key() {
	if s.flow == 0 && s.roll(s.col) {
		s.node() // the mapping
	}
	s.removeKey()
	s.allowed = s.flow == 0
	s.indicator()
	// An explicit key may lack its value, and in a flow sequence it makes
	// a mapping of one pair: room for both.
	s.count.nodes += 2
	if s.flow > 0 {
		s.flows[len(s.flows)-1].content = true
	}
	s.skip()
}

func (s *scanner) value() {
	k := &s.keys[len(s.keys)-1]
	if k.possible && k.line == s.line && k.index+1024 >= s.index {
		rolled := s.flow == 0 && s.roll(k.col)
		if rolled {
			s.count.nodes++ // the mapping, which starts where the key did
		} else if k.expectedBeforeHand {
			// What the key's first token seemed to give a waiting
			// indicator was a key: the indicator got an empty node.
			s.count.nodes++
		}
		k.possible = false
		s.allowed = false
	} else {
		// A complex value: its key came after "?", or is empty.
		if s.flow == 0 && s.roll(s.col) {
			s.node()
		}
		s.allowed = s.flow == 0
		s.count.nodes++
	}
	s.indicator()
	if s.flow > 0 {
		f := &s.flows[len(s.flows)-1]
		if !f.content {
			s.count.nodes++ // an empty key
		}
		if !f.mapping && !f.pair {
			s.count.nodes++ // "[a: b]" is a list of one-pair mappings
			f.pair = true
		}
		f.value = true
	}
	s.skip()
}

func (s *scanner) anchor() {
	s.skip()
	for isAlpha(s.at(s.pos)) {
		s.skip()
	}
}

// tag is yaml_parser_scan_tag: "!<uri>", or a handle and a suffix of URI
// characters, which include ",", "[" and "]".
func (s *scanner) tag() {
	if s.at(s.pos+1) == '<' {
		s.skip()
		s.skip()
		for s.uriChar(s.at(s.pos)) {
			s.skip()
		}
		if s.at(s.pos) == '>' {
			s.skip()
		}
		return
	}
	s.skip()
	for c := s.at(s.pos); isAlpha(c) || c == '!' || s.uriChar(c); c = s.at(s.pos) {
		s.skip()
	}
}

func (s *scanner) uriChar(c byte) bool {
	return isAlpha(c) || c != 0 && bytes.IndexByte([]byte(";/?:@&=+$,.!~*'()[]%"), c) >= 0
}

// plainStart is yaml.v3's test for the first character of a plain scalar.
func (s *scanner) plainStart(c byte) bool {
	next := s.pos + 1
	switch c {
	case '-':
		return !s.isBlank(next)
	case '?', ':':
		return s.flow == 0 && !s.isBlankZ(next)
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return !s.isBlankZ(s.pos)
}

// plainScalar is yaml_parser_scan_plain_scalar: it may go on over line
// breaks while the next line is indented past the enclosing block.
func (s *scanner) plainScalar() {
	indent := s.indent + 1
	leadingBlanks := false
	for {
		if s.documentIndicator() || s.at(s.pos) == '#' {
			break
		}
		for !s.isBlankZ(s.pos) {
			c := s.at(s.pos)
			if c == ':' && s.isBlankZ(s.pos+1) {
				break
			}
			if s.flow > 0 && (c == ',' || c == '?' || c == '[' || c == ']' || c == '{' || c == '}') {
				break
			}
			leadingBlanks = false
			s.skip()
		}
		if !s.isBlank(s.pos) && !s.isBreak(s.pos) {
			break
		}
		for s.isBlank(s.pos) || s.isBreak(s.pos) {
			if s.isBlank(s.pos) {
				s.skip()
			} else {
				s.skipLine()
				leadingBlanks = true
			}
		}
		if s.flow == 0 && s.col < indent {
			break
		}
	}
	if leadingBlanks {
		s.allowed = true
	}
}

// quotedScalar skips a single- or double-quoted scalar, lines and all.
func (s *scanner) quotedScalar(quote byte) {
	s.skip()
	for {
		if s.documentIndicator() || s.isZ(s.pos) {
			return // yaml.v3 stops with an error
		}
		c := s.at(s.pos)
		switch {
		case quote == '\'' && c == '\'' && s.at(s.pos+1) == '\'':
			s.skip()
			s.skip()
		case c == quote:
			s.skip()
			return
		case quote == '"' && c == '\\':
			s.skip()
			if s.isBreak(s.pos) {
				s.skipLine()
			} else if !s.isZ(s.pos) {
				s.skip()
			}
		case s.isBreak(s.pos):
			s.skipLine()
		default:
			s.skip()
		}
	}
}

// blockScalar is yaml_parser_scan_block_scalar: "|" or ">", its header,
// then every line indented at least as far as the first one.
func (s *scanner) blockScalar() {
	s.skip()
	increment := 0
	digit := func() {
		if c := s.at(s.pos); c >= '1' && c <= '9' {
			increment = int(c - '0')
			s.skip()
		}
	}
	if c := s.at(s.pos); c == '+' || c == '-' {
		s.skip()
		digit()
	} else if c >= '0' && c <= '9' {
		if c == '0' {
			return // yaml.v3 stops with an error
		}
		digit()
		if c := s.at(s.pos); c == '+' || c == '-' {
			s.skip()
		}
	}
	for s.isBlank(s.pos) {
		s.skip()
	}
	if s.at(s.pos) == '#' {
		s.count.comments++
		for !s.isBreakZ(s.pos) {
			s.skip()
		}
	}
	if !s.isBreakZ(s.pos) {
		return // yaml.v3 stops with an error
	}
	s.skipLine()
	indent := 0
	if increment > 0 {
		if s.indent >= 0 {
			indent = s.indent + increment
		} else {
			indent = increment
		}
	}
	if !s.blockBreaks(&indent) {
		return
	}
	for s.col == indent && !s.isZ(s.pos) {
		for !s.isBreakZ(s.pos) {
			s.skip()
		}
		s.skipLine()
		if !s.blockBreaks(&indent) {
			return
		}
	}
}

// blockBreaks is yaml_parser_scan_block_scalar_breaks: indentation and
// empty lines, settling the indentation at the first line with content.
// It reports false where yaml.v3 stops with an error.
func (s *scanner) blockBreaks(indent *int) bool {
	maxIndent := 0
	for {
		for (*indent == 0 || s.col < *indent) && s.at(s.pos) == ' ' {
			s.skip()
		}
		maxIndent = max(maxIndent, s.col)
		if (*indent == 0 || s.col < *indent) && s.at(s.pos) == '\t' {
			return false
		}
		if !s.isBreak(s.pos) {
			break
		}
		s.skipLine()
	}
	if *indent == 0 {
		*indent = max(maxIndent, s.indent+1, 1)
	}
	return true
}
