package known

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

const schemaPath = "/usr/lib/python3/dist-packages/cloudinit/config/schemas/schema-cloud-config-v1.json"

// TestKnownKeysMatchSchema reads the installed cloud-init's schema and
// collects the top-level properties the way its validator composes them
// (allOf of $defs references).
func TestKnownKeysMatchSchema(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		testenv.Skipf(t, "cloud-init's schema is not installed (%v); install Debian's cloud-init package to compare", err)
	}
	type node struct {
		Properties map[string]json.RawMessage `json:"properties"`
		AllOf      []json.RawMessage          `json:"allOf"`
	}
	var schema struct {
		node
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("decode %s: %v", schemaPath, err)
	}
	keys := map[string]bool{}
	var walk func(n node)
	walk = func(n node) {
		for k := range n.Properties {
			keys[k] = true
		}
		for _, raw := range n.AllOf {
			var ref struct {
				Ref string `json:"$ref"`
			}
			var sub node
			if json.Unmarshal(raw, &ref) == nil && ref.Ref != "" {
				name := ref.Ref[strings.LastIndex(ref.Ref, "/")+1:]
				if err := json.Unmarshal(schema.Defs[name], &sub); err != nil {
					t.Fatalf("decode $defs/%s: %v", name, err)
				}
			} else if err := json.Unmarshal(raw, &sub); err != nil {
				t.Fatalf("decode allOf item: %v", err)
			}
			walk(sub)
		}
	}
	walk(schema.node)
	var want []string
	for k := range keys {
		want = append(want, k)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, KnownKeys); diff != "" {
		t.Errorf("KnownKeys differ from %s (-schema +ours):\n%s", schemaPath, diff)
	}
}

func TestIsKnown(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{{"ntp", true}, {"ca-certs", true}, {"runcmd", true}, {"ntpp", false}, {"", false}} {
		t.Run(tc.key, func(t *testing.T) {
			if got := IsKnown(tc.key); got != tc.want {
				t.Errorf("IsKnown(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}
