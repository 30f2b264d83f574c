package merge

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// oracleCase is one input for testdata/oracle.py's "cases" mode, and what
// the Go side does with the same input.
type oracleCase struct {
	name string
	// kind "merge": Spec, Base, Add; "parts": Parts; "many": Sources.
	Kind    string       `json:"kind"`
	Spec    string       `json:"spec,omitempty"`
	Base    string       `json:"base,omitempty"`
	Add     string       `json:"add,omitempty"`
	Parts   []oraclePart `json:"parts,omitempty"`
	Sources []string     `json:"sources,omitempty"`
}

type oraclePart struct {
	CType     string `json:"ctype"`
	Content   string `json:"content"`
	MergeType string `json:"merge_type,omitempty"`
}

func mergeCase(name, spec, base, add string) oracleCase {
	return oracleCase{name: name, Kind: "merge", Spec: spec, Base: base, Add: add}
}

func cc(content, mergeType string) oraclePart {
	return oraclePart{CType: "text/cloud-config", Content: content, MergeType: mergeType}
}

func jp(content string) oraclePart {
	return oraclePart{CType: "text/cloud-config-jsonp", Content: content}
}

var oracleCases = []oracleCase{
	// The mergers alone.
	mergeCase("dict replace", "dict(replace)+list()+str()", "{a: 1, b: [1], c: {x: 1}}", "{a: 2, b: [2], c: {y: 2}, d: 4}"),
	mergeCase("dict no_replace recurses into dicts", "dict()+list()+str()", "{a: 1, c: {x: 1, z: {q: 1}}}", "{a: 2, c: {x: 9, y: 2, z: {q: 2, r: 3}}}"),
	mergeCase("dict recurse_list list()", "dict(no_replace,recurse_list)+list()", "{a: [1, 2, 3]}", "{a: [x, y]}"),
	mergeCase("dict recurse_array list(append)", "dict(recurse_array)+list(append)+str()", "{a: [1], b: s}", "{a: [2], b: t}"),
	mergeCase("dict recurse_str str(append)", "dict(recurse_str)+str(append)", "{s: foo, n: 1}", "{s: bar, n: 2}"),
	mergeCase("dict allow_delete", "dict(allow_delete)+list()+str()", "{a: 1, b: 2}", "{a: null, c: null}"),
	mergeCase("dict replace allow_delete", "dict(replace,allow_delete)", "{a: 1, b: 2}", "{a: ~, b: 3}"),
	mergeCase("dict into list", "dict(replace)", "{a: 1}", "[1, 2]"),
	mergeCase("no dict merger", "list(append)+str()", "{a: 1}", "{b: 2}"),
	mergeCase("dict recursing into null and numbers", "dict()", "{a: null, b: 5, c: true}", "{a: {x: 1}, b: {x: 1}, c: [1]}"),
	mergeCase("list append", "list(append)", "[1, 2]", "[3, {a: 1}]"),
	mergeCase("list prepend", "list(prepend)", "[1, 2]", "[3]"),
	mergeCase("list append and prepend", "list(prepend,append)", "[1]", "[2]"),
	mergeCase("list no_replace", "list(no_replace)", "[1, 2]", "[3, 4, 5]"),
	mergeCase("list replace shorter", "list()", "[1, 2, 3]", "[a]"),
	mergeCase("list replace longer", "list(replace)", "[1]", "[a, b, c]"),
	mergeCase("list replace with a scalar", "list()", "[1, 2]", "5"),
	mergeCase("list append a string", "list(append)", "[a]", "'héllo'"),
	mergeCase("list prepend a one-key mapping", "list(prepend)", "[z]", "{b: 1}"),
	mergeCase("list append a number raises", "list(append)", "[1]", "5"),
	mergeCase("list append null raises", "list(append)", "[1]", "~"),
	mergeCase("list no_replace with a string", "list(no_replace)", "[1]", "abc"),
	mergeCase("list no_replace with a mapping raises", "list(no_replace)", "[1]", "{a: 1}"),
	mergeCase("list no_replace empty with a mapping", "list(no_replace)", "[]", "{a: 1}"),
	mergeCase("list no_replace with a number raises", "list(no_replace)", "[1]", "3"),
	mergeCase("list recurse_dict", "list(recurse_dict)+dict(replace)", "[{a: 1, b: 1}, x]", "[{a: 2}]"),
	mergeCase("list recurse_list", "list(recurse_list)", "[[1, 2], 3]", "[[9]]"),
	mergeCase("list recurse_str", "list(recurse_str)+str(append)", "[a, b]", "[x, y, z]"),
	mergeCase("list recurse_str into a number", "list(recurse_str)+str(append)", "[1, b]", "[x, y]"),
	mergeCase("str replace", "str()", "old", "new"),
	mergeCase("str replace by a list", "str()", "old", "[1]"),
	mergeCase("str append", "str(append)", "old", "new"),
	mergeCase("str append a number raises", "str(append)", "old", "1"),
	mergeCase("numbers keep base", "dict(replace)+list()+str()", "1", "2"),
	mergeCase("first dict merger wins", "dict(no_replace)+dict(replace)", "{a: 1}", "{a: 2}"),
	mergeCase("m_ prefixed names", "m_dict(replace)+m_list(append)", "{a: [1]}", "{a: [2]}"),
	mergeCase("options case and dashes", "DICT(Recurse-List)+List(APPEND)", "{a: [1]}", "{a: [2]}"),
	mergeCase("unknown merger raises", "dict()+set()", "{a: 1}", "{b: 1}"),
	mergeCase("bad spec raises", "dict(", "{a: 1}", "{b: 1}"),
	mergeCase("deep mixed", "dict(no_replace,recurse_list,recurse_str)+list(recurse_dict,recurse_list)+str(append)",
		"{a: [{x: s, l: [1]}, [1, 2]], b: {c: t}}", "{a: [{x: u, l: [2, 3], n: 1}, [9]], b: {c: v, d: w}}"),

	// Parts fed straight to the cloud-config part handler.
	{name: "parts default replaces", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nruncmd: [a, b]\nhostname: one\nusers: {x: 1}", ""),
		cc("#cloud-config\nruncmd: [c]\nusers: {y: 2}", ""),
	}},
	{name: "parts merge_how string", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nruncmd: [a, b]\nwrite_files: [{path: /a}]", ""),
		cc("#cloud-config\nmerge_how: 'dict(recurse_array,no_replace)+list(append)'\nruncmd: [c]\nwrite_files: [{path: /b}]\nhostname: h", ""),
	}},
	{name: "parts merge_how list", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\npackages: [a]\nntp: {servers: [x]}", ""),
		cc("#cloud-config\nmerge_how:\n - name: list\n   settings: [prepend]\n - name: dict\n   settings: [no_replace, recurse_list]\npackages: [b]\nntp: {servers: [y], enabled: true}", ""),
	}},
	{name: "parts merge_how list settings string", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\npackages: [a]", ""),
		cc("#cloud-config\nmerge_how: [{name: dict, settings: 'no_replace,recurse_list'}, [list, append]]\npackages: [b]", ""),
	}},
	{name: "parts merge_type key", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\npackages: [a]", ""),
		cc("#cloud-config\nmerge_type: 'dict(recurse_list)+list(append)'\npackages: [b]", ""),
	}},
	{name: "parts merge_type kept next to merge_how", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nmerge_how: 'dict(replace)'\nmerge_type: 'list()'\na: 1", ""),
	}},
	{name: "parts header", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\npackages: [a]\ns: x", ""),
		cc("#cloud-config\npackages: [b]\ns: y", "dict(recurse_array,recurse_str)+list(append)+str(append)"),
	}},
	{name: "parts header and document", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\npackages: [a]\ns: x", ""),
		cc("#cloud-config\nmerge_how: 'dict(recurse_array,recurse_str)+list(prepend)'\npackages: [b]\ns: y", "list(append)+str(append)"),
	}},
	{name: "parts spec without dict drops the part", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: 1", ""),
		cc("#cloud-config\nmerge_how: 'list(append)+str()'\nb: 2", ""),
	}},
	{name: "parts bad yaml, empty, list and bad spec are skipped", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: 1", ""),
		cc("#cloud-config\nb: [1\nc: 2\n", ""),
		cc("#cloud-config\n", ""),
		cc("#cloud-config\n- x\n", ""),
		cc("#cloud-config\nmerge_how: nope\nd: 1", ""),
		cc("#cloud-config\ne: 1", "dict()+bogus()"),
		cc("#cloud-config\nf: 1", ""),
	}},
	{name: "parts merge that raises is skipped", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\ns: abc\nl: [1]", ""),
		cc("#cloud-config\nmerge_how: 'dict(recurse_list)+str(append)'\ns: [1]\nx: 1", ""),
		cc("#cloud-config\nmerge_how: 'dict(recurse_list)+list(append)'\nl: abc\ny: 1", ""),
	}},
	{name: "parts jsonp", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nruncmd: [a]\nhostname: h\nusers: [{name: u}]", ""),
		jp(`#cloud-config-jsonp
[
 {"op": "add", "path": "/runcmd/-", "value": "b"},
 {"op": "add", "path": "/runcmd/0", "value": "first"},
 {"op": "remove", "path": "/hostname"},
 {"op": "replace", "path": "/users/0/name", "value": "v"},
 {"op": "copy", "from": "/users/0", "path": "/users/-"},
 {"op": "move", "from": "/runcmd/1", "path": "/moved"},
 {"op": "test", "path": "/moved", "value": "a"},
 {"op": "add", "path": "/a~1b", "value": {"x~y": [1, 2.5, true, null]}}
]`),
	}},
	{name: "parts jsonp first", Kind: "parts", Parts: []oraclePart{
		jp("  \n#cloud-config-jsonp\n[{\"op\": \"add\", \"path\": \"/a\", \"value\": 1}]"),
		cc("#cloud-config\nb: 2", ""),
	}},
	{name: "parts failing jsonp changes nothing", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: 1\nl: [1, 2]", ""),
		jp(`[{"op": "add", "path": "/b", "value": 1}, {"op": "remove", "path": "/zzz"}]`),
		jp(`[{"op": "add", "path": "/l/5", "value": 1}]`),
		jp(`[{"op": "replace", "path": "/nope", "value": 1}]`),
		jp(`[{"op": "test", "path": "/a", "value": 2}]`),
		jp(`[{"op": "move", "from": "/l", "path": "/l/0"}]`),
		jp(`{"op": "add", "path": "/c", "value": 1}`),
		jp(`[{"op": "add", "path": "/c"}]`),
		jp(`[{"op": "frob", "path": "/c"}]`),
		jp(`not json`),
	}},
	{name: "parts jsonp quirks", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nl: [a, b, c]\ns: hello\nm: {'-': 1}\nn: 1", ""),
		jp(`[{"op": "add", "path": "/l/01", "value": "x"}]`),
		jp(`[{"op": "copy", "from": "/s/1", "path": "/ch"}]`),
		jp(`[{"op": "test", "path": "/s/0", "value": "h"}, {"op": "add", "path": "/t1", "value": true}]`),
		jp(`[{"op": "test", "path": "/n", "value": 1.0}, {"op": "add", "path": "/t2", "value": true}]`),
		jp(`[{"op": "test", "path": "/n", "value": true}, {"op": "add", "path": "/t3", "value": true}]`),
		jp(`[{"op": "replace", "path": "/m/-", "value": 2}]`),
		jp(`[{"op": "add", "path": "/m/-", "value": 3}]`),
		jp(`[{"op": "add", "path": "/dup", "value": 1, "value": 2}]`),
		jp(`[]`),
		jp(`{}`),
		jp(`[{"op": "add", "path": "/big", "value": [1e400, -0.0, 1E-7, 123456789012345678]}]`),
	}},
	{name: "parts jsonp replaces the root", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: 1", ""),
		jp(`[{"op": "replace", "path": "", "value": {"r": 1}}]`),
		cc("#cloud-config\nb: 2", ""),
	}},
	{name: "parts jsonp replaces the root with a list", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: 1", ""),
		jp(`[{"op": "add", "path": "", "value": [1, 2]}]`),
	}},
	{name: "parts yaml 1.1 scalars", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: yes\nb: off\nc: 0644\nd: 0o644\ne: 1_000\nf: 1:20\ng: 1e3\nh: 1.5e+3\ni: y\nj: ~\nk: '0644'\n1: one\ntrue: t\n", ""),
		cc("#cloud-config\nmerge_how: 'dict(no_replace)'\na: no\nl: NULL\n", ""),
	}},
	{name: "parts jsonp through an alias changes both places", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\na: &x {k: 1}\nb: *x\nl: &l [1]\nm: [*l, *l]\n", ""),
		jp(`[{"op": "add", "path": "/a/z", "value": 2}, {"op": "add", "path": "/m/0/-", "value": 3}]`),
	}},
	{name: "parts anchors and merge keys", Kind: "parts", Parts: []oraclePart{
		cc("#cloud-config\nbase: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\nlist: [*b, *b]\n", ""),
	}},

	// mergemanydict.
	{name: "many earlier wins", Kind: "many", Sources: []string{
		"{hostname: user, runcmd: [u], users: {a: 1}}",
		"{hostname: vendor, runcmd: [v], users: {a: 2, b: 2}, ntp: {enabled: true}}",
		"{hostname: system, locale: C}",
	}},
	{name: "many merge_how of a later source", Kind: "many", Sources: []string{
		"{runcmd: [u]}",
		"{merge_how: 'dict(recurse_array)+list(append)', runcmd: [v]}",
	}},
	{name: "many merge_how of the first source", Kind: "many", Sources: []string{
		"{merge_how: 'list(append)', a: 1}",
		"{b: 2}",
	}},
	{name: "many merge_how list and merge_type", Kind: "many", Sources: []string{
		"{a: [1], s: x}",
		"{merge_how: [{name: dict, settings: [recurse_list, recurse_str]}, {name: list, settings: [prepend]}, {name: str, settings: [append]}], merge_type: 'keep me', a: [2], s: y}",
	}},
	{name: "many empty sources", Kind: "many", Sources: []string{"", "{}", "{a: 1}"}},
}

