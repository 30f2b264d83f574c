package seed

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a MIME reader with the semantics of Python's email package
// (compat32 policy, email.feedparser), because cloud-init parses user-data
// with it and users' multipart documents have to split into the same parts,
// with the same payloads, headers and filenames, as they do under
// cloud-init. Where the standard library's mime/multipart is stricter or
// trims differently, this reader follows Python.

// mimeHeader is one header as Python's compat32 policy keeps it: the name as
// written and the value with continuation lines joined verbatim.
type mimeHeader struct {
	name, value string
}

// mimePart is one message or body part. Processing changes headers in
// place (content type, filename, launch index), as cloud-init does on the
// same Python objects, so a part reachable twice (through a message/rfc822
// container and directly) shows the same changes both times.
type mimePart struct {
	headers []mimeHeader
	// defaultType is text/plain, or message/rfc822 in a multipart/digest.
	defaultType string
	// body is the raw payload of a part that is not a container, before
	// its Content-Transfer-Encoding is undone.
	body []byte
	// container is Python's is_multipart(): the payload is children, a
	// multipart's parts or a message/*'s enclosed message.
	container bool
	children  []*mimePart
	// decoded marks parts seedinit made itself (archive entries,
	// decompressed parts): body is final and any transfer encoding header
	// is ignored, as the Python objects hold their decoded text.
	decoded bool
	// origin says where the part came from for messages: "" for the
	// user-data itself, "#include URL" for fetched content.
	origin string
	// attached is the number cloud-init gave the part when it attached it
	// to the processed message (1-based); 0 when never attached.
	attached int
}

func newPart(contentType string, body []byte) *mimePart {
	return &mimePart{
		headers:     []mimeHeader{{"Content-Type", contentType}, {"MIME-Version", "1.0"}},
		defaultType: "text/plain",
		body:        body,
		decoded:     true,
	}
}

// get is Message.get: the first header of that name, any case.
func (p *mimePart) get(name string) (string, bool) {
	for _, h := range p.headers {
		if strings.EqualFold(h.name, name) {
			return h.value, true
		}
	}
	return "", false
}

// getExact is dict(msg)[name] as cloud-init's handlers read headers: the
// name must match in case, the value is the first header of any case.
func (p *mimePart) getExact(name string) (string, bool) {
	for _, h := range p.headers {
		if h.name == name {
			return p.get(name)
		}
	}
	return "", false
}

func (p *mimePart) del(name string) {
	kept := p.headers[:0]
	for _, h := range p.headers {
		if !strings.EqualFold(h.name, name) {
			kept = append(kept, h)
		}
	}
	p.headers = kept
}

func (p *mimePart) add(name, value string) {
	p.headers = append(p.headers, mimeHeader{name, value})
}

func (p *mimePart) replace(name, value string) {
	p.del(name)
	p.add(name, value)
}

// contentType is Message.get_content_type.
func (p *mimePart) contentType() string {
	v, ok := p.get("Content-Type")
	if !ok {
		return p.defaultType
	}
	ct, _, _ := strings.Cut(v, ";")
	ct = strings.ToLower(pyStrip(ct))
	if strings.Count(ct, "/") != 1 {
		return "text/plain"
	}
	return ct
}

func (p *mimePart) mainType() string {
	mt, _, _ := strings.Cut(p.contentType(), "/")
	return mt
}

// param is Message.get_param(name, header=header) followed by
// utils.collapse_rfc2231_value, as get_filename and get_boundary use it.
func (p *mimePart) param(header, name string) (string, bool) {
	v, ok := p.get(header)
	if !ok {
		return "", false
	}
	for _, prm := range decodeParams(parseParams(v)) {
		if strings.EqualFold(prm.name, name) {
			if prm.rfc2231 {
				return prm.value, true
			}
			return pyUnquote(pyUnquote(prm.value)), true
		}
	}
	return "", false
}

// filename is Message.get_filename: the Content-Disposition filename, else
// the Content-Type name, stripped.
func (p *mimePart) filename() string {
	if f, ok := p.param("Content-Disposition", "filename"); ok {
		return pyStrip(f)
	}
	if f, ok := p.param("Content-Type", "name"); ok {
		return pyStrip(f)
	}
	return ""
}

// setFilename is cloud-init's _set_filename.
func (p *mimePart) setFilename(name string) {
	p.replace("Content-Disposition", `attachment; filename="`+pyQuote(name)+`"`)
}

func (p *mimePart) boundary() (string, bool) {
	b, ok := p.param("Content-Type", "boundary")
	if !ok {
		return "", false
	}
	return strings.TrimRight(b, pyWhitespaceASCII), true
}

