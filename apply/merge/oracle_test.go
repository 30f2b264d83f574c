package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// pythonWithCloudInit returns Debian's python3 when cloud-init's modules
// import, and skips the test otherwise: the python3 first on PATH may be a
// build without cloud-init, jsonpatch or PyYAML.
func pythonWithCloudInit(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Skipf(t, "skipping the comparison with cloud-init: %s not found (install Debian's cloud-init package)", python)
	}
	out, err := exec.Command(python, "-c", "import cloudinit, jsonpatch, yaml").CombinedOutput()
	if err != nil {
		testenv.Skipf(t, "skipping the comparison with cloud-init: %s cannot import cloudinit (install Debian's cloud-init package): %v\n%s", python, err, out)
	}
	return python
}

// runOracle sends req as JSON to testdata/oracle.py and decodes its answer
// with numbers kept as their text, so that 1 and 1.0 stay different.
func runOracle(t *testing.T, req any) any {
	t.Helper()
	python := pythonWithCloudInit(t)
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("encode oracle request: %v", err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "oracle.py"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run testdata/oracle.py: %v\n%s", err, stderr.String())
	}
	return decodeNumbers(t, out)
}

func decodeNumbers(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode JSON %.200q: %v", data, err)
	}
	return v
}

// canonical turns a Go config into what json.dumps of the same Python value
// decodes to, numbers spelled as Python spells them.
func canonical(t *testing.T, v any) any {
	t.Helper()
	return decodeNumbers(t, []byte(pyJSON(v)))
}

// pyJSON encodes decoded YAML/JSON values as Python's json.dumps does.
func pyJSON(v any) string {
	var b strings.Builder
	writePyJSON(&b, v)
	return b.String()
}

func writePyJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			// Not JSON: testdata/oracle.py spells them the same way.
			fmt.Fprintf(b, "\"<float %s>\"", yaml11.FormatFloat(x))
			return
		}
		b.WriteString(yaml11.FormatFloat(x))
	case string:
		s, _ := json.Marshal(x)
		b.Write(s)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteString(": ")
			writePyJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%q", fmt.Sprintf("unexpected %T", v))
	}
}
