package stages

import "testing"

// Sensitive keys are redacted wherever they stand, not only at the top.
func TestRedactedAtAnyDepth(t *testing.T) {
	data := map[string]any{
		"sensitive_keys": []any{"merged_cfg", "security-credentials"},
		"merged_cfg":     map[string]any{"password": "x"},
		"ds": map[string]any{"meta_data": map[string]any{
			"iam":      map[string]any{"security-credentials": map[string]any{"SecretAccessKey": "s"}},
			"hostname": "h",
		}},
	}
	r := Redacted(data)
	if r["merged_cfg"] != "redacted for non-root user" {
		t.Errorf("merged_cfg = %v", r["merged_cfg"])
	}
	md := r["ds"].(map[string]any)["meta_data"].(map[string]any)
	if md["iam"].(map[string]any)["security-credentials"] != "redacted for non-root user" || md["hostname"] != "h" {
		t.Errorf("meta_data = %v", md)
	}
	if data["merged_cfg"].(map[string]any)["password"] != "x" {
		t.Error("Redacted changed its input")
	}
}
