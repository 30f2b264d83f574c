// Package testenv is how a test says it cannot run here. On a developer's
// machine a test that needs root, a tool (cloud-init, dnsmasq, swtpm,
// QEMU), a kernel feature or a namespace skips, saying what is missing;
// in CI, which installs all of them and runs as root, .ci/run sets
// SEEDINIT_TEST_REQUIRE=1 and such a skip fails the test instead, so that
// a missing install step cannot pass green. A skip that is no missing
// requirement (a case where seedinit differs from cloud-init on purpose)
// says so with SkipOptional, which CI lets be; internal/testenv/skipcheck
// fails CI on any other skip, a bare t.Skip included.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the variable CI sets to 1: every requirement is there.
const RequireEnv = "SEEDINIT_TEST_REQUIRE"

// OptionalPrefix starts the message of a skip CI accepts.
const OptionalPrefix = "optional: "

// Required reports whether this run must have every requirement.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Skip skips t because something it needs is missing here; in CI it
// fails t with the same reason.
func Skip(t testing.TB, args ...any) {
	t.Helper()
	skip(t, fmt.Sprint(args...))
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	skip(t, fmt.Sprintf(format, args...))
}

func skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("required in CI (%s=1), but cannot run: %s", RequireEnv, reason)
	}
	t.Skip(reason)
}

// SkipOptional skips t for a reason that is no missing requirement, in CI
// too.
func SkipOptional(t testing.TB, args ...any) {
	t.Helper()
	t.Skip(OptionalPrefix + fmt.Sprint(args...))
}

// NeedRoot skips t (fails it in CI) unless it runs as root; why says what
// root is needed for.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skipf(t, "needs root: %s", why)
	}
}

// NeedCommand returns the path of the program name, or skips t (fails it
// in CI), with install saying where it comes from.
func NeedCommand(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skipf(t, "%s is not installed (%s)", name, install)
	}
	return p
}
