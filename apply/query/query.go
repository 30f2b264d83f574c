// Package query reads the instance data that `seedinit query` prints
// (/run/cloud-init/instance-data*.json) as `cloud-init query` reads it:
// dotted keys, list items by index, and cloud-init's v1 keys offered at
// the top level too.
//
// The file is checked once with json.Valid and then walked as bytes: a key
// is found, or a mapping's keys listed, without decoding the values beside
// the path, and only the value asked for is decoded, once its size in
// values is known to be within a budget. Decoding the whole file first
// cost 10 to 30 times its size in memory (812 MiB for a 30 MB file of
// small objects), whatever was asked.
package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// Limits on what query reads and decodes.
const (
	// MaxSize is the largest instance-data file read. seedinit writes
	// it from the metadata and the merged config, which come from a
	// seed of at most 16 MiB of user-data; a larger file is not one it
	// wrote.
	MaxSize = 32 << 20
	// MaxNodes bounds what one answer decodes: the JSON values
	// (objects, lists, scalars) of the value printed, or the keys of a
	// mapping listed. Decoded and printed, each takes up to about 500
	// bytes (an empty object), so this keeps an answer to about 150 MiB.
	MaxNodes = 300_000
	// MaxDepth bounds the nesting of what one answer decodes, as
	// seedinit's YAML loader bounds a config's: printed, each level
	// indents every line below it, so that deep nesting multiplies the
	// size of the text.
	MaxDepth = 200
)

// ErrLimit is wrapped by the errors of files and answers past the limits.
var ErrLimit = errors.New("query limit")

// ErrNotMapping is wrapped by Keys' error for a key whose value is not a
// mapping.
var ErrNotMapping = errors.New("not a mapping")

// files are the instance-data files, the sensitive one (with merged_cfg)
// first, as cloud-init query reads them for root.
var files = []string{"/run/cloud-init/instance-data-sensitive.json", "/run/cloud-init/instance-data.json"}

// Data is an instance-data file, read but not decoded.
type Data struct {
	Name string
	raw  []byte
	// maxNodes is MaxNodes; tests lower it.
	maxNodes int
	valid    bool // json.Valid accepted raw
}

// Read reads the target's instance data, up to MaxSize.
func Read(root *rootfs.Root) (*Data, error) {
	var lastErr error
	for _, name := range files {
		f, err := root.Open(name)
		if err != nil {
			lastErr = err
			continue
		}
		raw, err := readLimited(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		return New(name, raw), nil
	}
	return nil, fmt.Errorf("no instance data in %s (has seedinit run?): %w", root.Dir(), lastErr)
}

// New is Data over raw, named name in messages.
func New(name string, raw []byte) *Data { return &Data{Name: name, raw: raw, maxNodes: MaxNodes} }

// readLimited reads f up to MaxSize; a regular file over it is refused
// before it is read.
func readLimited(f *os.File) ([]byte, error) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSize {
		return nil, fmt.Errorf("the file is %d bytes, more than the %d MiB query reads: %w", fi.Size(), MaxSize>>20, ErrLimit)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("more than the %d MiB query reads: %w", MaxSize>>20, ErrLimit)
	}
	return b, nil
}

// check makes sure the file is JSON, so that the walks below need not,
// and finds its top-level value.
func (d *Data) check() (int, error) {
	if !d.valid {
		if !json.Valid(d.raw) {
			// json.Unmarshal says what is wrong, and where.
			var v any
			err := json.Unmarshal(d.raw, &v)
			if err == nil {
				err = errors.New("not valid JSON")
			}
			return 0, fmt.Errorf("parse %s: %w", d.Name, err)
		}
		// A number past float64 is valid JSON that json.Unmarshal
		// refuses: the file is refused whole, as it was when it was
		// decoded whole.
		if err := checkNumbers(d.raw); err != nil {
			return 0, fmt.Errorf("parse %s: %w", d.Name, err)
		}
		d.valid = true
	}
	return ws(d.raw, 0), nil
}

