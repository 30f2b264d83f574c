// Command skipcheck reads `go test -json` on its input and prints what
// `go test` would (each package's result, the output of each test that
// failed) and every skip with its reason. With SEEDINIT_TEST_REQUIRE=1
// (CI) a skip that testenv.SkipOptional did not make fails the run: a
// bare t.Skip in CI means a test did not run that the README says CI
// runs. It exits non-zero when a test failed or such a skip was seen.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/internal/testenv"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

func main() {
	code, err := check(os.Stdin, os.Stdout, testenv.Required())
	if err != nil {
		fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func check(in io.Reader, out io.Writer, required bool) (int, error) {
	output := map[key][]string{}
	var skipped, failed []key
	code := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// go test's own messages (a build failure) are not JSON.
			fmt.Fprintln(out, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			code = 1
		case "output":
			if e.Test == "" {
				// The package's lines: "ok", "FAIL", "--- FAIL" summaries.
				fmt.Fprint(out, e.Output)
				continue
			}
			output[k] = append(output[k], e.Output)
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, k)
			}
		case "fail":
			code = 1
			if e.Test != "" {
				failed = append(failed, k)
			}
		case "pass":
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return 1, err
	}
	for _, k := range failed {
		fmt.Fprintf(out, "\n=== FAIL %s %s\n%s", k.pkg, k.test, strings.Join(output[k], ""))
	}
	sort.Slice(skipped, func(i, j int) bool {
		return skipped[i].pkg+" "+skipped[i].test < skipped[j].pkg+" "+skipped[j].test
	})
	var refused int
	for _, k := range skipped {
		reason := skipReason(output[k])
		verdict := "skipped"
		if required && !strings.Contains(reason, testenv.OptionalPrefix) {
			verdict = "SKIPPED IN CI"
			refused++
		}
		fmt.Fprintf(out, "%s: %s %s: %s\n", verdict, k.pkg, k.test, reason)
	}
	if refused > 0 {
		fmt.Fprintf(out, "\nskipcheck: %d test(s) skipped where CI must run them (%s=1); only testenv.SkipOptional may skip here\n", refused, testenv.RequireEnv)
		code = 1
	}
	return code, nil
}

// skipReason is what a skipped test said, its "--- SKIP" line aside.
func skipReason(lines []string) string {
	var said []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		said = append(said, l)
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " | ")
}
