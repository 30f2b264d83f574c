package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

// oracleScript runs cloud-init's own validate_cloudconfig_file, the
// function behind `cloud-init schema --config-file F`, over many files in
// one Python process (one `cloud-init schema` per file would cost a
// second each on this machine), and prints accept/reject and the message.
const oracleScript = `
import sys, json, io, contextlib
from cloudinit.config import schema
s = schema.get_schema()
out = {}
for f in sys.argv[1:]:
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            schema.validate_cloudconfig_file(f, s, annotate=False)
        out[f] = {"valid": True, "msg": ""}
    except schema.SchemaValidationError as e:
        out[f] = {"valid": False, "msg": str(e)}
    except RuntimeError as e:
        out[f] = {"valid": False, "msg": str(e)}
print(json.dumps(out))
`

// messageDifferences are the corpus files where seedinit and cloud-init
// agree on accept/reject but word the message differently, and why.
// There is no file where they disagree on accept/reject.
var messageDifferences = map[string]string{
	// PyYAML and libyaml word a syntax error differently and place it at
	// a different column; both reject the file at the same line.
	"invalid-not-yaml.yaml": "YAML parser message",
}

func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 is not installed")
	}
	if err := exec.Command(py, "-c", "import cloudinit.config.schema, jsonschema").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 cannot import cloudinit and jsonschema (install Debian's cloud-init)")
	}
	return py
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.yaml"))
	if err != nil || len(files) < 40 {
		t.Fatalf("corpus: want at least 40 files, have %d (%v)", len(files), err)
	}
	sort.Strings(files)
	return files
}

type oracleVerdict struct {
	Valid bool   `json:"valid"`
	Msg   string `json:"msg"`
}

func TestCorpusAgainstCloudInit(t *testing.T) {
	py := cloudInitPython(t)
	files := corpusFiles(t)
	dir := filepath.Join("testdata", "corpus")
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	cmd := exec.Command(py, append([]string{"-c", oracleScript}, names...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run cloud-init's schema check: %v\n%s", err, stderr.String())
	}
	var verdicts map[string]oracleVerdict
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("decode cloud-init's verdicts: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			want, ok := verdicts[name]
			if !ok {
				t.Fatalf("cloud-init gave no verdict")
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Validate(data, name)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if rep.Valid() != want.Valid {
				t.Fatalf("seedinit valid=%v, cloud-init valid=%v\ncloud-init: %s\nseedinit: %s", rep.Valid(), want.Valid, want.Msg, rep.Format(false))
			}
			if strings.HasPrefix(name, "valid-") != want.Valid && !strings.HasPrefix(name, "deprecated-") {
				t.Errorf("file name says valid=%v, cloud-init says %v", strings.HasPrefix(name, "valid-"), want.Valid)
			}
			if why, differs := messageDifferences[name]; differs {
				t.Logf("message differs on purpose (%s): cloud-init %q", why, want.Msg)
				return
			}
			if diff := cmp.Diff(want.Msg, exceptionText(rep)); diff != "" {
				t.Errorf("message differs from cloud-init (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

// exceptionText is str() of the exception cloud-init raises for the file.
func exceptionText(r *Report) string {
	if r.NotMapping {
		return "Cloud-config is not a YAML dict."
	}
	if r.Valid() {
		return ""
	}
	msg := "Cloud config schema errors: " + formatProblems(r.Errors)
	if len(r.Deprecations) > 0 {
		msg += "\n\nCloud config schema deprecations: " + formatProblems(r.Deprecations)
	}
	return msg
}

// TestCorpusDeprecations checks that the deprecated-* files are accepted
// with at least one deprecation, as cloud-init prints them.
func TestCorpusDeprecations(t *testing.T) {
	for _, f := range corpusFiles(t) {
		name := filepath.Base(f)
		if !strings.HasPrefix(name, "deprecated-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Validate(data, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Deprecations) == 0 {
				t.Errorf("no deprecation reported:\n%s", rep.Format(false))
			}
		})
	}
}
