package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokData
	tokVarBegin
	tokVarEnd
	tokBlockBegin
	tokBlockEnd
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

type token struct {
	kind tokenKind
	text string // data, name, operator, or decoded string literal
	num  value  // int64 or float64 for number tokens
	line int
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of template"
	case tokData:
		return "template data"
	case tokVarBegin:
		return "'{{'"
	case tokVarEnd:
		return "'}}'"
	case tokBlockBegin:
		return "'{%'"
	case tokBlockEnd:
		return "'%}'"
	case tokString:
		return "string"
	case tokInt, tokFloat:
		return "number"
	}
	return "'" + t.text + "'"
}

// SyntaxError is a template that Jinja2 would refuse to compile, or a
// construct this renderer does not support.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("jinja line %d: %s", e.Line, e.Msg) }

// lexer splits a template into tokens the way Jinja2's lexer does with
// cloud-init's settings: trim_blocks on (one newline after a block or
// comment tag is dropped), lstrip_blocks off, "-" at a tag's edge strips
// the whitespace on that side, "+" keeps it.
type lexer struct {
	src    string
	pos    int
	line   int
	tokens []token
}

// normalizeNewlines turns \r\n and \r into \n and drops one trailing
// newline, as Jinja2 does with keep_trailing_newline off.
func normalizeNewlines(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

func tokenize(src string) ([]token, error) {
	lx := &lexer{src: normalizeNewlines(src), line: 1}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.tokens = append(lx.tokens, token{kind: tokEOF, line: lx.line})
	return lx.tokens, nil
}

func (lx *lexer) errorf(format string, args ...any) error {
	return &SyntaxError{Line: lx.line, Msg: fmt.Sprintf(format, args...)}
}

// advance moves to pos, counting the newlines passed.
func (lx *lexer) advance(to int) {
	lx.line += strings.Count(lx.src[lx.pos:to], "\n")
	lx.pos = to
}

func (lx *lexer) emitData(text string) {
	if text != "" {
		lx.tokens = append(lx.tokens, token{kind: tokData, text: text, line: lx.line})
	}
}

func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			break
		}
		i += size
	}
	return i
}

