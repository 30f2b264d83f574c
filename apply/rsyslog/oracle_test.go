package rsyslog

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

// cloudInitPython returns Debian's python3 when it can import cloudinit
// (the python3 first on PATH may be a build without it).
func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "differential test needs cloud-init: /usr/bin/python3 is missing")
	}
	if out, err := exec.Command(py, "-c", "import cloudinit.config.cc_rsyslog, yaml").CombinedOutput(); err != nil {
		testenv.Skipf(t, "differential test needs cloud-init: /usr/bin/python3 cannot import cloudinit: %v %s", err, out)
	}
	return py
}

// oracleScript runs cloud-init 22.4.2's cc_rsyslog steps the way handle()
// does, with config_dir moved under a temporary root, and returns the
// files written (or the error) and parse_remotes_line's verdict on lines.
const oracleScript = `
import json, os, sys, tempfile, yaml
from cloudinit.config import cc_rsyslog as m
req = json.load(sys.stdin)
out = {"configs": [], "lines": []}
for text in req["configs"]:
    root = tempfile.mkdtemp()
    res = {"files": {}, "error": False}
    try:
        cfg = m.load_config(yaml.safe_load(text))
        configs = cfg["configs"]
        if cfg["remotes"]:
            configs.append(m.remotes_to_rsyslog_cfg(cfg["remotes"], header="# begin remotes", footer="# end remotes"))
        if cfg["configs"]:
            m.apply_rsyslog_changes(configs=cfg["configs"], def_fname=cfg["config_filename"],
                cfg_dir=os.path.join(root, cfg["config_dir"].lstrip("/")))
    except Exception:
        res["error"] = True
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            res["files"]["/" + os.path.relpath(p, root)] = open(p).read()
    out["configs"].append(res)
for line in req["lines"]:
    try:
        out["lines"].append(str(m.parse_remotes_line(line)))
    except Exception as e:
        out["lines"].append("error")
json.dump(out, sys.stdout)
`

var oracleConfigs = []string{
	"rsyslog:\n  remotes:\n    maas: 192.168.1.1\n    juju: 10.0.4.1\n  service_reload_command: auto\n",
	`rsyslog:
  config_dir: /opt/etc/rsyslog.d
  config_filename: 99-late-cloud-config.conf
  configs:
    - "*.* @@192.158.1.1"
    - content: "*.*   @@192.0.2.1:10514"
      filename: 01-example.conf
    - content: |
        *.*   @@syslogd.example.com
  remotes:
    maas: 192.168.1.1
    juju: 10.0.4.1
  service_reload_command: [your, syslog, restart, command]
`,
	"rsyslog:\n  - '$ModLoad imudp'\n  - '*.* @@10.0.0.9'\n",
	"rsyslog:\n  - 'a'\n  - content: b\n    filename: other.conf\nrsyslog_filename: legacy.conf\nrsyslog_dir: /var/rsyslog\n",
	"rsyslog:\n  remotes:\n    zeta: '[fd00::10]:514'\n    alpha: 'kern.* @@log.example:0601'\n    mid: '@10.1.1.1 # ignored'\n",
	"rsyslog:\n  remotes:\n    bad: 'a b c'\n    empty: ''\n    none:\n    good: 10.9.9.9\n    brackets: '[fd00::1'\n",
	"rsyslog:\n  configs:\n    - content: x\n      filename: '  spaced.conf  '\n    - content: y\n      filename: '   '\n    - filename: nocontent.conf\n    - content: z\n      filename: spaced.conf\n",
	"rsyslog:\n  configs:\n    - content: abs\n      filename: ../rsyslog.conf.d/rel.conf\n    - content: \"ends\\n\"\n",
	"rsyslog:\n  configs: []\n  remotes: {}\n",
	"rsyslog:\n  configs: 'not a list'\n",
	"rsyslog:\n  remotes: [1, 2]\n",
	"rsyslog:\n  config_filename: 42\n  configs: [a]\n",
	"rsyslog: {}\n",
	"rsyslog:\n  configs: ['one', 'two']\n  remotes:\n    r: '*.info @@[2001:db8::5]'\n",
	"rsyslog:\n  configs:\n    - content: ''\n    - content: \"multi\\nline\\n\\n\"\n      filename: m.conf\n",
}

var oracleLines = []string{
	"192.168.1.1", "@@10.0.0.1:514", "kern.* @h # c", "[fd00::1]:1", "[]", "a # b # c", " h ",
	"h:0", "[a]]", "[x", "h:99999999999999999999", "*.* @@h:514 ## x", "h\n", "h:514\n", "a\tb",
	"h\u00a0", "x\u001cy", "h#c", "h  #  c  ", "[::1]:", "@@@h", "h:-1",
}

func TestOracle(t *testing.T) {
	py := cloudInitPython(t)
	req, err := json.Marshal(map[string]any{"configs": oracleConfigs, "lines": oracleLines})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", oracleScript)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle: %v\n%s", err, stderr.String())
	}
	var want struct {
		Configs []struct {
			Files map[string]string
			Error bool
		}
		Lines []string
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("oracle output %q: %v", out, err)
	}
	for i, text := range oracleConfigs {
		t.Run("config"+strings.Repeat("0", 2-len(itoa(i)))+itoa(i), func(t *testing.T) {
			v, err := yaml11.Load([]byte(text))
			if err != nil {
				t.Fatalf("load %q: %v", text, err)
			}
			dir := t.TempDir()
			env := applytest.NewEnvAt(t, dir, apply.Config(v.(map[string]any)))
			env.UserData = &seed.Processed{Parts: []seed.Part{{Kind: seed.KindCloudConfig, Content: []byte(text)}}}
			runErr := run(context.Background(), env.Env)
			got := filesUnder(t, dir)
			if diff := cmp.Diff(want.Configs[i].Files, got); diff != "" {
				t.Errorf("config %q: files differ from cloud-init (-cloud-init +seedinit):\n%s", text, diff)
			}
			if want.Configs[i].Error && runErr == nil {
				t.Errorf("config %q: cloud-init fails, seedinit did not", text)
			}
			if !want.Configs[i].Error && runErr != nil {
				t.Errorf("config %q: seedinit failed: %v", text, runErr)
			}
		})
	}
	for i, line := range oracleLines {
		t.Run("line"+itoa(i), func(t *testing.T) {
			got := "error"
			if r, err := ParseRemote(line, ""); err == nil {
				got = r.String()
			}
			if got != want.Lines[i] {
				t.Errorf("ParseRemote(%q) = %q, cloud-init %q", line, got, want.Lines[i])
			}
		})
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// filesUnder lists the regular files the module wrote, leaving out
// seedinit's own state under /var/lib/cloud.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := "/" + strings.TrimPrefix(p, dir+"/")
		if strings.HasPrefix(rel, "/var/lib/cloud/") {
			return nil
		}
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
