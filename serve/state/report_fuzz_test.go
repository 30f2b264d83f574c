package state

import (
	"os"
	"testing"
)

// FuzzParseReport: a report is any client's POST body. Whatever it is,
// ParseReport returns, and keeps no more than its caps.
func FuzzParseReport(f *testing.F) {
	if b, err := os.ReadFile("../../apply/stages/testdata/status/error.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"status": "done", "errors": []}`))
	f.Add([]byte(`{"v1": {"datasource": null, "init": {"start": 1, "finished": null, "errors": ["x"]}, "seedinit_trust": {"policy": "require"}}}`))
	f.Add([]byte(`{"status": "running"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		errs, _, err := ParseReport(body)
		if err != nil && errs != nil {
			t.Errorf("errors %q beside the failure %v", errs, err)
		}
		if len(errs) > maxErrors {
			t.Errorf("%d errors kept, more than %d", len(errs), maxErrors)
		}
		for _, e := range errs {
			if len(e) > maxErrorLen+len("…") {
				t.Errorf("an error of %d bytes kept", len(e))
			}
		}
	})
}
