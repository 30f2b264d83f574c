package yaml11

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// builtNodes is what yaml.v3 builds for a stream: every node of every
// document it decodes before it stops, aliases counted once each.
func builtNodes(data []byte) (nodes, comments int) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		nodes++
		for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
			for _, line := range strings.Split(c, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "#") {
					comments++
				}
			}
		}
		for _, c := range n.Content {
			count(c)
		}
	}
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return
		}
		count(&doc)
	}
}

func TestScanCountsWhatYAMLBuilds(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// exact is set where the scan is meant to count exactly.
		exact bool
	}{
		{name: "empty", in: "", exact: false},
		{name: "scalar", in: "a\n", exact: true},
		{name: "block map", in: "a: 1\nb: two\nc: [x, y]\n", exact: true},
		{name: "nested block map", in: "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n", exact: true},
		{name: "block list", in: "runcmd:\n  - echo 1\n  - [sh, -c, 'echo 2']\n", exact: true},
		{name: "indentless list", in: "a:\n- 1\n- b: 2\n  c: 3\n", exact: true},
		{name: "empty values", in: "a:\nb:\n- \n-\nc: ~\n", exact: true},
		{name: "list of maps", in: "users:\n  - name: a\n    groups: [x]\n  - name: b\n", exact: true},
		{name: "flow map", in: `{"a": 1, "b": [1, 2, {"c": null}], "d": {}}`, exact: true},
		{name: "flow keys without values", in: "{a, b: , c}\n", exact: true},
		{name: "flow pairs", in: "[a: b, c: , d]\n", exact: true},
		{name: "block scalars", in: "a: |\n  line: 1\n  - [x]\n\n  # not a comment\nb: >-\n  folded\n  text\nc: |2\n    kept\n", exact: true},
		{name: "quoted", in: "a: 'it''s: [1, 2]'\nb: \"x\\\" - y\\\n  z: w\"\n", exact: true},
		{name: "multi-line plain", in: "a: one\n  two three\n  - four\n  [x]\nb: 1\n", exact: true},
		{name: "comments", in: "# head\na: 1 # line\n# foot\nb:\n  # inner\n  - x # y\n", exact: true},
		{name: "anchors and tags", in: "a: &x !!str 1\nb: *x\nc: !!map\n  d: &y\ne: !custom [1]\n", exact: true},
		{name: "merge keys", in: "a: &a {x: 1}\nb:\n  <<: *a\n  y: 2\n", exact: true},
		{name: "explicit keys", in: "? a\n: b\n? c\n? [d]\n: e\n"},
		{name: "documents", in: "---\na: 1\n...\n---\n--- b\n", exact: false},
		{name: "directive", in: "%YAML 1.1\n---\na: 1\n"},
		{name: "crlf and NEL", in: "a: 1\r\nb:\r\n  - x\r\n\u0085c: 'q\u2028r'\n"},
		{name: "tabs", in: "a:\t1\nb: [\t1,\t2]\n"},
		{name: "BOM", in: "\ufeffa: 1\nb: 2\n", exact: true},
		{name: "BOM inside", in: "a: 1\n\ufeffb: [1, 2]\n"},
		{name: "long key", in: "k" + strings.Repeat("x", 1100) + ": 1\n"},
		{name: "plain with colons", in: "url: http://x:80/a#b\ntime: 12:30:00\n", exact: true},
		{name: "plain ends at comment", in: "a: b #c: [1,2,3]\n", exact: true},
		{name: "tag with flow characters", in: "[!!str,a, !x[y] b]\n"},
		{name: "alias keys", in: "a: &k key\n*k : v\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scanStream([]byte(tc.in), 1<<30, 1<<30)
			built, comments := builtNodes([]byte(tc.in))
			if got.nodes < built {
				t.Errorf("scan counted %d nodes, yaml.v3 built %d", got.nodes, built)
			}
			if tc.exact && got.nodes != built {
				t.Errorf("scan counted %d nodes, want exactly the %d yaml.v3 built", got.nodes, built)
			}
			if got.comments < comments {
				t.Errorf("scan counted %d comments, yaml.v3 kept %d", got.comments, comments)
			}
		})
	}
}

