package yaml11

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

func TestLoadScalars(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		// Booleans: YAML 1.1's words, but PyYAML leaves y/n alone.
		{"yes", true}, {"Yes", true}, {"YES", true}, {"no", false}, {"NO", false},
		{"on", true}, {"On", true}, {"off", false}, {"OFF", false},
		{"true", true}, {"True", true}, {"false", false}, {"FALSE", false},
		{"y", "y"}, {"n", "n"}, {"Y", "Y"}, {"yES", "yES"}, {"oN", "oN"},
		// Integers.
		{"0", int64(0)}, {"-17", int64(-17)}, {"+5", int64(5)},
		{"0644", int64(0o644)}, {"-010", int64(-8)}, {"0o644", "0o644"},
		{"0x1F", int64(31)}, {"0b101", int64(5)}, {"1_000", int64(1000)},
		{"1:20", int64(80)}, {"-1:00:00", int64(-3600)}, {"190:20:30", int64(685230)},
		{"09", "09"}, {"0_", int64(0)},
		// Python's ints are unbounded; beyond int64 we keep the digits as
		// text rather than round them (a deliberate difference).
		{"99999999999999999999", "99999999999999999999"}, {"-9223372036854775808", int64(-9223372036854775808)},
		{"9223372036854775808", "9223372036854775808"},
		// Floats.
		{"1e3", "1e3"}, {"1.0e+3", 1000.0}, {"1.5", 1.5}, {"-.5", "-.5"}, {".5", 0.5},
		{"1.", 1.0}, {"1_0.5", 10.5}, {"1:30.5", 90.5},
		{".inf", math.Inf(1)}, {"-.Inf", math.Inf(-1)}, {"+.INF", math.Inf(1)},
		{"6.8523015e+5", 685230.15},
		// Nulls.
		{"~", nil}, {"null", nil}, {"Null", nil}, {"NULL", nil}, {"", nil}, {"nULL", "nULL"},
		// Quoted and tagged.
		{`"yes"`, "yes"}, {"'0644'", "0644"}, {`"1e3"`, "1e3"}, {"!!str 123", "123"},
		{"!!str yes", "yes"}, {"!!int '0644'", int64(420)}, {"!!float '1'", 1.0}, {"!!float ' 1e3 '", 1000.0}, {"!!null abc", nil}, {"!!bool YeS", true}, {"!!int '0o10'", int64(8)},
		{"!!binary aGVsbG8=", "hello"}, {"!!bool 'on'", true}, {"!!null ''", nil},
		{"|\n  literal\n", "literal\n"}, {">-\n  folded\n  text\n", "folded text"},
		// Timestamps stay text.
		{"2001-12-14", "2001-12-14"},
		// Plain strings.
		{"hello world", "hello world"}, {"0o", "0o"}, {"1e", "1e"}, {"+", "+"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Load([]byte("v: " + tc.in))
			if strings.HasPrefix(tc.in, "|") || strings.HasPrefix(tc.in, ">") {
				got, err = Load([]byte("v: " + tc.in))
			}
			if err != nil {
				t.Fatalf("Load(%q): %v", tc.in, err)
			}
			v := got.(map[string]any)["v"]
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("Load(%q) (-want +got):\n%s", "v: "+tc.in, diff)
			}
		})
	}
}

func TestLoadNaN(t *testing.T) {
	for _, in := range []string{".nan", ".NaN", ".NAN"} {
		got, err := Load([]byte(in))
		if err != nil {
			t.Fatalf("Load(%q): %v", in, err)
		}
		if f, ok := got.(float64); !ok || !math.IsNaN(f) {
			t.Errorf("Load(%q) = %#v, want NaN", in, got)
		}
	}
}

