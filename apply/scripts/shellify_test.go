package scripts

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// shellifyCases are runcmd lists as YAML, with what cloud-init 22.4.2's
// util.shellify makes of them ("" for an error).
var shellifyCases = []struct {
	name, yaml, want string
}{
	{"empty", "[]", "#!/bin/sh\n"},
	{"strings as they are", "['ls -l /', 'echo \"$HOME\" > /tmp/x']", "#!/bin/sh\nls -l /\necho \"$HOME\" > /tmp/x\n"},
	{"lists quoted", "[[ls, -l, /]]", "#!/bin/sh\n'ls' '-l' '/'\n"},
	{"quote inside a word", "[[sh, -c, \"echo 'hi there'\"]]", "#!/bin/sh\n'sh' '-c' 'echo '\\''hi there'\\'''\n"},
	{"nulls skipped", "[~, 'a', null]", "#!/bin/sh\na\n"},
	{"scalars in lists", "[[echo, 1, 2.5, true, no, ~, 0o17, 1e3, 1.0e+3]]", "#!/bin/sh\n'echo' '1' '2.5' 'True' 'False' 'None' '0o17' '1e3' '1000.0'\n"},
	{"nested list in a list", "[[echo, [a, \"it's\"], {k: v}]]", "#!/bin/sh\n'echo' '['\\''a'\\'', \"it'\\''s\"]' '{'\\''k'\\'': '\\''v'\\''}'\n"},
	{"multi-line string", "[\"if true; then\\n  echo yes\\nfi\"]", "#!/bin/sh\nif true; then\n  echo yes\nfi\n"},
	{"empty list item", "[[]]", "#!/bin/sh\n\n"},
	{"unicode", "[[echo, 'héllo wörld']]", "#!/bin/sh\n'echo' 'héllo wörld'\n"},
	{"integer item is an error", "[1]", ""},
	{"mapping item is an error", "[{a: b}]", ""},
	{"large and small floats", "[[echo, 1.0e+20, 0.00001, -0.5, 1.5e-7, 123456789.125]]", "#!/bin/sh\n'echo' '1e+20' '1e-05' '-0.5' '1.5e-07' '123456789.125'\n"},
}

func TestShellify(t *testing.T) {
	for _, tt := range shellifyCases {
		t.Run(tt.name, func(t *testing.T) {
			v, err := yaml11.Load([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Shellify(v.([]any))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Shellify = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Shellify (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShellifyAgainstCloudInit runs the same lists through cloud-init's
// own shellify, loaded with its own YAML loader.
func TestShellifyAgainstCloudInit(t *testing.T) {
	py := cloudInitPython(t)
	var docs []string
	for _, tt := range shellifyCases {
		docs = append(docs, tt.yaml)
	}
	in, _ := json.Marshal(docs)
	const script = `
import json, sys
from cloudinit import util
out = []
for doc in json.load(sys.stdin):
    try:
        out.append(util.shellify(util.load_yaml(doc, allowed=(list,))))
    except Exception:
        out.append("")
print(json.dumps(out))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init oracle: %v\n%s", err, stderr.String())
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, tt := range shellifyCases {
		t.Run(tt.name, func(t *testing.T) {
			v, err := yaml11.Load([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := Shellify(v.([]any))
			if diff := cmp.Diff(want[i], got); diff != "" {
				t.Errorf("Shellify(%s) differs from cloud-init's (-cloud-init +seedinit):\n%s", tt.yaml, diff)
			}
		})
	}
}

// cloudInitPython returns Debian's python3 when it can import cloudinit
// (the python3 first on PATH may be a build without it).
func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "differential test needs cloud-init: /usr/bin/python3 is missing")
	}
	if out, err := exec.Command(py, "-c", "import cloudinit").CombinedOutput(); err != nil {
		testenv.Skipf(t, "differential test needs cloud-init: /usr/bin/python3 cannot import cloudinit: %v %s", err, out)
	}
	return py
}

func FuzzShellify(f *testing.F) {
	for _, tt := range shellifyCases {
		f.Add([]byte(tt.yaml))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := yaml11.Load(doc)
		if err != nil {
			return
		}
		l, ok := v.([]any)
		if !ok {
			return
		}
		s, err := Shellify(l)
		if err == nil && len(s) < len("#!/bin/sh\n") {
			t.Errorf("Shellify = %q, want at least the shebang", s)
		}
	})
}
