package files

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// Defaults as cloud-init's cc_write_files has them.
const (
	defaultPerms = 0o644
	defaultOwner = "root:root"
)

// Entry is one write_files item, decoded and checked but not yet written.
type Entry struct {
	// Index is the item's position in write_files, for messages.
	Index int
	// Path is absolute and clean; it is a path in the target.
	Path string
	// Content is the content as the config gives it, still encoded
	// (empty when only Source is given). It is decoded as it is written,
	// through ContentReader, so that no decoded content is held whole.
	Content string
	// Decode lists the decoding steps of the encoding, in order
	// ("base64", "gzip").
	Decode []string
	// Source is a URL to fetch the content from, tried before Content.
	Source *Source
	// User and Group are names to resolve in the target ("" keeps).
	User, Group string
	// OwnerGiven is false when User and Group are the default root:root.
	OwnerGiven bool
	Mode       fs.FileMode
	Append     bool
	Defer      bool
	// Warnings are problems that did not stop the entry (an unknown
	// encoding, undecodable permissions), as cloud-init only warns.
	Warnings []string
}

// Source is write_files' source: {uri, headers}.
type Source struct {
	URI     string
	Headers map[string]string
}

func (e *Entry) warn(format string, args ...any) {
	e.Warnings = append(e.Warnings, fmt.Sprintf(format, args...))
}

// DecodeEntry decodes write_files item index with cloud-init's rules:
// content is decoded by encoding (b64, gzip, gz+b64 ...), permissions are
// an octal string or a YAML integer, owner is "user:group".
func DecodeEntry(index int, item any) (*Entry, error) {
	m, ok := item.(map[string]any)
	if !ok {
		if c, isConfig := item.(apply.Config); isConfig {
			m = c
		} else {
			return nil, fmt.Errorf("item %d: want a mapping, got %s", index, apply.TypeName(item))
		}
	}
	e := &Entry{Index: index}
	cfg := apply.Config(m)
	p, _, err := cfg.String("path")
	if err != nil {
		return nil, fmt.Errorf("item %d: %w", index, err)
	}
	if p == "" {
		return nil, fmt.Errorf("item %d: no path to write", index)
	}
	// Relative paths are taken from "/", where cloud-init runs.
	e.Path = path.Clean("/" + p)
	fail := func(err error) (*Entry, error) {
		return nil, fmt.Errorf("item %d (%s): %w", index, e.Path, err)
	}
	if e.Defer, err = optionalBool(cfg, "defer"); err != nil {
		return fail(err)
	}
	if e.Append, err = optionalBool(cfg, "append"); err != nil {
		return fail(err)
	}
	if err := e.decodeContent(cfg); err != nil {
		return fail(err)
	}
	if err := e.decodeSource(cfg); err != nil {
		return fail(err)
	}
	owner := defaultOwner
	if cfg.Has("owner") {
		e.OwnerGiven = true
		owner = ""
		if v := cfg["owner"]; v != nil {
			if owner, err = apply.AsString(v); err != nil {
				return fail(fmt.Errorf("owner: %w", err))
			}
		}
	}
	e.User, e.Group = splitOwner(owner)
	e.Mode = e.decodePerms(cfg["permissions"])
	return e, nil
}

func optionalBool(cfg apply.Config, key string) (bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return false, nil
	}
	b, err := apply.AsBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// decodeContent takes the content and its encoding; decoding waits for
// ContentReader, so that an item another module writes, or one never
// reached, costs nothing to decode.
func (e *Entry) decodeContent(cfg apply.Config) error {
	raw, ok := cfg["content"]
	if !ok || raw == nil {
		return nil
	}
	s, err := apply.AsString(raw)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	enc := ""
	if v, ok := cfg["encoding"]; ok && v != nil {
		if enc, err = apply.AsString(v); err != nil {
			return fmt.Errorf("encoding: %w", err)
		}
	}
	steps, known := extractions(enc)
	if !known {
		e.warn("unknown encoding %q: writing the content as text/plain", enc)
	}
	e.Content, e.Decode = s, steps
	return nil
}

// ContentReader yields the item's decoded content, decoding as it is
// read: base64 a few bytes at a time, gzip through its window. Errors in
// the content (bad padding, a broken gzip stream) come from Read, wrapped
// to say which step failed.
func (e *Entry) ContentReader() io.Reader {
	var r io.Reader = strings.NewReader(e.Content)
	for _, step := range e.Decode {
		switch step {
		case "base64":
			r = &stepReader{r: newBase64Reader(r), what: "decode base64 content"}
		case "gzip":
			r = &stepReader{r: &gunzipReader{src: r}, what: "decompress gzip content"}
		}
	}
	return r
}

// stepReader names a decoding step in its errors; an error from an
// earlier step, named already, passes as it is.
type stepReader struct {
	r    io.Reader
	what string
}

type stepError struct {
	what string
	err  error
}

func (e *stepError) Error() string { return e.what + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func (s *stepReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		var named *stepError
		if !errors.As(err, &named) {
			err = &stepError{what: s.what, err: err}
		}
	}
	return n, err
}

// gunzipReader opens the gzip stream at the first Read, where a bad
// header is an error of the content being read like any other.
type gunzipReader struct {
	src io.Reader
	z   *gzip.Reader
}

func (g *gunzipReader) Read(p []byte) (int, error) {
	if g.z == nil {
		z, err := gzip.NewReader(g.src)
		if err != nil {
			return 0, err
		}
		g.z = z
	}
	return g.z.Read(p)
}

// extractions lists the decoding steps for an encoding, in order.
func extractions(encoding string) (steps []string, known bool) {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "gz", "gzip":
		return []string{"gzip"}, true
	case "gz+base64", "gzip+base64", "gz+b64", "gzip+b64":
		return []string{"base64", "gzip"}, true
	case "b64", "base64":
		return []string{"base64"}, true
	case "", "text/plain":
		return nil, true
	}
	return nil, false
}

