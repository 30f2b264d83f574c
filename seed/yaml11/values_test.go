package yaml11

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

type namedMap map[string]any

func TestKindTypeNameTruthy(t *testing.T) {
	tests := []struct {
		name     string
		in       any
		kind     string
		typeName string
		truthy   bool
	}{
		{"null", nil, "null", "null", false},
		{"empty string", "", "string", "a string", false},
		{"string", "x", "string", "a string", true},
		{"false", false, "boolean", "a boolean", false},
		{"true", true, "boolean", "a boolean", true},
		{"zero", int64(0), "integer", "an integer", false},
		{"int", 3, "integer", "an integer", true},
		{"big int", uint64(1 << 63), "integer", "an integer", true},
		{"zero float", 0.0, "number", "a number", false},
		{"float", 0.5, "number", "a number", true},
		{"empty list", []any{}, "list", "a list", false},
		{"list", []any{nil}, "list", "a list", true},
		{"string list", []string{"a"}, "list", "a list", true},
		{"empty mapping", map[string]any{}, "mapping", "a mapping", false},
		{"named mapping", namedMap{"a": 1}, "mapping", "a mapping", true},
		{"other", struct{}{}, "struct {}", "struct {}", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := []any{Kind(tc.in), TypeName(tc.in), Truthy(tc.in)}
			want := []any{tc.kind, tc.typeName, tc.truthy}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Kind, TypeName, Truthy (-want +got):\n%s", diff)
			}
		})
	}
}