// payload is cloud-init's util.fully_decoded_payload: the body with its
// Content-Transfer-Encoding undone; nil for containers.
//
// Python decodes the whole message as UTF-8 and, for 8bit text that is not
// ASCII, re-encodes it with raw-unicode-escape, which turns é into a lone
// surrogate and ☃ into the six characters \u2603. seedinit keeps the bytes
// as they were sent instead.
func (p *mimePart) payload() []byte {
	if p.container {
		return nil
	}
	if p.decoded {
		return p.body
	}
	cte, _ := p.get("Content-Transfer-Encoding")
	switch strings.ToLower(cte) {
	case "quoted-printable":
		return decodeQuotedPrintable(p.body)
	case "base64":
		joined := bytes.Join(splitLinesBytes(p.body), nil)
		if b, err := pyB64Decode(joined); err == nil {
			return b
		}
		return joined
	}
	return p.body
}

// walk is Message.walk: the part, then every part inside it, depth first.
func (p *mimePart) walk(visit func(*mimePart)) {
	visit(p)
	if p.container {
		for _, c := range p.children {
			c.walk(visit)
		}
	}
}

// mimeParam is one parameter of a structured header.
type mimeParam struct {
	name, value string
	// rfc2231 marks a value already decoded from RFC 2231 (name*=...),
	// which Python does not unquote again.
	rfc2231 bool
}

// parseParams is email.message._parseparam plus the name/value split of
// _get_params_preserve: semicolons inside quotes do not split.
func parseParams(s string) []mimeParam {
	var out []mimeParam
	s = ";" + s
	for strings.HasPrefix(s, ";") {
		s = s[1:]
		end := strings.IndexByte(s, ';')
		for end > 0 && (strings.Count(s[:end], `"`)-strings.Count(s[:end], `\"`))%2 != 0 {
			next := strings.IndexByte(s[end+1:], ';')
			if next < 0 {
				end = -1
				break
			}
			end += 1 + next
		}
		if end < 0 {
			end = len(s)
		}
		f := s[:end]
		if i := strings.IndexByte(f, '='); i >= 0 {
			f = strings.ToLower(pyStrip(f[:i])) + "=" + pyStrip(f[i+1:])
		}
		f = pyStrip(f)
		if name, val, ok := strings.Cut(f, "="); ok {
			out = append(out, mimeParam{name: pyStrip(name), value: pyStrip(val)})
		} else {
			out = append(out, mimeParam{name: f})
		}
		s = s[end:]
	}
	return out
}

// decodeParams is email.utils.decode_params: plain parameters first, then
// the RFC 2231 ones (name*=charset'lang'text, name*0*=...) joined and
// decoded.
func decodeParams(params []mimeParam) []mimeParam {
	if len(params) == 0 {
		return nil
	}
	out := []mimeParam{params[0]}
	type segment struct {
		num     int
		value   string
		encoded bool
	}
	var order []string
	segments := map[string][]segment{}
	for _, prm := range params[1:] {
		encoded := strings.HasSuffix(prm.name, "*")
		value := pyUnquote(prm.value)
		if name, num, ok := rfc2231Name(prm.name); ok {
			if _, seen := segments[name]; !seen {
				order = append(order, name)
			}
			segments[name] = append(segments[name], segment{num, value, encoded})
			continue
		}
		out = append(out, mimeParam{name: prm.name, value: `"` + pyQuote(value) + `"`})
	}
	for _, name := range order {
		segs := segments[name]
		// Python sorts the (num, value, encoded) tuples.
		for i := 1; i < len(segs); i++ {
			for j := i; j > 0 && (segs[j].num < segs[j-1].num || segs[j].num == segs[j-1].num && segs[j].value < segs[j-1].value); j-- {
				segs[j], segs[j-1] = segs[j-1], segs[j]
			}
		}
		var joined strings.Builder
		extended := false
		for _, s := range segs {
			v := s.value
			if s.encoded {
				v = percentDecodeLatin1(v)
				extended = true
			}
			joined.WriteString(v)
		}
		value := pyQuote(joined.String())
		if !extended {
			out = append(out, mimeParam{name: name, value: `"` + value + `"`})
			continue
		}
		parts := strings.SplitN(value, "'", 3)
		if len(parts) < 3 {
			out = append(out, mimeParam{name: name, value: `"` + value + `"`})
			continue
		}
		out = append(out, mimeParam{name: name, value: decodeCharset(parts[0], pyUnquote(`"`+parts[2]+`"`)), rfc2231: true})
	}
	return out
}

