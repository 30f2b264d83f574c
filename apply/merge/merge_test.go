package merge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// y decodes a YAML fixture the way user-data is decoded.
func y(t testing.TB, text string) any {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatalf("fixture %q: %v", text, err)
	}
	return v
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Spec
		wantErr string
	}{
		{name: "empty", in: "", want: nil},
		{name: "only plus signs", in: " + + ", want: nil},
		{name: "default part spec", in: "dict(replace)+list()+str()", want: Spec{
			{Name: "dict", Options: []string{"replace"}},
			{Name: "list", Options: []string{}},
			{Name: "str", Options: []string{}},
		}},
		{name: "case, dashes and spaces", in: " Dict( Recurse-Array , No_Replace )+LIST(append) ", want: Spec{
			{Name: "dict", Options: []string{"recurse_array", "no_replace"}},
			{Name: "list", Options: []string{"append"}},
		}},
		{name: "m_ prefix", in: "m_dict(replace)", want: Spec{{Name: "dict", Options: []string{"replace"}}}},
		{name: "empty options skipped", in: "list(,append,,)", want: Spec{{Name: "list", Options: []string{"append"}}}},
		{name: "no parentheses", in: "dict", wantErr: "want name(options)"},
		{name: "unknown merger", in: "dict()+tuple()", wantErr: `find merger "tuple"`},
		{name: "name starting with a digit", in: "1dict()", wantErr: "want name(options)"},
		{name: "plus inside parentheses splits", in: "dict(a+b)", wantErr: "want name(options)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSpec(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSpec(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestSpecString(t *testing.T) {
	if got, want := DefaultPartSpec.String(), "dict(replace)+list()+str()"; got != want {
		t.Errorf("DefaultPartSpec.String() = %q, want %q", got, want)
	}
}

func TestSpecFromConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     string
		want    Spec
		wantErr string
	}{
		{name: "none", cfg: "a: 1", want: nil},
		{name: "string", cfg: "merge_how: 'list(append)+dict(no_replace,recurse_list)+str()'", want: Spec{
			{Name: "list", Options: []string{"append"}},
			{Name: "dict", Options: []string{"no_replace", "recurse_list"}},
			{Name: "str", Options: []string{}},
		}},
		{name: "list of name and settings", cfg: `
merge_how:
  - name: list
    settings: [append]
  - name: dict
    settings: [no_replace, recurse_list]
`, want: Spec{
			{Name: "list", Options: []string{"append"}},
			{Name: "dict", Options: []string{"no_replace", "recurse_list"}},
		}},
		{name: "merge_type when merge_how is absent", cfg: "merge_type: 'dict(replace)'", want: Spec{{Name: "dict", Options: []string{"replace"}}}},
		{name: "merge_type when merge_how is null", cfg: "merge_how: null\nmerge_type: 'str(append)'", want: Spec{{Name: "str", Options: []string{"append"}}}},
		{name: "merge_how wins over merge_type", cfg: "merge_how: 'str()'\nmerge_type: 'list()'", want: Spec{{Name: "str", Options: []string{}}}},
		{name: "list items as lists", cfg: "merge_how: [[dict, replace], [str]]", want: Spec{
			{Name: "dict", Options: []string{"replace"}},
			{Name: "str", Options: []string{}},
		}},
		{name: "empty names skipped", cfg: "merge_how: [{name: ' ', settings: []}, ['', x]]", want: nil},
		{name: "settings string is searched for substrings", cfg: "merge_how: [{name: dict, settings: 'no_replace,recurse_list'}]", want: Spec{
			{Name: "dict", Options: []string{"replace", "no_replace", "recurse_list"}},
		}},
		{name: "list-form names keep their case", cfg: "merge_how: [{name: Dict, settings: []}]", wantErr: `find merger "Dict"`},
		{name: "dashes in list-form names", cfg: "merge_how: [{name: m-dict, settings: []}]", want: Spec{{Name: "dict", Options: []string{}}}},
		{name: "missing settings", cfg: "merge_how: [{name: dict}]", wantErr: "item 0: want settings"},
		{name: "string items", cfg: "merge_how: [dict]", wantErr: `find merger "d"`},
		{name: "null settings", cfg: "merge_how: [{name: dict, settings: null}]", wantErr: "want a list of options"},
		{name: "number", cfg: "merge_how: 3", wantErr: "want a string or a list"},
		{name: "bad string", cfg: "merge_how: 'dict(replace'", wantErr: "read merge_how: parse merge spec item 1"},
		{name: "empty mapping", cfg: "merge_how: {}", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpecFromConfig(y(t, tc.cfg).(map[string]any))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("SpecFromConfig error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SpecFromConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SpecFromConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStripSpec(t *testing.T) {
	tests := []struct {
		name string
		cfg  string
		want string
	}{
		{name: "neither", cfg: "a: 1", want: "a: 1"},
		{name: "merge_how", cfg: "a: 1\nmerge_how: 'dict()'", want: "a: 1"},
		{name: "merge_type alone", cfg: "a: 1\nmerge_type: 'dict()'", want: "a: 1"},
		{name: "merge_type kept next to merge_how", cfg: "merge_how: 'dict()'\nmerge_type: x", want: "merge_type: x"},
		{name: "null merge_how pops both", cfg: "merge_how: ~\nmerge_type: 'dict()'\nb: 2", want: "b: 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := y(t, tc.cfg).(map[string]any)
			before := y(t, tc.cfg)
			got := StripSpec(cfg)
			if diff := cmp.Diff(y(t, tc.want), any(got)); diff != "" {
				t.Errorf("StripSpec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, any(cfg)); diff != "" {
				t.Errorf("StripSpec changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		base    string
		add     string
		want    string
		wantErr string
	}{
		// dict
		{name: "dict replace", spec: "dict(replace)", base: "{a: 1, b: [1], c: {x: 1}}", add: "{a: 2, b: [2], c: {y: 2}, d: 4}",
			want: "{a: 2, b: [2], c: {y: 2}, d: 4}"},
		{name: "dict no_replace keeps old but recurses into dicts", spec: "dict(no_replace)", base: "{a: 1, b: [1], c: {x: 1}, s: old}", add: "{a: 2, b: [2], c: {x: 9, y: 2}, s: new, d: 4}",
			want: "{a: 1, b: [1], c: {x: 1, y: 2}, s: old, d: 4}"},
		{name: "dict default is no_replace", spec: "dict()", base: "{a: 1}", add: "{a: 2, b: 3}", want: "{a: 1, b: 3}"},
		{name: "dict replace wins over no_replace", spec: "dict(no_replace,replace)", base: "{a: 1}", add: "{a: 2}", want: "{a: 2}"},
		{name: "dict recurse_list with list()", spec: "dict(no_replace,recurse_list)+list()", base: "{a: [1, 2, 3]}", add: "{a: [x, y]}", want: "{a: [x, y, 3]}"},
		{name: "dict recurse_array with list(append)", spec: "dict(recurse_array)+list(append)", base: "{a: [1]}", add: "{a: [2]}", want: "{a: [1, 2]}"},
		{name: "dict recurse_list without a list merger keeps old", spec: "dict(recurse_list)", base: "{a: [1]}", add: "{a: [2]}", want: "{a: [1]}"},
		{name: "dict recurse_str with str(append)", spec: "dict(recurse_str)+str(append)", base: "{s: foo}", add: "{s: bar}", want: "{s: foobar}"},
		{name: "dict recurse_str with str() replaces", spec: "dict(recurse_str)+str()", base: "{s: foo}", add: "{s: bar}", want: "{s: bar}"},
		{name: "dict allow_delete", spec: "dict(allow_delete)", base: "{a: 1, b: 2}", add: "{a: null, c: null}", want: "{b: 2, c: null}"},
		{name: "dict replace with allow_delete", spec: "dict(replace,allow_delete)", base: "{a: 1, b: 2}", add: "{a: ~, b: 3}", want: "{b: 3}"},
		{name: "dict null without allow_delete keeps old", spec: "dict()", base: "{a: 1}", add: "{a: null}", want: "{a: 1}"},
		{name: "dict replace null", spec: "dict(replace)", base: "{a: 1}", add: "{a: null}", want: "{a: null}"},
		{name: "dict into non-dict keeps base", spec: "dict(replace)", base: "{a: 1}", add: "[1, 2]", want: "{a: 1}"},
		{name: "dict recursing into a scalar keeps it", spec: "dict()", base: "{a: 5}", add: "{a: {b: 1}}", want: "{a: 5}"},
		{name: "dict recursing into null keeps null", spec: "dict()", base: "{a: null}", add: "{a: {b: 1}}", want: "{a: null}"},
		{name: "no dict merger drops the addition", spec: "list(append)", base: "{a: 1}", add: "{b: 2}", want: "{a: 1}"},
		// list
		{name: "list replace by index", spec: "list()+dict(recurse_list)", base: "{l: [1, 2, 3]}", add: "{l: [a]}", want: "{l: [a, 2, 3]}"},
		{name: "list append", spec: "list(append)", base: "[1, 2]", add: "[3]", want: "[1, 2, 3]"},
		{name: "list prepend", spec: "list(prepend)", base: "[1, 2]", add: "[3]", want: "[3, 1, 2]"},
		{name: "list append wins over prepend", spec: "list(prepend,append)", base: "[1]", add: "[2]", want: "[1, 2]"},
		{name: "list no_replace", spec: "list(no_replace)", base: "[1, 2]", add: "[3, 4, 5]", want: "[1, 2]"},
		{name: "list replace with a scalar", spec: "list()", base: "[1, 2]", add: "5", want: "5"},
		{name: "list append a string appends characters", spec: "list(append)", base: "[a]", add: "'héllo'", want: "[a, h, é, l, l, o]"},
		{name: "list prepend a mapping prepends its keys", spec: "list(prepend)", base: "[z]", add: "{b: 1, a: 2}", want: "[a, b, z]"},
		{name: "list append a number fails", spec: "list(append)", base: "[1]", add: "5", wantErr: "cannot append a integer"},
		{name: "list no_replace with a string", spec: "list(no_replace)", base: "[1]", add: "abc", want: "[1]"},
		{name: "list no_replace with a mapping fails", spec: "list(no_replace)", base: "[1]", add: "{a: 1}", wantErr: "cannot index a mapping"},
		{name: "list no_replace with null fails", spec: "list(no_replace)", base: "[1]", add: "~", wantErr: "cannot merge a null"},
		{name: "list recurse_dict", spec: "list(recurse_dict)+dict(replace)", base: "[{a: 1, b: 1}, x]", add: "[{a: 2}]", want: "[{a: 2, b: 1}, x]"},
		{name: "list without recurse_dict replaces items", spec: "list()+dict(replace)", base: "[{a: 1, b: 1}]", add: "[{a: 2}]", want: "[{a: 2}]"},
		{name: "list recurse_list", spec: "list(recurse_list)", base: "[[1, 2], 3]", add: "[[9]]", want: "[[9, 2], 3]"},
		{name: "list recurse_str", spec: "list(recurse_str)+str(append)", base: "[a, b]", add: "[x, y, z]", want: "[ax, by]"},
		// str
		{name: "str replaces", spec: "str()", base: "old", add: "new", want: "new"},
		{name: "str replaces with any type", spec: "str()", base: "old", add: "[1]", want: "[1]"},
		{name: "str append", spec: "str(append)", base: "old", add: "new", want: "oldnew"},
		{name: "str append a number fails", spec: "str(append)", base: "old", add: "1", wantErr: "cannot append a integer to a string"},
		{name: "no str merger keeps base", spec: "dict()", base: "old", add: "new", want: "old"},
		// other types
		{name: "numbers keep the base", spec: "dict(replace)+list()+str()", base: "1", add: "2", want: "1"},
		{name: "booleans keep the base", spec: "dict(replace)+list()+str()", base: "true", add: "{a: 1}", want: "true"},
		// first merger of a type wins
		{name: "first dict merger wins", spec: "dict(no_replace)+dict(replace)", base: "{a: 1}", add: "{a: 2}", want: "{a: 1}"},
		{name: "dict no_replace keeps old values of other types", spec: "dict(recurse_str)+str(append)", base: "{a: x, b: y}", add: "{a: 1, b: [1]}", want: "{a: x, b: y}"},
		{name: "dict recurse_list ignores a scalar addition", spec: "dict(recurse_list)+list(append)", base: "{a: {b: [1]}}", add: "{a: {b: 1}}", want: "{a: {b: [1]}}"},
		{name: "nested recurse_list append", spec: "dict(recurse_list)+list(append)", base: "{a: {b: [1]}}", add: "{a: {b: [2]}}", want: "{a: {b: [1, 2]}}"},
		{name: "nested append failure", spec: "dict(recurse_array)+str(append)", base: "{a: {b: s}}", add: "{a: {b: [2]}}", wantErr: "merge string at a.b: cannot append a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseSpec(tc.spec)
			if err != nil {
				t.Fatalf("ParseSpec(%q): %v", tc.spec, err)
			}
			base, add := y(t, tc.base), y(t, tc.add)
			baseCopy := y(t, tc.base)
			got, err := Merge(spec, base, add)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Merge error = %v (result %v), want one containing %q", err, got, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if diff := cmp.Diff(y(t, tc.want), got); diff != "" {
				t.Errorf("Merge(%s, %s, %s) (-want +got):\n%s", tc.spec, tc.base, tc.add, diff)
			}
			if diff := cmp.Diff(baseCopy, base); diff != "" {
				t.Errorf("Merge changed its base (-before +after):\n%s", diff)
			}
		})
	}
}

func cloudConfig(source, text, mergeHow string) seed.Part {
	return seed.Part{Kind: seed.KindCloudConfig, Source: source, Content: []byte(text), MergeHow: mergeHow}
}

func jsonPatch(source, text string) seed.Part {
	return seed.Part{Kind: seed.KindJSONPatch, Source: source, Content: []byte(text)}
}

func TestMergeParts(t *testing.T) {
	tests := []struct {
		name     string
		parts    []seed.Part
		want     string
		wantErrs []string
	}{
		{name: "no parts", want: "{}"},
		{name: "later parts replace keys by default", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\nruncmd: [a, b]\nhostname: one\nusers: {x: 1}", ""),
			cloudConfig("p2", "#cloud-config\nruncmd: [c]\nusers: {y: 2}", ""),
		}, want: "{runcmd: [c], hostname: one, users: {y: 2}}"},
		{name: "merge_how list(append) in the second part", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\nruncmd: [a, b]", ""),
			cloudConfig("p2", "#cloud-config\nmerge_how: 'dict(recurse_array)+list(append)'\nruncmd: [c]", ""),
		}, want: "{runcmd: [a, b, c]}"},
		{name: "Merge-Type header", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\npackages: [a]", ""),
			cloudConfig("p2", "#cloud-config\npackages: [b]", "dict(recurse_array)+list(append)+str()"),
		}, want: "{packages: [a, b]}"},
		{name: "document's mergers win over the header's for the same type", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\npackages: [a]\ns: x", ""),
			cloudConfig("p2", "#cloud-config\nmerge_how: 'dict(recurse_array,recurse_str)+list(prepend)'\npackages: [b]\ns: y", "list(append)+str(append)"),
		}, want: "{packages: [b, a], s: xy}"},
		{name: "a spec without a dict merger drops the part", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\na: 1", ""),
			cloudConfig("p2", "#cloud-config\nmerge_how: 'list(append)'\nb: 2", ""),
		}, want: "{a: 1}"},
		{name: "merge_type survives next to merge_how", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\nmerge_how: 'dict(replace)'\nmerge_type: 'list()'\na: 1", ""),
		}, want: "{a: 1, merge_type: 'list()'}"},
		{name: "bad YAML is left out with its line", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\na: 1", ""),
			cloudConfig("user-data part 2 (text/cloud-config)", "#cloud-config\nb: [1\nc: 2\n", ""),
			cloudConfig("p3", "#cloud-config\nd: 4", ""),
		}, want: "{a: 1, d: 4}", wantErrs: []string{"merge user-data part 2 (text/cloud-config): parse YAML: line "}},
		{name: "empty and non-mapping parts are left out", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\n", ""),
			cloudConfig("p2", "#cloud-config\n- a\n- b", ""),
			cloudConfig("p3", "#cloud-config\na: 1", ""),
		}, want: "{a: 1}", wantErrs: []string{"merge p1: empty cloud config", "merge p2: want a mapping at the top, got a list"}},
		{name: "bad merge spec leaves the part out", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\nmerge_how: 'bogus'\na: 1", ""),
			cloudConfig("p2", "#cloud-config\nb: 2", "dict(replace)+nope()"),
			cloudConfig("p3", "#cloud-config\nc: 3", ""),
		}, want: "{c: 3}", wantErrs: []string{"merge p1: read merge_how", "merge p2: read Merge-Type header"}},
		{name: "merge that raises leaves the part out", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\ns: abc", ""),
			cloudConfig("p2", "#cloud-config\nmerge_how: 'dict(recurse_list)+str(append)'\ns: [1]\nx: 1", ""),
		}, want: "{s: abc}", wantErrs: []string{"merge p2: merge string at s: cannot append a list"}},
		{name: "jsonp patches the merged config", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\nruncmd: [a]\nhostname: h", ""),
			jsonPatch("p2", "#cloud-config-jsonp\n[{\"op\": \"add\", \"path\": \"/runcmd/-\", \"value\": \"b\"}, {\"op\": \"remove\", \"path\": \"/hostname\"}]"),
		}, want: "{runcmd: [a, b]}"},
		{name: "jsonp first starts from empty", parts: []seed.Part{
			jsonPatch("p1", "  \n#cloud-config-jsonp\n[{\"op\": \"add\", \"path\": \"/a\", \"value\": 1}]"),
			cloudConfig("p2", "#cloud-config\nb: 2", ""),
		}, want: "{a: 1, b: 2}"},
		{name: "failing jsonp changes nothing", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\na: 1", ""),
			jsonPatch("p2", "[{\"op\": \"add\", \"path\": \"/b\", \"value\": 1}, {\"op\": \"remove\", \"path\": \"/zzz\"}]"),
		}, want: "{a: 1}", wantErrs: []string{"merge p2: apply JSON patch operation 1 (remove /zzz)"}},
		{name: "jsonp replacing the root with a list leaves an empty config", parts: []seed.Part{
			cloudConfig("p1", "#cloud-config\na: 1", ""),
			jsonPatch("p2", "[{\"op\": \"replace\", \"path\": \"\", \"value\": [1]}]"),
		}, want: "{}", wantErrs: []string{"the patched config is a list"}},
		{name: "scripts and boothooks are ignored", parts: []seed.Part{
			{Kind: seed.KindScript, Content: []byte("#!/bin/sh\necho hi")},
			{Kind: seed.KindBoothook, Content: []byte("#cloud-boothook\necho hi")},
			cloudConfig("p3", "#cloud-config\na: 1", ""),
		}, want: "{a: 1}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := MergeParts(tc.parts)
			if diff := cmp.Diff(y(t, tc.want), any(got)); diff != "" {
				t.Errorf("MergeParts (-want +got):\n%s", diff)
			}
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("MergeParts errors = %v, want %d containing %q", errs, len(tc.wantErrs), tc.wantErrs)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tc.wantErrs[i]) {
					t.Errorf("MergeParts error %d = %q, want one containing %q", i, err, tc.wantErrs[i])
				}
			}
		})
	}
}