// checkNumbers checks that each number in the JSON b fits a float64.
func checkNumbers(b []byte) error {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			i = skipString(b, i) - 1
		case c == '-' || (c >= '0' && c <= '9'):
			end := skipValue(b, i)
			if _, err := strconv.ParseFloat(string(b[i:end]), 64); err != nil {
				return fmt.Errorf("json: cannot unmarshal number %s into Go value of type float64", b[i:end])
			}
			i = end - 1
		}
	}
	return nil
}

// top checks that the top level is an object (or null, which decodes as
// an empty mapping) and returns where it starts.
func (d *Data) top() (int, bool, error) {
	i, err := d.check()
	if err != nil {
		return 0, false, err
	}
	switch d.raw[i] {
	case '{':
		return i, true, nil
	case 'n':
		return i, false, nil
	}
	return 0, false, fmt.Errorf("parse %s: the top level is not a JSON object", d.Name)
}

// decode decodes the value at i, within the budget.
func (d *Data) decode(i int) (any, error) {
	end := skipValue(d.raw, i)
	n, depth := countValues(d.raw[i:end])
	if n > d.maxNodes {
		return nil, d.limitErr()
	}
	if depth > MaxDepth {
		return nil, fmt.Errorf("the answer is nested more than %d levels deep, the most query prints: %w", MaxDepth, ErrLimit)
	}
	var v any
	if err := json.Unmarshal(d.raw[i:end], &v); err != nil {
		return nil, fmt.Errorf("parse %s: %w", d.Name, err)
	}
	return v, nil
}

func (d *Data) limitErr() error {
	return fmt.Errorf("the answer has more than %d values or keys, the most query decodes: %w", d.maxNodes, ErrLimit)
}

// All is the whole instance data, with the v1 keys also at the top level
// where the top level does not have them.
func (d *Data) All() (any, error) {
	i, isObject, err := d.top()
	if err != nil {
		return nil, err
	}
	if !isObject {
		return map[string]any(nil), nil
	}
	v, err := d.decode(i)
	if err != nil {
		return nil, err
	}
	data := v.(map[string]any)
	if v1, ok := data["v1"].(map[string]any); ok {
		for k, v := range v1 {
			if _, taken := data[k]; !taken {
				data[k] = v
			}
		}
	}
	return data, nil
}

// Value is the value at key: dotted, list items by index.
func (d *Data) Value(key string) (any, error) {
	i, err := d.find(key)
	if err != nil {
		return nil, err
	}
	return d.decode(i)
}

// Keys lists, sorted, the keys of the mapping at key.
func (d *Data) Keys(key string) ([]string, error) {
	i, err := d.find(key)
	if err != nil {
		return nil, err
	}
	if d.raw[i] != '{' {
		return nil, fmt.Errorf("%s is %w", key, ErrNotMapping)
	}
	keys, err := d.appendKeys(nil, i)
	if err != nil {
		return nil, err
	}
	return sortUnique(keys), nil
}

// appendKeys appends the keys of the mapping at i to keys, within the
// limit on nodes.
func (d *Data) appendKeys(keys []string, i int) ([]string, error) {
	err := d.members(i, func(k string, _ int) error {
		if len(keys) == d.maxNodes {
			return d.limitErr()
		}
		keys = append(keys, k)
		return nil
	})
	return keys, err
}

