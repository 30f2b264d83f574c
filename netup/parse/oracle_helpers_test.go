package parse

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/render"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The datasource tests (EC2, Azure, Vultr, DigitalOcean) check our
// parsers against cloud-init itself: each feeds its fixtures to a Python
// script that calls cloud-init's converter, then compares documents and
// renders. What follows is the part they share; each keeps its own
// fixture type, script and result type, as those differ.

// readFixtures decodes every testdata/<dir>/*.json into a T, keyed by the
// file's name without .json, which the tests use as the subtest name.
// A folder without fixtures fails the test: a comparison over nothing
// would pass without checking anything.
func readFixtures[T any](t testing.TB, dir string) map[string]T {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures under testdata/%s (%v)", dir, err)
	}
	out := map[string]T{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f T
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("decode %s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = f
	}
	return out
}

// cloudInitPython returns /usr/bin/python3 when it can import cloudinit.
func cloudInitPython(t testing.TB) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/python3 not found")
	}
	if err := exec.Command(py, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle unavailable: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init package)")
	}
	return py
}

// runOracle runs script with cloud-init's Python (skipping the test when
// there is none), input as JSON on stdin and args as sys.argv[1:], and
// decodes its JSON stdout into out. what names the cloud-init function
// the script calls, so that a failure says whose failure it is; the
// script's stderr, where Python writes its traceback, goes into the
// message. The timeout keeps a wedged interpreter from hanging the test.
func runOracle(t *testing.T, what, script string, input, out any, args ...string) {
	t.Helper()
	py := cloudInitPython(t)
	stdin, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", script}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run cloud-init's %s: %v\n%s", what, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("decode the oracle's output: %v\n%s", err, stdout.String())
	}
}

// asJSON gives a value the shape encoding/json decodes it to, so that our
// int64 and cloud-init's numbers compare equal.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// cmpEmptyEqual makes nil and empty lists equal: an empty order is the
// same answer whether it comes out of JSON as [] or from us as nil.
var cmpEmptyEqual = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(_, _ []string) bool { return true }))

// parseCloudInitConfig reads the document cloud-init built (network
// config version "v1" or "v2") with our own parser, so that its model can
// be rendered beside the one our datasource parser builds.
func parseCloudInitConfig(t *testing.T, version string, config map[string]any, opts Options) *model.Network {
	t.Helper()
	doc, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := YAML(doc, opts)
	if err != nil {
		t.Fatalf("parse cloud-init's %s config: %v", version, err)
	}
	return theirs
}

// compareRenders checks that the model built from cloud-init's document
// (theirs) and ours render the same ENI, networkd and netplan files:
// what lands on the machine is what must match, whatever the models'
// inner differences.
func compareRenders(t *testing.T, theirs, ours *model.Network) {
	t.Helper()
	w, werr := render.ENIContent(theirs)
	g, gerr := render.ENIContent(ours)
	if werr != nil || gerr != nil {
		t.Fatalf("render eni: cloud-init's config: %v, ours: %v", werr, gerr)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("ENI differs (-cloud-init's config +seedinit's):\n%s", diff)
	}
	for kind, fn := range map[string]func(*model.Network) (render.Files, error){"networkd": render.Networkd, "netplan": render.Netplan} {
		w, werr := fn(theirs)
		g, gerr := fn(ours)
		if werr != nil || gerr != nil {
			t.Fatalf("render %s: cloud-init's config: %v, ours: %v", kind, werr, gerr)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s differs (-cloud-init's config +seedinit's):\n%s", kind, diff)
		}
	}
}

// forEachOracleAnswer reads the fixtures of testdata/<dir>, asks
// cloud-init about all of them in one run of the oracle (one Python start
// rather than one a fixture), and checks each in a subtest named after
// its file, with cloud-init's answer for it. A folder under eight
// fixtures fails the test, so that losing fixtures cannot pass unnoticed.
func forEachOracleAnswer[F, A any](t *testing.T, dir string, askOracle func(*testing.T, map[string]F) map[string]A, check func(t *testing.T, fixture F, answer A)) {
	t.Helper()
	fixtures := readFixtures[F](t, dir)
	if len(fixtures) < 8 {
		t.Fatalf("%d fixtures, want at least 8", len(fixtures))
	}
	answers := askOracle(t, fixtures)
	for name, fixture := range fixtures {
		t.Run(name, func(t *testing.T) {
			answer, ok := answers[name]
			if !ok {
				t.Fatal("no answer from the oracle")
			}
			check(t, fixture, answer)
		})
	}
}

// checkErrorsMention wants err to mention each of want. An error when
// want is empty passes: the caller decides whether that is allowed.
func checkErrorsMention(t *testing.T, err error, want []string) {
	t.Helper()
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error = %v, want it to mention %q", err, w)
		}
	}
}

// checkBadItemInterfaces checks the network a parser built from metadata
// with unusable items: none when wantNil, else one that still configures
// wantIface, by name and in order. It says whether there is a network
// left to check further.
func checkBadItemInterfaces(t *testing.T, n *model.Network, wantIface []string, wantNil bool) bool {
	t.Helper()
	if wantNil {
		if n != nil {
			t.Errorf("network = %+v, want nil", n)
		}
		return false
	}
	if n == nil {
		t.Fatal("network is nil")
	}
	var names []string
	for _, iface := range n.Interfaces {
		names = append(names, iface.Name)
	}
	if diff := cmp.Diff(wantIface, names); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
	return true
}