func TestMergeMany(t *testing.T) {
	tests := []struct {
		name     string
		sources  []string
		want     string
		wantErrs int
	}{
		{name: "nothing", want: "{}"},
		{name: "earlier sources win", sources: []string{
			"{hostname: user, runcmd: [u], users: {a: 1}}",
			"{hostname: vendor, runcmd: [v], users: {a: 2, b: 2}, ntp: {enabled: true}}",
			"{hostname: system, locale: C}",
		}, want: "{hostname: user, runcmd: [u], users: {a: 1, b: 2}, ntp: {enabled: true}, locale: C}"},
		{name: "a source's merge_how decides how it merges in", sources: []string{
			"{runcmd: [u]}",
			"{merge_how: 'dict(recurse_array)+list(append)', runcmd: [v]}",
		}, want: "{runcmd: [u, v]}"},
		{name: "merge_how of the first source applies to the empty start", sources: []string{
			"{merge_how: 'list(append)', a: 1}",
			"{b: 2}",
		}, want: "{b: 2}"},
		{name: "empty sources are skipped", sources: []string{"{}", "{a: 1}"}, want: "{a: 1}"},
		{name: "invalid spec skips the source", sources: []string{"{a: 1}", "{merge_how: 'x', b: 2}", "{c: 3}"}, want: "{a: 1, c: 3}", wantErrs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sources []map[string]any
			for _, s := range tc.sources {
				sources = append(sources, y(t, s).(map[string]any))
			}
			got, errs := MergeManyReport(sources...)
			if diff := cmp.Diff(y(t, tc.want), any(got)); diff != "" {
				t.Errorf("MergeMany (-want +got):\n%s", diff)
			}
			if len(errs) != tc.wantErrs {
				t.Errorf("MergeManyReport errors = %v, want %d", errs, tc.wantErrs)
			}
			if diff := cmp.Diff(any(got), any(MergeMany(sources...))); diff != "" {
				t.Errorf("MergeMany and MergeManyReport differ:\n%s", diff)
			}
		})
	}
}

