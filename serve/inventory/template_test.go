package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func testFacts(name string) (string, error) {
	switch name {
	case "index":
		return "7", nil
	case "mac":
		return "52:54:00:aa:00:07", nil
	case "serial":
		return "Cz12", nil
	}
	return "", fmt.Errorf("no %s", name)
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"waf-{{ index | pad 3 }}", "waf-007", ""},
		{"{{index}}-{{ index|pad 2 }}", "7-07", ""},
		{"{{ mac | nocolons | upper }}", "525400AA0007", ""},
		{"{{ mac | nocolons | last 4 }}.lab", "0007.lab", ""},
		{"{{ serial | lower }}", "cz12", ""},
		{`{{ "{{" }} literal`, "{{ literal", ""},
		{`{{ "a|b" | upper }}`, "A|B", ""},
		{"{{ index", "", `no "}}" closes it`},
		{"a }} b", "", `"}}" without "{{"`},
		{"{{ }}", "", "empty"},
		{"{{ colour }}", "", `unknown fact "colour"`},
		{"{{ index | pad }}", "", "takes a number"},
		{"{{ index | pad 1000 }}", "", "from 1 to 64"},
		{"{{ index | shout }}", "", `unknown filter "shout"`},
		{"{{ index | }}", "", "no filter after it"},
		{"{{ pool.m.size }}", "", "not .size"},
		{"{{ system-uuid }}", "", "no system-uuid"},
	} {
		tmpl, err := parseTemplate(tc.in)
		var got string
		if err == nil {
			got, err = tmpl.fill(testFacts)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"waf-{{ index | pad 3 }}", `{{ "}}" }}`, "{{ mac | nocolons | last 4 }}", "{{", "}}", "a{{b}}c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := parseTemplate(s)
		if err != nil {
			return
		}
		out, err := tmpl.fill(func(string) (string, error) { return "x", nil })
		if err != nil {
			t.Fatalf("fill %q: %v", s, err)
		}
		if !hasTemplate(s) && out != s {
			t.Fatalf("%q without a template filled to %q", s, out)
		}
	})
}

// yamlValues are what MarshalYAML must write so that they read back the
// same: strings YAML 1.1 would take for something else included.
var yamlValues = map[string]any{
	"bools":    []any{"yes", "no", "on", "off", "y", "n", "true", "True", true, false},
	"numbers":  []any{"0644", "1_000", "1:20", "1e3", "0x1f", ".5", int64(0644), int64(-3), 1.5, 3.0, 1e21},
	"nulls":    []any{"", "~", "null", nil},
	"text":     "line one\nline two\n\ttabbed \"quoted\" 'single' #not a comment: <&>\n",
	"unicode":  "héllo ✓ \u2028",
	"date":     "2026-11-28",
	"empty":    map[string]any{},
	"list":     []any{},
	"nested":   []any{map[string]any{"a": []any{map[string]any{}, []any{"x"}}}, []any{[]any{"deep"}}},
	"key: odd": map[string]any{"yes": "key", "0644": 1.0, "- dash": "x", "#hash": "y", "": "empty key"},
}

func TestMarshalYAMLRoundTrip(t *testing.T) {
	out := MarshalYAML(yamlValues)
	back, err := yaml11.Load(out)
	if err != nil {
		t.Fatalf("load %s: %v", out, err)
	}
	if diff := cmp.Diff(any(yamlValues), back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\n%s", diff, out)
	}
}

// PyYAML, cloud-init's reader, reads what MarshalYAML writes as yaml11
// does.
func TestMarshalYAMLPyYAML(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import yaml").Run(); err != nil {
		testenv.Skipf(t, "python3 with PyYAML (Debian's python3-yaml, which cloud-init needs) is not there: %v", err)
	}
	out := MarshalYAML(yamlValues)
	cmd := exec.Command(python, "-c", `import json, sys, yaml
v = yaml.safe_load(sys.stdin)
print(json.dumps(v, sort_keys=True))`)
	cmd.Stdin = strings.NewReader(string(out))
	got, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("PyYAML: %v\n%s\n%s", err, ee.Stderr, out)
		}
		t.Fatal(err)
	}
	// Compared as JSON: both sides' numbers become float64.
	var py, want any
	if err := json.Unmarshal(got, &py); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(yamlValues)
	json.Unmarshal(wantJSON, &want)
	if diff := cmp.Diff(want, py); diff != "" {
		t.Errorf("PyYAML read (-want +got):\n%s\n%s", diff, out)
	}
}
