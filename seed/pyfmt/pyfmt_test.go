package pyfmt

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

func TestFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {0.1, "0.1"},
		{1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{9999999999999998, "9999999999999998.0"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {-2.5, "-2.5"}, {1.5e-7, "1.5e-07"},
		{123456789.123, "123456789.123"}, {1e300, "1e+300"}, {-1.25e-300, "-1.25e-300"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := Float(tc.in); got != tc.want {
				t.Errorf("Float(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "abc", `'abc'`},
		{"empty", "", `''`},
		{"single quote", "it's", `"it's"`},
		{"both quotes", `it's "x"`, `'it\'s "x"'`},
		{"backslash", `a\b`, `'a\\b'`},
		{"controls", "a\tb\nc\rd\x00\x1b\x7f", `'a\tb\nc\rd\x00\x1b\x7f'`},
		{"latin1 control", "\u0085", `'\x85'`},
		{"nbsp", "\u00a0", `'\xa0'`},
		{"soft hyphen", "\u00ad", `'\xad'`},
		{"printable non-ascii", "héllo ☃", `'héllo ☃'`},
		{"line separator", "\u2028", `'\u2028'`},
		{"private use", "\U000f0000", `'\U000f0000'`},
		{"invalid utf-8", "a\xffb", `'a\udcffb'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Quote(tc.in)); diff != "" {
				t.Errorf("Quote(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

type named map[string]any

func TestRepr(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"none", nil, "None"},
		{"bools", []any{true, false}, "[True, False]"},
		{"numbers", []any{int64(-3), 7, uint64(1 << 63), 2.5}, "[-3, 7, 9223372036854775808, 2.5]"},
		{"nested", map[string]any{"b": []any{"x", nil}, "a": map[string]any{}}, "{'a': {}, 'b': ['x', None]}"},
		{"string list", []string{"a", "it's"}, `['a', "it's"]`},
		{"named map", named{"k": "v"}, "{'k': 'v'}"},
		{"other", struct{ A int }{1}, "{1}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Repr(tc.in)); diff != "" {
				t.Errorf("Repr (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStr(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"it's", "it's"}, {nil, "None"}, {1e16, "1e+16"}, {[]any{"a"}, "['a']"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := Str(tc.in); got != tc.want {
				t.Errorf("Str(%#v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReprDepthIsBounded(t *testing.T) {
	var v any = "x"
	for range 1000 {
		v = []any{v}
	}
	if got := Repr(v); len(got) > 200 || !strings.Contains(got, "...") {
		t.Errorf("Repr of a 1000-deep list = %d bytes, want it cut short with ...", len(got))
	}
}

// TestAgainstPython compares Float and Quote with CPython's repr on
// random floats (by bit pattern, so subnormals, infinities and NaN come
// up) and on strings mixing ASCII, controls and characters from the
// ranges where printability is decided.
func TestAgainstPython(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "differential test needs CPython: /usr/bin/python3 is missing")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var bits []string
	var floats []float64
	for i := range 3000 {
		var f float64
		switch i % 3 {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(44)-22))
		default:
			f = math.Round(rng.Float64()*1e6) / math.Pow(10, float64(rng.IntN(8)))
		}
		if math.IsNaN(f) {
			f = math.NaN() // Python prints every NaN as nan, sign or not
		}
		floats = append(floats, f)
		bits = append(bits, strconv.FormatUint(math.Float64bits(f), 10))
	}
	pool := []rune("aZ '\"\\\t\n\r\x00\x1f\x7f\u0080\u0085\u009f\u00a0\u00ad\u00e9\u0378\u200b\u2028\u3000\u4e2d\ue000\ufeff\U0001f600\U000e0001\U00100000")
	var texts []string
	for range 2000 {
		n := rng.IntN(6)
		var b strings.Builder
		for range n {
			b.WriteRune(pool[rng.IntN(len(pool))])
		}
		texts = append(texts, b.String())
	}
	input, err := json.Marshal(map[string]any{"bits": bits, "texts": texts})
	if err != nil {
		t.Fatal(err)
	}
	script := `
import json, struct, sys
d = json.load(sys.stdin)
out = {"floats": [repr(struct.unpack("<d", int(b).to_bytes(8, "little"))[0]) for b in d["bits"]],
       "texts": [repr(s) for s in d["texts"]]}
json.dump(out, sys.stdout)
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(string(input))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running %s: %v", py, err)
	}
	var want struct{ Floats, Texts []string }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("decoding Python's answer: %v", err)
	}
	for i, f := range floats {
		if got := Float(f); got != want.Floats[i] {
			t.Errorf("Float(%b) = %q, Python says %q", f, got, want.Floats[i])
		}
	}
	for i, s := range texts {
		if got := Quote(s); got != want.Texts[i] {
			t.Errorf("Quote(%+q) = %q, Python says %q", s, got, want.Texts[i])
		}
	}
}

func FuzzFloat(f *testing.F) {
	for _, seed := range []float64{0, 1, -1.5, 1e16, 1e-5, 9999999999999998, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		s := Float(x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != x || math.Signbit(back) != math.Signbit(x) {
			t.Errorf("Float(%v) = %q, which reads back as %v (%v)", x, s, back, err)
		}
		if !strings.ContainsAny(s, ".e") {
			t.Errorf("Float(%v) = %q, which Python would read as an int", x, s)
		}
	})
}

func FuzzQuote(f *testing.F) {
	for _, seed := range []string{"", "it's", `a"b'c`, "\x00\n\u00a0", "\xff\xfe", "\U0001f600"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if len(q) < 2 || q[0] != q[len(q)-1] || (q[0] != '\'' && q[0] != '"') {
			t.Fatalf("Quote(%q) = %q, not wrapped in one kind of quote", s, q)
		}
		if strings.ContainsAny(q, "\n\r\x00") {
			t.Errorf("Quote(%q) = %q holds a raw control character", s, q)
		}
	})
}

func TestReprerHooks(t *testing.T) {
	type version struct{ major, minor int }
	var paths []string
	r := Reprer{
		Keys: func(m map[string]any, path string) []string {
			paths = append(paths, path)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Sort(sort.Reverse(sort.StringSlice(keys)))
			return keys
		},
		Other: func(v any) (any, bool) {
			if x, ok := v.(version); ok {
				return Raw(fmt.Sprintf("v%d.%d", x.major, x.minor)), true
			}
			return nil, false
		},
	}
	v := map[string]any{
		"a": []any{map[string]any{"x": 1, "y": version{1, 2}}},
		"b": Dict{Keys: []string{"q", "p"}, Values: map[string]any{"p": map[string]any{"m": nil, "n": true}, "q": 1.5}},
	}
	if got, want := r.Repr(v, "top"), "{'b': {'q': 1.5, 'p': {'n': True, 'm': None}}, 'a': [{'y': v1.2, 'x': 1}]}"; got != want {
		t.Errorf("Repr = %s, want %s", got, want)
	}
	// A Dict's values have no place; a mapping's are at path.key.index.
	if want := []string{"top", "", "top.a.0"}; !slices.Equal(paths, want) {
		t.Errorf("Keys saw paths %q, want %q", paths, want)
	}
	if got := Repr(struct{}{}); got != "{}" {
		t.Errorf("an unknown type: %s", got)
	}
}