// TestAgainstCloudInitMergers runs each case through cloud-init's own
// mergers (testdata/oracle.py) and through this package, and compares.
// Where cloud-init raises, Go must return an error (parts: leave the part
// out, which the merged result shows).
func TestAgainstCloudInitMergers(t *testing.T) {
	answer := runOracle(t, map[string]any{"mode": "cases", "cases": oracleCases})
	results := answer.(map[string]any)["results"].([]any)
	if len(results) != len(oracleCases) {
		t.Fatalf("oracle answered %d cases, want %d", len(results), len(oracleCases))
	}
	for i, tc := range oracleCases {
		t.Run(tc.name, func(t *testing.T) {
			py := results[i].(map[string]any)
			got, err := runGoCase(t, tc)
			if pyErr, raised := py["error"]; raised {
				if err == nil {
					t.Fatalf("cloud-init raised %v, Go returned %s", pyErr, pyJSON(got))
				}
				t.Logf("both fail: cloud-init %v; Go %v", pyErr, err)
				return
			}
			if err != nil {
				t.Fatalf("Go failed (%v), cloud-init returned %v", err, py["ok"])
			}
			if diff := cmp.Diff(py["ok"], canonical(t, got)); diff != "" {
				t.Errorf("differs from cloud-init (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func runGoCase(t *testing.T, tc oracleCase) (any, error) {
	t.Helper()
	switch tc.Kind {
	case "merge":
		spec, err := ParseSpec(tc.Spec)
		if err != nil {
			return nil, err
		}
		return Merge(spec, y(t, tc.Base), y(t, tc.Add))
	case "parts":
		var parts []seed.Part
		for i, p := range tc.Parts {
			kind := seed.KindCloudConfig
			if p.CType == "text/cloud-config-jsonp" {
				kind = seed.KindJSONPatch
			}
			parts = append(parts, seed.Part{
				Kind: kind, ContentType: p.CType, Content: []byte(p.Content), MergeHow: p.MergeType,
				Source: fmt.Sprintf("part %d", i),
			})
		}
		got, errs := MergeParts(parts)
		for _, err := range errs {
			t.Logf("left out: %v", err)
		}
		return got, nil
	case "many":
		var sources []map[string]any
		for _, s := range tc.Sources {
			v, err := yaml11.Load([]byte(s))
			if err != nil {
				t.Fatalf("source %q: %v", s, err)
			}
			m, _ := v.(map[string]any)
			sources = append(sources, m)
		}
		return MergeMany(sources...), nil
	}
	t.Fatalf("unknown case kind %q", tc.Kind)
	return nil, nil
}
