package ds

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

// cloudInitPython returns /usr/bin/python3 when it can import cloudinit
// (the Debian package is the oracle), else skips.
func cloudInitPython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skipf(t, "cloud-init is not importable by %s (install Debian's cloud-init package): %v", python, err)
	}
	return python
}

// runOracle runs a Python snippet that prints JSON and decodes it.
func runOracle(t *testing.T, python, script string, args ...string) any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(python, append([]string{"-c", script}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cloud-init oracle: %v\n%s", err, stderr.String())
	}
	var out any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("cloud-init oracle printed %q: %v", stdout.String(), err)
	}
	return out
}

// TestEC2CrawlMatchesCloudInit crawls the fixture IMDS with cloud-init's
// own ec2 helper and with ours: the trees must be the same.
func TestEC2CrawlMatchesCloudInit(t *testing.T) {
	python := cloudInitPython(t)
	imds := newFakeIMDS(t, "ec2/imds.json")
	srv := httptest.NewServer(imds)
	defer srv.Close()

	const script = `
import json, sys
from cloudinit.sources.helpers import ec2
md = ec2.get_instance_metadata("2021-03-23", sys.argv[1], timeout=5, retries=0)
print(json.dumps(md))
`
	want := runOracle(t, python, script, srv.URL)

	session := newIMDSSession(newMetadataClient(testEnv(srv.URL, nil, nil), "Ec2"), srv.URL, imdsNoToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := session.crawl(ctx, "2021-03-23/meta-data/")
	if err != nil {
		t.Fatal(err)
	}
	// Compare through JSON so both sides have the same types.
	raw, _ := json.Marshal(got)
	var gotJSON any
	json.Unmarshal(raw, &gotJSON)
	if diff := cmp.Diff(want, gotJSON); diff != "" {
		t.Errorf("crawled tree (-cloud-init +seedinit):\n%s", diff)
	}
}

// TestGCEKeysMatchCloudInit compares the ssh-keys filter with cloud-init's
// _parse_public_keys on the same lines.
func TestGCEKeysMatchCloudInit(t *testing.T) {
	python := cloudInitPython(t)
	lines := []string{
		"cloudinit:ssh-ed25519 AAAA1 one",
		"debian:ssh-ed25519 AAAA2 two",
		"bob:ssh-ed25519 AAAA3 three",
		"no-colon-here",
		`debian:ssh-rsa AAAA4 google-ssh {"userName":"d@example.com","expireOn":"2018-01-01T00:00:00+0000"}`,
		`debian:ssh-rsa AAAA5 google-ssh {"userName":"d@example.com","expireOn":"2099-01-01T00:00:00+0000"}`,
		`cloudinit:ssh-rsa AAAA6 google-ssh {"expireOn":"2018-01-01T00:00:00Z"}`,
		`cloudinit:ssh-rsa AAAA7 google-ssh not-json`,
		"debian:",
	}
	const script = `
import json, sys
from cloudinit.sources.DataSourceGCE import _parse_public_keys
print(json.dumps(_parse_public_keys(json.loads(sys.argv[1]), "debian")))
`
	in, _ := json.Marshal(lines)
	want := runOracle(t, python, script, string(in))
	got := []any{}
	for _, k := range gceKeysFor(lines, "debian", time.Now()) {
		got = append(got, k)
	}
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("GCE keys (-cloud-init +seedinit):\n%s\ninput:\n%s", diff, strings.Join(lines, "\n"))
	}
}