// hostileYAML are the shapes that took 1 to 1.6 GiB before documents were
// scanned first, each at the size that does; FuzzScanBound and FuzzLoad
// start from smaller ones.
func hostileYAML(n int) map[string][]byte {
	var keys, items, flow, comments bytes.Buffer
	for i := range n {
		fmt.Fprintf(&keys, "k%07d: v\n", i)
		items.WriteString("- x\n")
		comments.WriteString("- 1 #\n")
	}
	flow.WriteString("x: [")
	flow.WriteString(strings.Repeat("1,", n))
	flow.WriteString("1]\n")
	return map[string][]byte{"map-keys": keys.Bytes(), "list-items": items.Bytes(), "flow-list": flow.Bytes(), "comments": comments.Bytes()}
}

func TestLoadRefusesBeforeParsing(t *testing.T) {
	for name, in := range hostileYAML(DefaultLimits.Nodes) {
		t.Run(name, func(t *testing.T) {
			_, err := Load(in)
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("Load of %d bytes: %v, want a limit error", len(in), err)
			}
			if !strings.Contains(err.Error(), "more than 100000 YAML comments") && !strings.Contains(err.Error(), "more than 200000 YAML nodes") {
				t.Errorf("Load: %v, want it to name the limit", err)
			}
		})
	}
}

func TestLoadLimits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		lim  Limits
		want string // "" for no error
	}{
		{name: "nodes", in: "[1, 2, 3]", lim: Limits{Nodes: 4}, want: "more than 4 YAML nodes"},
		{name: "nodes at the limit", in: "[1, 2]", lim: Limits{Nodes: 4}},
		{name: "aliases", in: "a: &a [1, 2, 3]\nb: [*a, *a]\n", lim: Limits{Nodes: 12}, want: "line 2: more than 12 YAML nodes once aliases are expanded"},
		{name: "items", in: "a: [1, 2, 3]\n", lim: Limits{Items: 2}, want: "line 1: more than 2 items in a list"},
		{name: "keys", in: "a: 1\nb: 2\nc: 3\n", lim: Limits{Keys: 2}, want: "line 1: more than 2 keys in a mapping"},
		{name: "merged keys", in: "x: &x {a: 1, b: 2}\ny: {<<: *x, c: 3}\n", lim: Limits{Keys: 2}, want: "line 2: more than 2 keys in a mapping"},
		{name: "depth", in: strings.Repeat("[", 5) + strings.Repeat("]", 5), lim: Limits{Depth: 3}, want: "more than 3 levels of nesting"},
		{name: "comments", in: "# 1\na: 1 # 2\n# 3\n", lim: Limits{Comments: 2}, want: "more than 2 YAML comments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadLimited([]byte(tc.in), tc.lim)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("LoadLimited: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadLimited: %v, want a limit error saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadLimitedCountsExpandedNodes(t *testing.T) {
	_, n, err := LoadLimited([]byte("a: &a [1, 2]\nb: *a\n"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// document, mapping, a, [1, 2] and its items, b, and *a as a copy.
	if n != 10 {
		t.Errorf("LoadLimited counted %d nodes, want 10", n)
	}
}

// FuzzScanBound holds the scan to what it promises: never fewer nodes or
// comments than yaml.v3 builds, whatever the input.
func FuzzScanBound(f *testing.F) {
	for _, s := range pyyamlCases {
		f.Add(s)
	}
	for _, in := range hostileYAML(50) {
		f.Add(string(in))
	}
	for _, s := range []string{
		"a: |\n  x\n b: [1]\n", "- - |\n   x\n [1, 2]\n", "a: 'x\n  - 1\n  '\n", "? a\n? b\n: c\n",
		"a: b\n  'c\n- [1,1]\n'\n", "{a: [b, {c: d}], e}\n", "--- |\n  x\n--- >\n y\n", "a: &x\n  - *x\n",
		"\ufeff- 1\n- 2\n", "k: v # c\n# d\n\n# e\n", "a:\n\t- 1\n", "a: \"\\\n  b\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := scanStream([]byte(in), 1<<30, 1<<30)
		built, comments := builtNodes([]byte(in))
		if got.nodes < built {
			t.Errorf("scan of %q counted %d nodes, yaml.v3 built %d", in, got.nodes, built)
		}
		if got.comments < comments {
			t.Errorf("scan of %q counted %d comments, yaml.v3 kept %d", in, got.comments, comments)
		}
	})
}