// TopKeys lists, sorted, the keys of the top level, v1's included.
func (d *Data) TopKeys() ([]string, error) {
	i, isObject, err := d.top()
	if err != nil || !isObject {
		return []string{}, err
	}
	var keys []string
	v1 := -1
	err = d.members(i, func(k string, at int) error {
		if len(keys) == d.maxNodes {
			return d.limitErr()
		}
		keys = append(keys, k)
		if k == "v1" {
			v1 = at // the last one, as a decoded mapping keeps
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if v1 >= 0 && d.raw[v1] == '{' {
		if keys, err = d.appendKeys(keys, v1); err != nil {
			return nil, err
		}
	}
	return sortUnique(keys), nil
}

func sortUnique(keys []string) []string {
	sort.Strings(keys)
	out := keys[:0]
	for i, k := range keys {
		if i == 0 || k != keys[i-1] {
			out = append(out, k)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// find returns where the value at key starts. A key the top level lacks
// is looked for in v1, as cloud-init offers v1's keys at the top. Of
// duplicate keys the last counts, as in a decoded mapping.
func (d *Data) find(key string) (int, error) {
	path := strings.Split(key, ".")
	i, isObject, err := d.top()
	if err != nil {
		return 0, err
	}
	if !isObject {
		return 0, fmt.Errorf("key %q: no %q at %q", key, path[0], "")
	}
	at, found := d.member(i, path[0])
	if !found {
		v1, hasV1 := d.member(i, "v1")
		if hasV1 && d.raw[v1] == '{' {
			at, found = d.member(v1, path[0])
		}
	}
	if !found {
		return 0, fmt.Errorf("key %q: no %q at %q", key, path[0], "")
	}
	for n, part := range path[1:] {
		switch d.raw[at] {
		case '{':
			next, ok := d.member(at, part)
			if !ok {
				return 0, fmt.Errorf("key %q: no %q at %q", key, part, strings.Join(path[:n+1], "."))
			}
			at = next
		case '[':
			items := d.items(at)
			idx, err := strconv.Atoi(part)
			if err != nil || idx < 0 || idx >= len(items) {
				return 0, fmt.Errorf("key %q: %q is not an index of a %d-item list", key, part, len(items))
			}
			at = items[idx]
		default:
			return 0, fmt.Errorf("key %q: %q is below a scalar", key, part)
		}
	}
	return at, nil
}

// member finds the value of the last key name in the object at i.
func (d *Data) member(i int, name string) (int, bool) {
	at, found := 0, false
	d.members(i, func(k string, v int) error {
		if k == name {
			at, found = v, true
		}
		return nil
	})
	return at, found
}

// members calls f with each key of the object at i and where its value
// starts, until f fails.
func (d *Data) members(i int, f func(key string, value int) error) error {
	b := d.raw
	i = ws(b, i+1)
	for b[i] != '}' {
		end := skipString(b, i)
		k := unquote(b[i:end])
		v := ws(b, ws(b, end)+1) // past the colon
		if err := f(k, v); err != nil {
			return err
		}
		i = ws(b, skipValue(b, v))
		if b[i] == ',' {
			i = ws(b, i+1)
		}
	}
	return nil
}

// items lists where each item of the list at i starts.
func (d *Data) items(i int) []int {
	b := d.raw
	var out []int
	i = ws(b, i+1)
	for b[i] != ']' {
		out = append(out, i)
		i = ws(b, skipValue(b, i))
		if b[i] == ',' {
			i = ws(b, i+1)
		}
	}
	return out
}

// The walks below read JSON that json.Valid accepted: they need not check
// it again.

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index past the string that starts at i.
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index past the value that starts at i.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !strings.ContainsRune(",]} \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// countValues counts the values in the JSON value b (the value itself and
// one per item or member of each list and object) and how deep its lists
// and objects nest.
func countValues(b []byte) (n, maxDepth int) {
	n = 1
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case ',':
			n++
		case '{', '[':
			depth++
			maxDepth = max(maxDepth, depth)
			if j := ws(b, i+1); b[j] != '}' && b[j] != ']' {
				n++
			}
		case '}', ']':
			depth--
		}
	}
	return n, maxDepth
}

// unquote decodes a JSON string as json.Unmarshal does (invalid UTF-8
// becomes U+FFFD); plain ASCII without escapes is the common case.
func unquote(q []byte) string {
	plain := true
	for _, c := range q[1 : len(q)-1] {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(q[1 : len(q)-1])
	}
	var s string
	json.Unmarshal(q, &s)
	return s
}