func (e *Entry) decodeSource(cfg apply.Config) error {
	src, ok, err := cfg.Map("source")
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	uri, _, err := src.String("uri")
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if uri == "" {
		return nil
	}
	e.Source = &Source{URI: uri}
	headers, ok, err := src.Map("headers")
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if ok {
		e.Source.Headers = map[string]string{}
		for k, v := range headers {
			s, err := apply.AsString(v)
			if err != nil {
				return fmt.Errorf("source: headers: %s: %w", k, err)
			}
			if strings.ContainsAny(k, "\r\n") || strings.ContainsAny(s, "\r\n") {
				return fmt.Errorf("source: headers: %q: a header cannot span lines", k)
			}
			e.Source.Headers[k] = s
		}
	}
	return nil
}

// splitOwner splits "user:group"; "", "-1" and "none" mean "keep".
func splitOwner(owner string) (user, group string) {
	if owner == "" {
		return "", ""
	}
	u, g, _ := strings.Cut(owner, ":")
	u, g = strings.TrimSpace(u), strings.TrimSpace(g)
	if u == "-1" || strings.EqualFold(u, "none") {
		u = ""
	}
	if g == "-1" || strings.EqualFold(g, "none") {
		g = ""
	}
	return u, g
}

// decodePerms reads permissions as cloud-init does: a YAML number is taken
// as it is (so unquoted 0644 is octal, but 644 is decimal 644), a string is
// octal. Anything else warns and gives the default.
func (e *Entry) decodePerms(v any) fs.FileMode {
	var n int64
	switch p := v.(type) {
	case nil:
		return defaultPerms
	case int64:
		n = p
	case int:
		n = int64(p)
	case bool:
		n = 0
		if p {
			n = 1
		}
	case float64:
		if math.IsNaN(p) || math.IsInf(p, 0) {
			e.warn("undecodable permissions %v: using %o", p, defaultPerms)
			return defaultPerms
		}
		n = int64(p)
	default:
		s, err := apply.AsString(v)
		if err == nil {
			n, err = parseOctal(s)
		}
		if err != nil {
			e.warn("undecodable permissions %v: using %o", v, defaultPerms)
			return defaultPerms
		}
	}
	if n < 0 {
		e.warn("undecodable permissions %v: using %o", v, defaultPerms)
		return defaultPerms
	}
	if n > 0o7777 {
		e.warn("permissions %o have bits beyond 07777: ignoring them", n)
	}
	return unixMode(n)
}

// parseOctal accepts what Python's int(s, 8) does: surrounding spaces, a
// sign, a 0o prefix and underscores between digits.
func parseOctal(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if len(s) > 2 && (s[:2] == "0o" || s[:2] == "0O") {
		s = strings.TrimPrefix(s[2:], "_")
	}
	if s == "" || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
		return 0, fmt.Errorf("invalid octal %q", s)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 8, 64)
	if err != nil {
		return 0, err
	}
	if neg {
		n = -n
	}
	return n, nil
}

// modeSpecial is the setuid, setgid and sticky bits as fs.FileMode has them.
const modeSpecial = rootfs.ModeSpecial

// unixMode turns chmod(2) bits into an fs.FileMode; n is at least 0.
func unixMode(n int64) fs.FileMode { return rootfs.UnixMode(uint32(n & 0o7777)) }

// decodeBase64 decodes in one go what base64Reader decodes as a stream.
func decodeBase64(in []byte) ([]byte, error) {
	return io.ReadAll(newBase64Reader(bytes.NewReader(in)))
}

// base64Reader decodes like Python's base64.b64decode without validate:
// characters outside the alphabet are skipped, and the first complete
// padding ends the data. It reads its input a block at a time and keeps
// only the state of the current quantum.
type base64Reader struct {
	src        io.Reader
	in         []byte
	pos, n     int
	quad, pads int
	left       byte
	data       int  // data characters seen, for the error message
	done       bool // padding ended the data, or the input ended
	err        error
}

func newBase64Reader(src io.Reader) *base64Reader {
	return &base64Reader{src: src, in: make([]byte, 4096)}
}

func (r *base64Reader) Read(p []byte) (int, error) {
	out := 0
	for out < len(p) && !r.done {
		if r.pos == r.n {
			if r.err != nil {
				r.done = true
				break
			}
			r.n, r.err = r.src.Read(r.in)
			r.pos = 0
			if r.err != nil && r.err != io.EOF {
				return out, r.err
			}
			continue
		}
		c := r.in[r.pos]
		r.pos++
		if c == '=' {
			if r.quad >= 2 {
				r.pads++
				if r.quad+r.pads >= 4 {
					r.done, r.quad = true, 0
				}
			}
			continue
		}
		v := b64value(c)
		if v < 0 {
			continue
		}
		r.data++
		r.pads = 0
		b := byte(v)
		switch r.quad {
		case 0:
			r.left = b
		case 1:
			p[out] = r.left<<2 | b>>4
			out++
			r.left = b & 0x0f
		case 2:
			p[out] = r.left<<4 | b>>2
			out++
			r.left = b & 0x03
		case 3:
			p[out] = r.left<<6 | b
			out++
			r.left = 0
		}
		r.quad = (r.quad + 1) % 4
	}
	if out > 0 || !r.done {
		return out, nil
	}
	switch r.quad {
	case 0:
		return 0, io.EOF
	case 1:
		return 0, fmt.Errorf("number of data characters (%d) cannot be 1 more than a multiple of 4", r.data)
	}
	return 0, errors.New("incorrect padding")
}

func b64value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}