// FuzzParseSpec checks that any merge spec string parses or fails cleanly,
// and that a parsed spec builds a merger and prints back to itself.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"", "dict(replace)+list()+str()", "list(append)+dict(no_replace,recurse_list)+str()",
		" Dict( Recurse-Array )", "m_str(append)", "dict(", "x()", "+++", "dict(a)(b)", "list(\n)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseSpec(s)
		if err != nil {
			return
		}
		if _, err := New(spec); err != nil {
			t.Fatalf("ParseSpec(%q) = %v, but New fails: %v", s, spec, err)
		}
		again, err := ParseSpec(spec.String())
		if err != nil {
			t.Fatalf("ParseSpec(%q).String() = %q does not parse: %v", s, spec.String(), err)
		}
		if diff := cmp.Diff(spec, again); diff != "" {
			t.Fatalf("spec does not survive String (-first +again):\n%s", diff)
		}
	})
}

// FuzzMergeParts feeds two cloud-configs (the second with a header) and a
// patch through MergeParts: it must never panic and always return a map.
func FuzzMergeParts(f *testing.F) {
	f.Add("#cloud-config\nruncmd: [a]\nusers: {a: 1}", "#cloud-config\nmerge_how: 'dict(recurse_array)+list(append)'\nruncmd: [b]", "", `[{"op":"add","path":"/x","value":1}]`)
	f.Add("a: [1, 2]", "a: {b: 1}", "dict(recurse_list,allow_delete)+list(prepend,recurse_dict)+str(append)", `[{"op":"move","from":"/a/0","path":"/a/-"}]`)
	f.Add("s: x", "merge_how: [{name: dict, settings: recurse_str}, [str, append]]\ns: y", "bogus", `[{"op":"copy","from":"/s/0","path":"/t"},{"op":"test","path":"/t","value":"x"}]`)
	f.Add("{}", "- a", "list()", `{"a": 1, "a": 2}`)
	f.Fuzz(func(t *testing.T, first, second, header, patch string) {
		parts := []seed.Part{
			cloudConfig("p1", first, ""),
			cloudConfig("p2", second, header),
			jsonPatch("p3", patch),
		}
		got, errs := MergeParts(parts)
		if got == nil {
			t.Fatal("MergeParts returned a nil config")
		}
		// Merging in place must come out as copying every time does.
		want, wantErrs := mergeParts(parts, &accumulator{})
		if diff := cmp.Diff(want, got, cmpNaN); diff != "" {
			t.Errorf("in place differs from copying (-copying +in place):\n%s", diff)
		}
		if len(errs) != len(wantErrs) {
			t.Errorf("in place: %v; copying: %v", errs, wantErrs)
		}
	})
}