func TestLoadDocuments(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{name: "empty", in: "", want: nil},
		{name: "comment only", in: "#cloud-config\n", want: nil},
		{name: "explicit document", in: "---\na: 1\n...\n", want: map[string]any{"a": int64(1)}},
		{name: "anchors and aliases", in: "a: &x [1, 2]\nb: *x\n", want: map[string]any{
			"a": []any{int64(1), int64(2)}, "b": []any{int64(1), int64(2)},
		}},
		{name: "merge key", in: "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n", want: map[string]any{
			"base": map[string]any{"x": int64(1), "y": int64(2)},
			"d":    map[string]any{"x": int64(1), "y": int64(3)},
		}},
		{name: "merge key list: the first wins", in: "a: &a {x: 1}\nb: &b {x: 2, z: 2}\nd:\n  <<: [*a, *b]\n", want: map[string]any{
			"a": map[string]any{"x": int64(1)},
			"b": map[string]any{"x": int64(2), "z": int64(2)},
			"d": map[string]any{"x": int64(1), "z": int64(2)},
		}},
		{name: "duplicate keys: the last wins", in: "a: 1\na: 2\n", want: map[string]any{"a": int64(2)}},
		{name: "non-string keys spelled as json.dumps", in: "1: a\nfalse: b\n~: c\n1.5: d\n0x10: e\n", want: map[string]any{
			"1": "a", "false": "b", "null": "c", "1.5": "d", "16": "e",
		}},
		{name: "equal numeric keys collide as in Python", in: "1: a\ntrue: b\n1.0: c\n", want: map[string]any{"1": "c"}},
		{name: "nested", in: "users:\n  - name: u\n    groups: [a, b]\n    sudo: ~\n", want: map[string]any{
			"users": []any{map[string]any{"name": "u", "groups": []any{"a", "b"}, "sudo": nil}},
		}},
		{name: "python unicode tag", in: "a: !!python/unicode x\n", want: map[string]any{"a": "x"}},
		{name: "set", in: "!!set {a, b}\n", want: map[string]any{"a": nil, "b": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load([]byte(tc.in))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{name: "two documents", in: "a: 1\n---\nb: 2\n", wantLine: 2, wantMsg: "single document"},
		// PyYAML points at line 3, where it noticed; yaml.v3 only tells the
		// line where the list opened.
		{name: "unclosed flow list", in: "a: 1\nb: [1\nc: 2\n", wantLine: 2},
		{name: "bad indentation", in: "a:\n  b: 1\n c: 2\n", wantLine: 3},
		{name: "tab indentation", in: "a:\n\tb: 1\n", wantLine: 2},
		{name: "unknown tag", in: "a: 1\nb: !!python/object foo\n", wantLine: 2, wantMsg: "could not determine a constructor"},
		{name: "bad int", in: "a: !!int abc\n", wantLine: 1, wantMsg: "not a valid !!int"},
		{name: "bad binary padding", in: "\n\na: !!binary 'aGVsbG8'\n", wantLine: 3, wantMsg: "!!binary"},
		{name: "empty binary digits", in: "a: 0b_\n", wantLine: 1, wantMsg: "invalid integer"},
		{name: "recursive alias", in: "a: &a [1, *a]\n", wantLine: 1, wantMsg: "contains it"},
		{name: "billion laughs", in: laughs, wantLine: 6, wantMsg: "more than 200000 YAML nodes once aliases are expanded"},
		{name: "tag on a sequence", in: "a: !!str [1]\n", wantLine: 1, wantMsg: "expected a scalar"},
		{name: "list as key", in: "a: {[1]: 2}\n", wantLine: 1, wantMsg: "mapping key"},
		{name: "merge of a scalar", in: "a:\n  <<: 1\n", wantLine: 2, wantMsg: "merge key"},
		{name: "undefined alias", in: "a: *nope\n", wantLine: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.in))
			var ye *Error
			if !errors.As(err, &ye) {
				t.Fatalf("Load(%q) error = %v, want a *yaml11.Error", tc.in, err)
			}
			if ye.Line != tc.wantLine {
				t.Errorf("Load(%q) error line = %d (%v), want %d", tc.in, ye.Line, err, tc.wantLine)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Load(%q) error = %q, want one containing %q", tc.in, err, tc.wantMsg)
			}
		})
	}
}