// rfc2231Name splits "name*", "name*0" and "name*0*" into name and
// segment number (-1 for none).
func rfc2231Name(s string) (string, int, bool) {
	star := strings.IndexByte(s, '*')
	if star <= 0 {
		return "", 0, false
	}
	name, rest := s[:star], s[star+1:]
	for _, r := range name {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "", 0, false
		}
	}
	if rest == "" {
		return name, -1, true
	}
	rest = strings.TrimSuffix(rest, "*")
	if rest == "" {
		return "", 0, false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return "", 0, false
	}
	return name, n, true
}

// percentDecodeLatin1 is urllib.parse.unquote(s, encoding="latin-1"): each
// %XX becomes the character U+00XX, kept here as the octet itself.
func percentDecodeLatin1(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeCharset turns RFC 2231 octets into text for the charsets user-data
// uses; unknown ones keep the octets, as Python keeps the text on a
// LookupError.
func decodeCharset(charset, octets string) string {
	switch strings.ToLower(strings.ReplaceAll(charset, "_", "-")) {
	case "", "us-ascii", "ascii":
		var b strings.Builder
		for i := 0; i < len(octets); i++ {
			if octets[i] < 0x80 {
				b.WriteByte(octets[i])
			} else {
				b.WriteRune(utf8.RuneError)
			}
		}
		return b.String()
	case "iso-8859-1", "latin-1", "latin1", "l1":
		var b strings.Builder
		for i := 0; i < len(octets); i++ {
			b.WriteRune(rune(octets[i]))
		}
		return b.String()
	case "utf-8", "utf8":
		return strings.ToValidUTF8(octets, string(utf8.RuneError))
	}
	return octets
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// pyUnquote is email.utils.unquote.
func pyUnquote(s string) string {
	if len(s) > 1 {
		if s[0] == '"' && s[len(s)-1] == '"' {
			return strings.ReplaceAll(strings.ReplaceAll(s[1:len(s)-1], `\\`, `\`), `\"`, `"`)
		}
		if s[0] == '<' && s[len(s)-1] == '>' {
			return s[1 : len(s)-1]
		}
	}
	return s
}

// pyQuote is email.utils.quote.
func pyQuote(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`)
}

const pyWhitespaceASCII = " \t\n\r\v\f\x1c\x1d\x1e\x1f"

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

// pyLStrip is Python's str.lstrip() on bytes that may not be valid UTF-8
// (Python sees undecodable bytes as surrogates, never as whitespace).
func pyLStrip(b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 || !isPySpace(r) {
			break
		}
		b = b[size:]
	}
	return b
}

// splitLines splits after each \r\n, \r or \n, keeping the line endings,
// as the readlines of the email parser's buffer does in Python.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			lines = append(lines, data)
			break
		}
		end := i + 1
		if data[i] == '\r' && end < len(data) && data[end] == '\n' {
			end++
		}
		lines = append(lines, data[:end])
		data = data[end:]
	}
	return lines
}

// splitLinesBytes is bytes.splitlines() without the line endings.
func splitLinesBytes(data []byte) [][]byte {
	lines := splitLines(data)
	for i, l := range lines {
		lines[i] = trimEOL(l)
	}
	return lines
}

func trimEOL(line []byte) []byte {
	if bytes.HasSuffix(line, []byte("\r\n")) {
		return line[:len(line)-2]
	}
	if n := len(line); n > 0 && (line[n-1] == '\n' || line[n-1] == '\r') {
		return line[:n-1]
	}
	return line
}

// isHeaderLine is feedparser's headerRE: "From ", a name of printable
// characters without a colon followed by a colon, or a continuation.
func isHeaderLine(line []byte) bool {
	if bytes.HasPrefix(line, []byte("From ")) {
		return true
	}
	if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		return true
	}
	for _, c := range line {
		if c == ':' {
			return true
		}
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return false
}

func isBlankLine(line []byte) bool {
	return len(line) > 0 && (line[0] == '\n' || line[0] == '\r')
}

// mimeParser is email.feedparser.FeedParser over a complete input.
type mimeParser struct {
	lines [][]byte
	pos   int
	// pushed holds lines given back with unreadLine, read again first.
	pushed [][]byte
	// eof holds the boundary matchers of the enclosing multiparts: a line
	// any of them matches ends the part being read.
	eof []func([]byte) bool
	// last is the message created most recently, whose trailing newline
	// belongs to the next boundary (feedparser's _last).
	last *mimePart
	// parts counts the parts made, to bound pathological inputs.
	parts int
}

// Python would hit its recursion limit somewhere past maxMIMEDepth; beyond
// these bounds the rest of a part is kept as its body, and the caller,
// told how many parts there were, refuses the message past maxParts.
const maxMIMEDepth = 100

// parseMIME parses a whole message the way email.message_from_string does,
// and says how many parts (messages included) it found, up to one more
// than maxParts.
func parseMIME(data []byte) (*mimePart, int) {
	p := &mimeParser{lines: splitLines(data)}
	msg := p.parse("text/plain", 0)
	return msg, p.parts
}

// readLine returns the next line, or nil at the end of the input or of the
// current part (a line that an enclosing boundary matches stays unread).
func (p *mimeParser) readLine() []byte {
	var line []byte
	if n := len(p.pushed); n > 0 {
		line = p.pushed[n-1]
	} else if p.pos < len(p.lines) {
		line = p.lines[p.pos]
	} else {
		return nil
	}
	for _, atEOF := range p.eof {
		if atEOF(line) {
			return nil
		}
	}
	if n := len(p.pushed); n > 0 {
		p.pushed = p.pushed[:n-1]
	} else {
		p.pos++
	}
	return line
}

func (p *mimeParser) unreadLine(line []byte) {
	p.pushed = append(p.pushed, line)
}

func (p *mimeParser) restOfPart() []byte {
	var body []byte
	for line := p.readLine(); line != nil; line = p.readLine() {
		body = append(body, line...)
	}
	return body
}

func (p *mimeParser) parse(defaultType string, depth int) *mimePart {
	msg := &mimePart{defaultType: defaultType}
	p.last = msg
	p.parts++
	var headerLines [][]byte
	for line := p.readLine(); line != nil; line = p.readLine() {
		if !isHeaderLine(line) {
			if !isBlankLine(line) {
				p.unreadLine(line)
			}
			break
		}
		headerLines = append(headerLines, line)
	}
	p.parseHeaders(msg, headerLines)

	if depth >= maxMIMEDepth || p.parts > maxParts {
		msg.body = p.restOfPart()
		return msg
	}
	if msg.contentType() == "message/delivery-status" {
		p.parseDeliveryStatus(msg, depth)
		return msg
	}
	switch msg.mainType() {
	case "message":
		msg.container = true
		msg.children = []*mimePart{p.parse("text/plain", depth+1)}
		return msg
	case "multipart":
		p.parseMultipart(msg, depth)
		return msg
	}
	msg.body = p.restOfPart()
	return msg
}

// parseHeaders is FeedParser._parse_headers with the compat32 policy.
func (p *mimeParser) parseHeaders(msg *mimePart, lines [][]byte) {
	var name string
	var value []byte
	flush := func() {
		if name != "" {
			v := bytes.TrimLeft(value, " \t")
			v = bytes.TrimRight(v, "\r\n")
			msg.headers = append(msg.headers, mimeHeader{name, string(v)})
		}
		name, value = "", nil
	}
	for i, line := range lines {
		if line[0] == ' ' || line[0] == '\t' {
			if name != "" {
				value = append(value, line...)
			}
			continue
		}
		flush()
		if bytes.HasPrefix(line, []byte("From ")) {
			if i == len(lines)-1 && i > 0 {
				// Probably the body's first line: give it back.
				p.unreadLine(line)
				return
			}
			continue // the Unix envelope line, or one misplaced
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		name = string(line[:colon])
		value = append([]byte(nil), line[colon+1:]...)
	}
	flush()
}

func (p *mimeParser) parseDeliveryStatus(msg *mimePart, depth int) {
	msg.container = true
	for {
		p.eof = append(p.eof, isBlankLine)
		child := p.parse("text/plain", depth+1)
		p.eof = p.eof[:len(p.eof)-1]
		msg.children = append(msg.children, child)
		p.readLine() // the blank line between blocks
		line := p.readLine()
		if line == nil {
			return
		}
		p.unreadLine(line)
	}
}

// parseMultipart reads the parts between boundary lines. As in Python, the
// line ending before a boundary belongs to the boundary, repeated boundary
// lines make no empty parts, and a multipart whose start boundary never
// comes is not a container at all.
func (p *mimeParser) parseMultipart(msg *mimePart, depth int) {
	boundary, ok := msg.boundary()
	if !ok {
		msg.body = p.restOfPart()
		return
	}
	sep := []byte("--" + boundary)
	isBoundary := func(line []byte) (matched, closing bool) {
		rest, ok := bytes.CutPrefix(trimEOL(line), sep)
		if !ok {
			return false, false
		}
		closing = bytes.HasPrefix(rest, []byte("--"))
		if closing {
			rest = rest[2:]
		}
		if len(bytes.Trim(rest, " \t")) != 0 {
			return false, false
		}
		return true, closing
	}
	matchBoundary := func(line []byte) bool {
		m, _ := isBoundary(line)
		return m
	}
	childType := "text/plain"
	if msg.contentType() == "multipart/digest" {
		childType = "message/rfc822"
	}
	var preamble []byte
	inPreamble := true
	for {
		line := p.readLine()
		if line == nil {
			break
		}
		matched, closing := isBoundary(line)
		if !matched {
			preamble = append(preamble, line...)
			continue
		}
		if closing {
			break
		}
		if inPreamble {
			inPreamble = false
			p.unreadLine(line)
			continue
		}
		for {
			next := p.readLine()
			if next == nil {
				break
			}
			if !matchBoundary(next) {
				p.unreadLine(next)
				break
			}
		}
		if p.parts > maxParts {
			// The caller refuses the message: reading on would only
			// make parts to throw away.
			p.pos = len(p.lines)
			p.pushed = nil
			return
		}
		p.eof = append(p.eof, matchBoundary)
		msg.container = true
		msg.children = append(msg.children, p.parse(childType, depth+1))
		if last := p.last; !last.container && last.mainType() != "multipart" {
			last.body = trimEOL(last.body)
		}
		p.eof = p.eof[:len(p.eof)-1]
		p.last = msg
	}
	if inPreamble {
		msg.body = preamble
	}
	p.restOfPart() // the epilogue
}

// decodeQuotedPrintable is binascii.a2b_qp, which is lenient: a stray "="
// stays as it is, "==" is one "=", and "=" before a line ending joins lines.
func decodeQuotedPrintable(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if in[i] != '=' {
			out = append(out, in[i])
			i++
			continue
		}
		i++
		switch {
		case i >= len(in):
		case in[i] == '\n' || in[i] == '\r':
			for i < len(in) && in[i] != '\n' {
				i++
			}
			if i < len(in) {
				i++
			}
		case in[i] == '=':
			out = append(out, '=')
			i++
		case i+1 < len(in) && isHex(in[i]) && isHex(in[i+1]):
			v, _ := strconv.ParseUint(string(in[i:i+2]), 16, 8)
			out = append(out, byte(v))
			i += 2
		default:
			out = append(out, '=')
		}
	}
	return out
}

var base64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" {
		t[c] = byte(i)
	}
	return t
}()