// cmpNaN makes NaN equal to itself, as a value merged twice is.
var cmpNaN = cmp.Comparer(func(a, b float64) bool { return a == b || a != a && b != b })

func TestMergePartsInPlaceKeepsAliasesApart(t *testing.T) {
	parts := []seed.Part{
		cloudConfig("p1", "a: &x {k: 1}\nb: *x\nl: &y [1]\nm: *y\ns: &z x\nt: *z\n", ""),
		cloudConfig("p2", "merge_how: dict(recurse_array,recurse_str)+list(append)+str(append)\na: {k: 2, j: 3}\nl: [2]\ns: y\n", ""),
		cloudConfig("p3", "merge_how: dict(recurse_array)+list(append)\na: {i: 4}\nl: [3]\n", ""),
		// Fails at s after changing a and l: none of it may stay.
		cloudConfig("p4", "merge_how: dict(recurse_array,recurse_str)+list(append)+str(append)\na: {h: 5}\nl: [4]\ns: [1]\n", ""),
	}
	got, errs := MergeParts(parts)
	if len(errs) != 1 {
		t.Errorf("errors %v, want the one of p4", errs)
	}
	want := map[string]any{
		// dict() without replace keeps the keys merged before.
		"a": map[string]any{"k": int64(1), "j": int64(3), "i": int64(4)},
		"b": map[string]any{"k": int64(1)},
		"l": []any{int64(1), int64(2), int64(3)},
		"m": []any{int64(1)},
		"s": "xy",
		"t": "x",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeParts (-want +got):\n%s", diff)
	}
}