// laughs is the billion laughs: ten levels of ten aliases each.
const laughs = `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
j: &j [*i, *i, *i, *i, *i, *i, *i, *i, *i, *i]
k: &k [*j, *j, *j, *j, *j, *j, *j, *j, *j, *j]
`

func TestFormatFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {1.5, "1.5"}, {math.Copysign(0, -1), "-0.0"}, {0, "0.0"}, {1e22, "1e+22"}, {123e18, "1.23e+20"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"}, {123456789.125, "123456789.125"},
		{math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}, {math.NaN(), "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := FormatFloat(tc.in); got != tc.want {
				t.Errorf("FormatFloat(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// pyyamlCases go through PyYAML's safe_load (testdata/pyyaml.py) and Load,
// and must agree: same value, or both an error. Inputs where we differ on
// purpose are not here; see the package documentation.
var pyyamlCases = []string{
	"v: yes", "v: No", "v: on", "v: OFF", "v: y", "v: n", "v: True", "v: tRUE",
	"v: 0644", "v: 0o644", "v: 0x_1F", "v: 0b1_01", "v: -0b11", "v: 1_000", "v: 1:20", "v: 1:20:30.5",
	"v: 08", "v: 0.8", "v: 1e3", "v: 1.0e+3", "v: 1.0e3", "v: -1.5E-2", "v: .inf", "v: -.inf", "v: .nan",
	"v: 1.", "v: ._5", "v: 1__0", "v: 12345678901234567", "v: 0b_", "v: 1.e+5", "v: 6.8523015e+5",
	"v: ~", "v: null", "v:", "v: 'null'", "v: \"yes\"", "v: !!str 0644", "v: !!binary aGVsbG8gd29ybGQ=",
	"v: !!int '0x10'", "v: !!float '3'", "v: !!bool 'yes'", "v: !!float ' 1e3 '", "v: !!null abc", "v: !!bool YeS",
	"v: !!int '0o10'", "v: !!binary '%%%'", "v: !!binary 'aGVsbG8'", "v: !!str [1]", "v: !!seq {a: 1}", "v: !!omap [{a: 1}, {b: 2}]",
	"v: 1e16", "v: 1.0e16", "v: 0.00001", "v: 123.456e-10", "v: -0.0", "v: 1:00.5",
	"a: &x {k: [1, 2]}\nb: *x\nc: [*x, *x]",
	"base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3",
	"a: &a {x: 1}\nb: &b {x: 2, z: 2}\nd:\n  <<: [*a, *b]\n  w: 0",
	"a: 1\na: 2",
	"1: a\n2.5: b\nnull: c\nfalse: d\n0o7: e\n010: f",
	"1: a\ntrue: b\n1.0: c",
	"- a\n- [b, c]\n- {d: e}",
	"a: |\n  line1\n  line2\nb: >\n  folded\n  line\n",
	"a: 'it''s'\nb: \"tab\\there \\u00e9\"",
	"#cloud-config\nruncmd:\n  - [sh, -c, 'echo \"hi\"']\n  - echo $HOME\n",
	"a: 1\n---\nb: 2",
	"a: [1\nb: 2",
	"a:\n  b: 1\n c: 2",
	"a: *nope",
	"a: {[1]: 2}",
	"a: !!python/object x",
	"",
	"# only a comment",
	"--- |\n  text\n",
	"a: 2001-12-14",
	"!!set {a, b}",
	"a: b: c",
	"key with spaces: value with: colon",
	"a: -",
	"a: '0644'\nb: 0644\nc: '1e3'\nd: 1e3",
}

func TestAgainstPyYAML(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Skipf(t, "skipping the comparison with PyYAML: %s not found (install python3-yaml)", python)
	}
	if out, err := exec.Command(python, "-c", "import yaml").CombinedOutput(); err != nil {
		testenv.Skipf(t, "skipping the comparison with PyYAML: %s cannot import yaml (install python3-yaml): %v\n%s", python, err, out)
	}
	in, err := json.Marshal(pyyamlCases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "pyyaml.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run testdata/pyyaml.py: %v\n%s", err, stderr.String())
	}
	var answers []struct {
		OK    json.RawMessage `json:"ok"`
		Error *string         `json:"error"`
		Line  int             `json:"line"`
	}
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("decode testdata/pyyaml.py output: %v", err)
	}
	if len(answers) != len(pyyamlCases) {
		t.Fatalf("PyYAML answered %d cases, want %d", len(answers), len(pyyamlCases))
	}
	for i, in := range pyyamlCases {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			py := answers[i]
			got, err := Load([]byte(in))
			if py.Error != nil {
				if err == nil {
					t.Fatalf("Load(%q) = %v, PyYAML fails: %s", in, got, *py.Error)
				}
				var ye *Error
				if errors.As(err, &ye) && ye.Line != py.Line {
					t.Logf("Load(%q) error on line %d, PyYAML on line %d", in, ye.Line, py.Line)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(%q): %v, PyYAML gives %s", in, err, py.OK)
			}
			want := decodeNumbers(t, py.OK)
			if diff := cmp.Diff(want, decodeNumbers(t, []byte(pyJSON(got)))); diff != "" {
				t.Errorf("Load(%q) differs from PyYAML (-pyyaml +yaml11):\n%s", in, diff)
			}
		})
	}
}