// a2bBase64 is binascii.a2b_base64 without strict mode: characters outside
// the alphabet are skipped and decoding stops at the padding that ends a
// quantum.
func a2bBase64(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)/4*3+3)
	var quadPos, pads int
	var left byte
	for _, c := range in {
		if c == '=' {
			pads++
			if quadPos >= 2 && quadPos+pads >= 4 {
				return out, nil
			}
			continue
		}
		v := base64Value[c]
		if v == 0xff {
			continue
		}
		// Only '=' in a row after the data count as its padding.
		pads = 0
		switch quadPos {
		case 0:
			left = v
		case 1:
			out = append(out, left<<2|v>>4)
			left = v & 0x0f
		case 2:
			out = append(out, left<<4|v>>2)
			left = v & 0x03
		case 3:
			out = append(out, left<<6|v)
		}
		quadPos = (quadPos + 1) % 4
	}
	switch quadPos {
	case 0:
		return out, nil
	case 1:
		return nil, errors.New("invalid base64: the number of data characters is 1 more than a multiple of 4")
	}
	return nil, errors.New("invalid base64: incorrect padding")
}

// pyB64Decode is email's decode_b as get_payload(decode=True) uses it: the
// text as it is, else with the padding it lacks.
func pyB64Decode(in []byte) ([]byte, error) {
	if b, err := a2bBase64(in); err == nil {
		return b, nil
	}
	return a2bBase64(append(in[:len(in):len(in)], '=', '='))
}

// DecodeBase64 decodes base64 user-data the way cloud-init's util.b64d
// (Python's base64.b64decode) does: characters outside the alphabet, line
// breaks included, are skipped, but missing padding is an error.
func DecodeBase64(b []byte) ([]byte, error) {
	out, err := a2bBase64(b)
	if err != nil {
		return nil, fmt.Errorf("decode base64 (%d bytes): %w", len(b), err)
	}
	return out, nil
}
