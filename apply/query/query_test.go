package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The reference is query as it was: the whole file decoded, v1's keys
// copied to the top level, the key followed through the decoded values.
// The streaming walk must answer every question the same way.

func referenceData(raw []byte) (map[string]any, error) {
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	if v1, ok := data["v1"].(map[string]any); ok {
		for k, v := range v1 {
			if _, taken := data[k]; !taken {
				data[k] = v
			}
		}
	}
	return data, nil
}

func referenceLookup(data map[string]any, key string) (any, error) {
	var cur any = data
	for i, part := range strings.Split(key, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, fmt.Errorf("key %q: no %q at %q", key, part, strings.Join(strings.Split(key, ".")[:i], "."))
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n >= len(c) {
				return nil, fmt.Errorf("key %q: %q is not an index of a %d-item list", key, part, len(c))
			}
			cur = c[n]
		default:
			return nil, fmt.Errorf("key %q: %q is below a scalar", key, part)
		}
	}
	return cur, nil
}

func referenceKeys(v any) ([]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, true
}

// printed is v as query prints it, checked against json.MarshalIndent.
func printed(t *testing.T, v any, err error) string {
	t.Helper()
	if err != nil {
		return "error: " + err.Error()
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(v, "", " ")
	if b.String() != string(want)+"\n" {
		t.Errorf("WriteJSON printed\n%s\nMarshalIndent\n%s", b.String(), want)
	}
	return b.String()
}

// compare asks doc every question a key allows, of both.
func compare(t *testing.T, doc string, key string) {
	t.Helper()
	d := New("instance-data.json", []byte(doc))
	ref, refErr := referenceData([]byte(doc))
	if refErr != nil {
		if _, err := d.All(); err == nil {
			t.Errorf("%q: All succeeded on a file json.Unmarshal refuses (%v)", doc, refErr)
		}
		if _, err := d.TopKeys(); err == nil {
			t.Errorf("%q: TopKeys succeeded on a file json.Unmarshal refuses (%v)", doc, refErr)
		}
		if _, err := d.Value(key); err == nil || !strings.HasPrefix(err.Error(), "parse ") {
			t.Errorf("%q: Value(%q) = %v on a file json.Unmarshal refuses (%v)", doc, key, err, refErr)
		}
		return
	}
	all, allErr := d.All()
	if got, want := printed(t, all, allErr), printed(t, any(ref), nil); got != want {
		t.Errorf("%q: All:\n%s\nwant:\n%s", doc, got, want)
	}
	wantTop, _ := referenceKeys(ref)
	if got, err := d.TopKeys(); err != nil || strings.Join(got, "|") != strings.Join(wantTop, "|") {
		t.Errorf("%q: TopKeys = %q, %v; want %q", doc, got, err, wantTop)
	}
	want, wantErr := referenceLookup(ref, key)
	value, valueErr := d.Value(key)
	if got, want := printed(t, value, valueErr), printed(t, want, wantErr); got != want {
		t.Errorf("%q: Value(%q):\n%s\nwant:\n%s", doc, key, got, want)
	}
	keys, err := d.Keys(key)
	switch wantKeys, isMap := referenceKeys(want); {
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%q: Keys(%q) error %v, want %v", doc, key, err, wantErr)
		}
	case !isMap:
		if !errors.Is(err, ErrNotMapping) {
			t.Errorf("%q: Keys(%q) = %q, %v; want ErrNotMapping", doc, key, keys, err)
		}
	default:
		if err != nil || strings.Join(keys, "|") != strings.Join(wantKeys, "|") {
			t.Errorf("%q: Keys(%q) = %q, %v; want %q", doc, key, keys, err, wantKeys)
		}
	}
}

const sample = `{"_beta_keys": ["subplatform"], "ds": {"meta_data": {"hostname": "h", "public_keys": ["k1", "k2"]}},
 "v1": {"instance_id": "i-1", "local_hostname": "h", "public_ssh_keys": ["k1"], "region": null, "n": 1.5e3},
 "merged_cfg": {"users": [{"name": "a", "groups": ["x", "y"]}, "default"], "x": {"y": {"z": true}}},
 "instance_id": "top wins"}`

