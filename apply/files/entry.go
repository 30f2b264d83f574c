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
	"github.com/seedinit/seedinit/apply/target"
)

// Defaults as cloud-init's cc_write_files has them.
const (
	defaultPerms = 0o644
	defaultOwner = "root:root"
	// maxContent bounds decompressed content, so that a small gzip bomb in
	// user-data cannot fill the target.
	maxContent = 64 << 20
)

// Entry is one write_files item, decoded and checked but not yet written.
type Entry struct {
	// Index is the item's position in write_files, for messages.
	Index int
	// Path is absolute and clean; it is a path in the target.
	Path string
	// Content is the decoded content (empty when only Source is given).
	Content []byte
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
	data := []byte(s)
	for _, step := range steps {
		switch step {
		case "base64":
			if data, err = decodeBase64(data); err != nil {
				return fmt.Errorf("decode base64 content: %w", err)
			}
		case "gzip":
			if data, err = gunzip(data); err != nil {
				return fmt.Errorf("decompress gzip content: %w", err)
			}
		}
	}
	e.Content = data
	return nil
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
const modeSpecial = target.ModeSpecial

// unixMode turns chmod(2) bits into an fs.FileMode; n is at least 0.
func unixMode(n int64) fs.FileMode { return target.UnixMode(uint32(n & 0o7777)) }

// decodeBase64 decodes like Python's base64.b64decode without validate:
// characters outside the alphabet are skipped, and the first complete
// padding ends the data.
func decodeBase64(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)*3/4)
	var quad, pads int
	var left byte
	data := 0
	for _, c := range in {
		if c == '=' {
			if quad >= 2 {
				pads++
				if quad+pads >= 4 {
					return out, nil
				}
			}
			continue
		}
		v := b64value(c)
		if v < 0 {
			continue
		}
		data++
		pads = 0
		b := byte(v)
		switch quad {
		case 0:
			left = b
		case 1:
			out = append(out, left<<2|b>>4)
			left = b & 0x0f
		case 2:
			out = append(out, left<<4|b>>2)
			left = b & 0x03
		case 3:
			out = append(out, left<<6|b)
			left = 0
		}
		quad = (quad + 1) % 4
	}
	switch quad {
	case 0:
		return out, nil
	case 1:
		return nil, fmt.Errorf("number of data characters (%d) cannot be 1 more than a multiple of 4", data)
	}
	return nil, errors.New("incorrect padding")
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

func gunzip(in []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxContent+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxContent {
		return nil, fmt.Errorf("content is larger than %d bytes once decompressed", maxContent)
	}
	return out, nil
}