func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode JSON %.200q: %v", data, err)
	}
	return v
}

// pyJSON writes a loaded value as testdata/pyyaml.py writes PyYAML's.
func pyJSON(v any) string {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(x))
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				fmt.Fprintf(&b, "\"<float %s>\"", FormatFloat(x))
				return
			}
			b.WriteString(FormatFloat(x))
		case string:
			s, _ := json.Marshal(x)
			b.Write(s)
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			b.WriteByte(']')
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				s, _ := json.Marshal(k)
				b.Write(s)
				b.WriteByte(':')
				write(x[k])
			}
			b.WriteByte('}')
		default:
			fmt.Fprintf(&b, "%q", fmt.Sprintf("unexpected %T", v))
		}
	}
	write(v)
	return b.String()
}

// FuzzLoad checks that Load never panics, and that what it loads encodes as
// JSON (the form everything downstream compares).
func FuzzLoad(f *testing.F) {
	for _, s := range pyyamlCases {
		f.Add(s)
	}
	f.Add("a: &a [*a]")
	f.Add("a: &a\n  <<: *a\n")
	f.Add("x: &x [&y [*x, *y]]")
	f.Add(laughs)
	for _, in := range hostileYAML(2000) {
		f.Add(string(in))
	}
	f.Add("a: &a {x: 1}\nb: &b {<<: *a, y: 1}\nc: &c {<<: [*a, *b], z: 1}\n")
	// Small limits, so that the fuzzer reaches them: within them a
	// document loads, past them it fails with a limit error, never a
	// panic and never more than the limits.
	lim := Limits{Nodes: 500, Comments: 50, Items: 100, Keys: 100, Depth: 20}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := Load([]byte(in))
		if err != nil {
			var ye *Error
			if !errors.As(err, &ye) {
				t.Fatalf("Load(%q) error %v is not a *yaml11.Error", in, err)
			}
		} else {
			_ = pyJSON(v)
		}
		_, n, err := LoadLimited([]byte(in), lim)
		if err == nil && n > lim.Nodes {
			t.Fatalf("LoadLimited(%q) made %d nodes, over the limit of %d", in, n, lim.Nodes)
		}
	})
}