func TestMergePartsLimits(t *testing.T) {
	var big strings.Builder
	for _, key := range []string{"a", "b"} {
		big.WriteString(key + ": [")
		big.WriteString(strings.Repeat("1,", 75_000))
		big.WriteString("1]\n")
	}
	t.Run("YAML nodes of all parts together", func(t *testing.T) {
		parts := []seed.Part{cloudConfig("p1", big.String(), ""), cloudConfig("p2", big.String(), ""), cloudConfig("p3", "c: 1\n", "")}
		got, errs := MergeParts(parts)
		if len(errs) != 1 || errs[0].Error() != "merge p2: parse YAML: more than 200000 YAML nodes with the 150008 of the parts before it" {
			t.Errorf("errors %v, want p2 refused for the node limit", errs)
		}
		if got["a"] == nil || got["c"] == nil {
			t.Errorf("p1 and p3 were not merged: %v", got)
		}
	})
	t.Run("copying", func(t *testing.T) {
		// Each part appends 10,000 bytes to one string: 7,000 parts would
		// copy 245 GB.
		parts := []seed.Part{cloudConfig("p0", "s: x\n", "")}
		add := "merge_how: dict(recurse_str)+str(append)\ns: " + strings.Repeat("x", 10_000) + "\n"
		for i := range 7000 {
			parts = append(parts, cloudConfig(fmt.Sprintf("p%d", i+1), add, ""))
		}
		_, errs := MergeParts(parts)
		if len(errs) != 2 || !strings.Contains(errs[0].Error(), "copies more than 16777216 values and bytes") || !strings.Contains(errs[1].Error(), "parts after") {
			t.Errorf("errors %v, want the copy limit", errs)
		}
	})
	t.Run("JSON patch copies", func(t *testing.T) {
		var ops []string
		for range 40 {
			ops = append(ops, `{"op":"copy","from":"/a","path":"/a/-"}`)
		}
		parts := []seed.Part{cloudConfig("p1", "a: [1]\n", ""), jsonPatch("p2", "["+strings.Join(ops, ",")+"]")}
		_, errs := MergeParts(parts)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "operation 16 (copy /a/-): the patched config would hold more than 200000 values") {
			t.Errorf("errors %v, want the size limit", errs)
		}
	})
}

func TestDefaultSpecsAreTheirSpecStrings(t *testing.T) {
	for spec, text := range map[*Spec]string{&DefaultPartSpec: "dict(replace)+list()+str()", &DefaultSpec: "list()+dict()+str()"} {
		want, err := ParseSpec(text)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, *spec); d != "" {
			t.Errorf("%s (-parsed +written out):\n%s", text, d)
		}
	}
}