func (lx *lexer) run() error {
	for lx.pos < len(lx.src) {
		start := strings.IndexByte(lx.src[lx.pos:], '{')
		for start >= 0 {
			at := lx.pos + start
			if at+1 < len(lx.src) && strings.IndexByte("{%#", lx.src[at+1]) >= 0 {
				break
			}
			next := strings.IndexByte(lx.src[at+1:], '{')
			if next < 0 {
				start = -1
				break
			}
			start += 1 + next
		}
		if start < 0 {
			text := lx.src[lx.pos:]
			lx.advance(len(lx.src))
			lx.emitData(text)
			return nil
		}
		tagAt := lx.pos + start
		kind := lx.src[tagAt+1]
		sign := byte(0)
		after := tagAt + 2
		if after < len(lx.src) && (lx.src[after] == '-' || lx.src[after] == '+') {
			sign = lx.src[after]
			after++
		}
		text := lx.src[lx.pos:tagAt]
		if sign == '-' {
			text = strings.TrimRightFunc(text, isPySpace)
		}
		if kind == '%' {
			if end, ok := matchRawBegin(lx.src, after); ok {
				lx.emitData(text)
				lx.advance(end)
				if err := lx.raw(); err != nil {
					return err
				}
				continue
			}
		}
		lx.emitData(text)
		lx.advance(after)
		var err error
		switch kind {
		case '#':
			err = lx.comment()
		case '%':
			lx.tokens = append(lx.tokens, token{kind: tokBlockBegin, line: lx.line})
			err = lx.expression(tokBlockEnd)
		case '{':
			lx.tokens = append(lx.tokens, token{kind: tokVarBegin, line: lx.line})
			err = lx.expression(tokVarEnd)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at i; it returns the end.
func matchRawBegin(s string, i int) (int, bool) {
	i = skipSpace(s, i)
	if !strings.HasPrefix(s[i:], "raw") {
		return 0, false
	}
	i = skipSpace(s, i+3)
	switch {
	case strings.HasPrefix(s[i:], "-%}"):
		return skipSpace(s, i+3), true
	case strings.HasPrefix(s[i:], "%}"):
		return i + 2, true
	}
	return 0, false
}

// blockEnd matches the end of a block or comment tag at i (closer is "%}"
// or "#}") with trim_blocks: "+%}" as is, "-%}" and the whitespace after,
// "%}" and one newline after.
func blockEnd(s string, i int, closer string) (int, bool) {
	switch {
	case strings.HasPrefix(s[i:], "+"+closer):
		return i + 3, true
	case strings.HasPrefix(s[i:], "-"+closer):
		return skipSpace(s, i+3), true
	case strings.HasPrefix(s[i:], closer):
		end := i + 2
		if end < len(s) && s[end] == '\n' {
			end++
		}
		return end, true
	}
	return 0, false
}

func (lx *lexer) comment() error {
	for i := lx.pos; i < len(lx.src); i++ {
		if end, ok := blockEnd(lx.src, i, "#}"); ok {
			lx.advance(end)
			return nil
		}
	}
	return lx.errorf("missing end of comment tag")
}

// raw copies everything up to {% endraw %} as data.
func (lx *lexer) raw() error {
	for i := lx.pos; i < len(lx.src); i++ {
		if !strings.HasPrefix(lx.src[i:], "{%") {
			continue
		}
		j := i + 2
		sign := byte(0)
		if j < len(lx.src) && (lx.src[j] == '-' || lx.src[j] == '+') {
			sign = lx.src[j]
			j++
		}
		j = skipSpace(lx.src, j)
		if !strings.HasPrefix(lx.src[j:], "endraw") {
			continue
		}
		j = skipSpace(lx.src, j+len("endraw"))
		end, ok := blockEnd(lx.src, j, "%}")
		if !ok {
			continue
		}
		text := lx.src[lx.pos:i]
		if sign == '-' {
			text = strings.TrimRightFunc(text, isPySpace)
		}
		lx.emitData(text)
		lx.advance(end)
		return nil
	}
	return lx.errorf("missing end of raw directive")
}

// operators, longest first so that "//" wins over "/".
var operators = []string{
	"//", "**", "==", "!=", ">=", "<=",
	"+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}",
	"=", ".", ":", "|", ",", ";", "<", ">",
}

// expression tokenizes the inside of a {{ }} or {% %} tag up to its end.
func (lx *lexer) expression(endKind tokenKind) error {
	var brackets []byte
	for {
		if lx.pos >= len(lx.src) {
			if endKind == tokVarEnd {
				return lx.errorf("unexpected end of template, expected end of print statement")
			}
			return lx.errorf("unexpected end of template, expected end of statement block")
		}
		// Jinja2 ends a tag only where its brackets are balanced.
		if len(brackets) == 0 {
			var end int
			var ok bool
			if endKind == tokBlockEnd {
				end, ok = blockEnd(lx.src, lx.pos, "%}")
			} else if strings.HasPrefix(lx.src[lx.pos:], "-}}") {
				end, ok = skipSpace(lx.src, lx.pos+3), true
			} else if strings.HasPrefix(lx.src[lx.pos:], "}}") {
				end, ok = lx.pos+2, true
			}
			if ok {
				lx.tokens = append(lx.tokens, token{kind: endKind, line: lx.line})
				lx.advance(end)
				return nil
			}
		}
		r, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
		if isPySpace(r) {
			lx.advance(skipSpace(lx.src, lx.pos))
			continue
		}
		tok, n, err := lx.scanToken()
		if err != nil {
			return err
		}
		if n == 0 {
			return lx.errorf("unexpected char %q", lx.src[lx.pos:lx.pos+size])
		}
		if tok.kind == tokOp {
			switch tok.text {
			case "(", "[", "{":
				if len(brackets) >= maxNesting {
					return lx.errorf("too many nested brackets")
				}
				brackets = append(brackets, map[string]byte{"(": ')', "[": ']', "{": '}'}[tok.text])
			case ")", "]", "}":
				if len(brackets) == 0 {
					return lx.errorf("unexpected '%s'", tok.text)
				}
				want := brackets[len(brackets)-1]
				if tok.text[0] != want {
					return lx.errorf("unexpected '%s', expected '%c'", tok.text, want)
				}
				brackets = brackets[:len(brackets)-1]
			}
		}
		tok.line = lx.line
		lx.tokens = append(lx.tokens, tok)
		lx.advance(lx.pos + n)
	}
}

// scanToken reads one token at lx.pos and returns it with its length.
func (lx *lexer) scanToken() (token, int, error) {
	s := lx.src[lx.pos:]
	if n := scanFloat(s); n > 0 && (lx.pos == 0 || lx.src[lx.pos-1] != '.') {
		f, err := strconv.ParseFloat(strings.ReplaceAll(s[:n], "_", ""), 64)
		if err != nil && !isRangeErr(err) {
			return token{}, 0, lx.errorf("invalid float literal %q", s[:n])
		}
		return token{kind: tokFloat, num: f}, n, nil
	}
	if n := scanInt(s); n > 0 {
		v, err := strconv.ParseInt(strings.ReplaceAll(s[:n], "_", ""), 0, 64)
		if err != nil {
			return token{}, 0, lx.errorf("integer literal %q is out of range", s[:n])
		}
		return token{kind: tokInt, num: v}, n, nil
	}
	if n := scanName(s); n > 0 {
		return token{kind: tokName, text: s[:n]}, n, nil
	}
	if s[0] == '"' || s[0] == '\'' {
		n := scanString(s)
		if n == 0 {
			return token{}, 0, lx.errorf("unterminated string literal")
		}
		text, err := unescapeString(s[1 : n-1])
		if err != nil {
			return token{}, 0, lx.errorf("%v", err)
		}
		return token{kind: tokString, text: text}, n, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return token{kind: tokOp, text: op}, len(op), nil
		}
	}
	return token{}, 0, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanDigits matches (\d+_)*\d+ and returns its length.
func scanDigits(s string) int {
	i := 0
	for {
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			if start == 0 {
				return 0
			}
			return start - 1 // back off the trailing "_"
		}
		if i < len(s) && s[i] == '_' && i+1 < len(s) && isDigit(s[i+1]) {
			i++
			continue
		}
		return i
	}
}

// scanFloat matches Jinja2's float literal: digits with a fraction, an
// exponent, or both.
func scanFloat(s string) int {
	i := scanDigits(s)
	if i == 0 {
		return 0
	}
	frac := 0
	if i < len(s) && s[i] == '.' {
		frac = scanDigits(s[i+1:])
		if frac > 0 {
			frac++
		}
	}
	j := i + frac
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if n := scanDigits(s[k:]); n > 0 {
			return k + n
		}
	}
	if frac > 0 {
		return j
	}
	return 0
}

// scanInt matches Jinja2's integer literal (0b, 0o, 0x prefixes, "_"
// separators, no leading zeros).
func scanInt(s string) int {
	if len(s) == 0 || !isDigit(s[0]) {
		return 0
	}
	if s[0] == '0' && len(s) > 1 {
		var ok func(byte) bool
		switch s[1] | 0x20 {
		case 'b':
			ok = func(c byte) bool { return c == '0' || c == '1' }
		case 'o':
			ok = func(c byte) bool { return c >= '0' && c <= '7' }
		case 'x':
			ok = func(c byte) bool {
				return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
			}
		}
		if ok != nil {
			i := 2
			for i < len(s) {
				if ok(s[i]) {
					i++
				} else if s[i] == '_' && i+1 < len(s) && ok(s[i+1]) {
					i += 2
				} else {
					break
				}
			}
			if i > 2 {
				return i
			}
			return 1
		}
	}
	if s[0] == '0' {
		i := 1
		for i < len(s) {
			if s[i] == '0' {
				i++
			} else if s[i] == '_' && i+1 < len(s) && s[i+1] == '0' {
				i += 2
			} else {
				break
			}
		}
		return i
	}
	return scanDigits(s)
}

func scanName(s string) int {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '_' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r))) {
			i += size
			continue
		}
		break
	}
	return i
}

// scanString returns the length of the quoted literal at s[0], or 0.
func scanString(s string) int {
	quote := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case quote:
			return i + 1
		}
	}
	return 0
}

// unescapeString decodes Python "unicode-escape" sequences.
func unescapeString(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c == '\\' {
				return "", fmt.Errorf("\\ at end of string")
			}
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+1+width > len(s) {
				return "", fmt.Errorf("truncated \\%c escape", e)
			}
			n, err := strconv.ParseUint(s[i+1:i+1+width], 16, 32)
			if err != nil || n > unicode.MaxRune {
				return "", fmt.Errorf("malformed \\%c escape", e)
			}
			b.WriteRune(rune(n))
			i += width
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				n = n*8 + int(s[j]-'0')
				j++
			}
			b.WriteRune(rune(n))
			i = j - 1
		default:
			// Python keeps unknown escapes, backslash included.
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}