func TestAnswersAsDecodingWhole(t *testing.T) {
	docs := []string{
		sample,
		`{"a": {"x": 1}, "a": {"y": 2}}`,
		`{"v1": {"a": 1}, "v1": {"b": 2}}`,
		`{"v1": [1], "a": 2}`,
		`{"v1": {"a": [10, 20, 30]}, "a": null}`,
		`null`,
		`{}`,
		`[1, 2]`,
		`"text"`,
		`{"a": 1} x`,
		`{"a": 1`,
		``,
		`{"a": "\u00e9\ud800", "b": "<&>\u2028\u0001\t", "n": [1e300, -0, 0.1, 1E-7, 123456789012345678]}`,
		"{\"a\": \"\xff\xfe\xe2\x80\"}",
	}
	keys := []string{"", "a", "a.x", "a.y", "b", "v1", "v1.a", "instance_id", "ds.meta_data", "ds.meta_data.public_keys.1",
		"ds.meta_data.public_keys.2", "ds.meta_data.public_keys.-1", "ds.meta_data.public_keys.x", "merged_cfg.users.0.groups",
		"merged_cfg.x.y.z.w", "n", "region", "a.0", "a.01", "a.+1", "..", "v1.v1"}
	for i, doc := range docs {
		for _, key := range keys {
			t.Run(fmt.Sprintf("doc%d/%s", i, key), func(t *testing.T) { compare(t, doc, key) })
		}
	}
}

func FuzzQuery(f *testing.F) {
	f.Add(sample, "merged_cfg.users.0.name")
	f.Add(`{"a": {"x": 1}, "a": {"y": 2}}`, "a.y")
	f.Add(`{"v1": {"a": [1, {"b": 2}]}}`, "a.1.b")
	f.Add(`[{"a": 1}]`, "0.a")
	f.Fuzz(func(t *testing.T, doc, key string) {
		compare(t, doc, key)
	})
}

// Past the budget an answer is refused, with an error that says so; what
// is within it is answered.
func TestNodeBudget(t *testing.T) {
	doc := `{"v1": {"a": 1}, "big": {"k1": 1, "k2": [1, 2, 3], "k3": {"x": 1}}, "small": [1]}`
	tests := []struct {
		name    string
		budget  int
		ask     func(d *Data) (any, error)
		wantErr bool
	}{
		{"value within", 8, func(d *Data) (any, error) { return d.Value("big") }, false},
		{"value past", 7, func(d *Data) (any, error) { return d.Value("big") }, true},
		{"small value under a tight budget", 2, func(d *Data) (any, error) { return d.Value("small") }, false},
		{"keys within", 3, func(d *Data) (any, error) { return d.Keys("big") }, false},
		{"keys past", 2, func(d *Data) (any, error) { return d.Keys("big") }, true},
		{"top keys within", 4, func(d *Data) (any, error) { return d.TopKeys() }, false},
		{"top keys past", 3, func(d *Data) (any, error) { return d.TopKeys() }, true},
		{"all past", 12, func(d *Data) (any, error) { return d.All() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New("instance-data.json", []byte(doc))
			d.maxNodes = tt.budget
			_, err := tt.ask(d)
			if tt.wantErr {
				if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d values or keys", tt.budget)) {
					t.Errorf("error %v, want a limit error", err)
				}
			} else if err != nil {
				t.Error(err)
			}
		})
	}
}

// Long strings are escaped a block at a time: the blocks must join into
// what escaping the whole string gives, whatever sits at their edges.
func TestWriteJSONLongStrings(t *testing.T) {
	tests := map[string]string{
		"ascii":             strings.Repeat("a", 100_000),
		"two-byte runes":    strings.Repeat("é", 50_000),
		"four-byte runes":   "a" + strings.Repeat("😀", 30_000),
		"html and controls": strings.Repeat("<&>\u2028\x01\"\\", 20_000),
		"invalid bytes":     strings.Repeat("ab\xff\xe2\x80", 30_000),
		"cut sequence":      strings.Repeat("x", 32<<10-1) + "\xe2\x82\xac" + strings.Repeat("\x80", 10),
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			printed(t, map[string]any{"s": s, "l": []any{s}}, nil)
		})
	}
}

func TestDepthLimit(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tt := range []struct {
		depth   int
		wantErr bool
	}{{MaxDepth, false}, {MaxDepth + 1, true}} {
		t.Run(fmt.Sprint(tt.depth), func(t *testing.T) {
			d := New("instance-data.json", []byte(`{"a": `+nest(tt.depth)+`}`))
			_, err := d.Value("a")
			if got := err != nil; got != tt.wantErr || (got && !errors.Is(err, ErrLimit)) {
				t.Errorf("Value of a list nested %d deep: %v", tt.depth, err)
			}
		})
	}
}
