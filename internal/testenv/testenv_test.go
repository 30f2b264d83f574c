package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The helper's own behaviour is seen from a child test binary, where a
// skip that must fail can fail without failing this run.
func TestSkipFailsWhenRequired(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		Skip(t, "no frobnicator here")
		return
	}
	if os.Getenv("TESTENV_CHILD") == "optional" {
		SkipOptional(t, "differs on purpose")
		return
	}
	for _, tc := range []struct {
		child, require string
		fails          bool
		says           string
	}{
		{"1", "", false, "--- SKIP"},
		{"1", "1", true, "required in CI (SEEDINIT_TEST_REQUIRE=1), but cannot run: no frobnicator here"},
		{"optional", "1", false, "optional: differs on purpose"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipFailsWhenRequired$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD="+tc.child, RequireEnv+"="+tc.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fails || !strings.Contains(string(out), tc.says) {
			t.Errorf("child %s with %s=%q: err %v, want failure %v saying %q:\n%s", tc.child, RequireEnv, tc.require, err, tc.fails, tc.says, out)
		}
	}
}
