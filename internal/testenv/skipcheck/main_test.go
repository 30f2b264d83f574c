package main

import (
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestNeedsDnsmasq"}
{"Action":"output","Package":"p","Test":"TestNeedsDnsmasq","Output":"=== RUN   TestNeedsDnsmasq\n"}
{"Action":"output","Package":"p","Test":"TestNeedsDnsmasq","Output":"    x_test.go:9: dnsmasq is not installed\n"}
{"Action":"output","Package":"p","Test":"TestNeedsDnsmasq","Output":"--- SKIP: TestNeedsDnsmasq (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestNeedsDnsmasq"}
{"Action":"run","Package":"p","Test":"TestDiffersOnPurpose"}
{"Action":"output","Package":"p","Test":"TestDiffersOnPurpose","Output":"    x_test.go:9: optional: seedinit differs here\n"}
{"Action":"skip","Package":"p","Test":"TestDiffersOnPurpose"}
{"Action":"run","Package":"p","Test":"TestFine"}
{"Action":"pass","Package":"p","Test":"TestFine"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`

// In CI a bare skip fails the run and an optional one does not; on a
// developer's machine both are reported and neither fails it.
func TestCheck(t *testing.T) {
	for _, required := range []bool{false, true} {
		var out strings.Builder
		code, err := check(strings.NewReader(stream), &out, required)
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if required != (code != 0) {
			t.Errorf("required=%v: exit %d\n%s", required, code, got)
		}
		wantBare := "skipped: p TestNeedsDnsmasq: x_test.go:9: dnsmasq is not installed"
		if required {
			wantBare = "SKIPPED IN CI: p TestNeedsDnsmasq: x_test.go:9: dnsmasq is not installed"
		}
		for _, want := range []string{wantBare, "skipped: p TestDiffersOnPurpose: x_test.go:9: optional: seedinit differs here", "ok  \tp\t0.1s"} {
			if !strings.Contains(got, want) {
				t.Errorf("required=%v: output lacks %q:\n%s", required, want, got)
			}
		}
	}
}
