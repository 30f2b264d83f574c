package stages

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// TestCloudConfigTextReadsBack: cloud-config.txt is read again (schema
// --system), so what it says must load as the config it was written from.
func TestCloudConfigTextReadsBack(t *testing.T) {
	tests := []string{
		"a: 1\n",
		"runcmd:\n  - [sh, -c, 'echo \"hi\"']\n  - echo 2\nusers:\n  - default\n  - name: x\n    groups: [a, b]\n    ssh_authorized_keys: []\n",
		"write_files:\n  - path: /a\n    content: |\n      line 1\n        indented\n\n      last\n    permissions: '0644'\n",
		"s: |2-\n    leading spaces\n  tail\n",
		"odd: ['yes', 'no', '0644', '1e3', '', '~', 'null', ' x', 'a: b', '- c', '#d', '{}', '[]', 'true']\n",
		"'key: with colon': 1\n\"multi\\nline key\": 2\n'': empty\n'yes': quoted key\n",
		"nested: {a: {b: {c: [[1, [2, {}]], {d: null}]}}}\n",
		"n: [1, -2, 3.5, .inf, -.inf, true, false, null, 0x10, 012]\n",
		"u: \"\\u2028 \\x85 \\t tab \\u00e9\"\n",
	}
	for i, in := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, err := yaml11.Load([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			text := cloudConfigText(want.(map[string]any))
			if !strings.HasPrefix(string(text), "#cloud-config\n") {
				t.Fatalf("no #cloud-config line:\n%s", text)
			}
			got, err := yaml11.Load(text)
			if err != nil {
				t.Fatalf("written config does not load: %v\n%s", err, text)
			}
			if diff := cmp.Diff(want, got, cmpNaN); diff != "" {
				t.Errorf("read back differs (-want +got):\n%s\n%s", diff, text)
			}
		})
	}
}

var cmpNaN = cmp.Comparer(func(a, b float64) bool { return a == b || a != a && b != b })

// FuzzCloudConfigText: whatever config a cloud-config loads as, it is
// written so that it loads the same.
func FuzzCloudConfigText(f *testing.F) {
	f.Add("a: [1, {b: 'x\n  y'}]\n")
	f.Add("? |\n  k\n: v\n")
	f.Fuzz(func(t *testing.T, in string) {
		v, err := yaml11.Load([]byte(in))
		cfg, ok := v.(map[string]any)
		if err != nil || !ok || len(cfg) == 0 {
			return
		}
		text := cloudConfigText(cfg)
		got, err := yaml11.Load(text)
		if err != nil {
			t.Fatalf("written config does not load: %v\n%s", err, text)
		}
		if diff := cmp.Diff(v, got, cmpNaN); diff != "" {
			t.Errorf("read back differs (-want +got):\n%s\n%s", diff, text)
		}
	})
}
