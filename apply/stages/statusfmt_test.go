package stages

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

var updateStatusGolden = flag.Bool("update-status", false, "rewrite the status golden files")

// statusCases are target roots in the states cloud-init's status knows;
// files maps target paths to contents.
var statusCases = []struct {
	name  string
	files map[string]string
}{
	{name: "not-run", files: map[string]string{}},
	{name: "disabled", files: map[string]string{"/etc/cloud/cloud-init.disabled": ""}},
	{name: "running", files: map[string]string{
		"/run/cloud-init/status.json": `{"v1": {"datasource": null, "stage": "init", "init-local": {"start": 1700000000.5, "finished": 1700000001.25, "errors": []}, "init": {"start": 1700000002.0, "finished": null, "errors": []}}}`,
	}},
	{name: "done", files: map[string]string{
		"/run/cloud-init/status.json": `{"v1": {"datasource": "DataSourceNoCloud [seed=/dev/sr0][dsmode=net]", "stage": null,
 "init-local": {"start": 1700000000.5, "finished": 1700000001.25, "errors": []},
 "init": {"start": 1700000002.0, "finished": 1700000003.0, "errors": []},
 "modules-config": {"start": 1700000004.0, "finished": 1700000005.0, "errors": []},
 "modules-final": {"start": 1700000006.0, "finished": 1700000007.9, "errors": []}}}`,
		"/run/cloud-init/result.json": `{"v1": {"datasource": "DataSourceNoCloud [seed=/dev/sr0][dsmode=net]", "errors": []}}`,
	}},
	{name: "error", files: map[string]string{
		"/run/cloud-init/status.json": `{"v1": {"datasource": "DataSourceOpenStackLocal [net,ver=2]", "stage": null,
 "init": {"start": 1700000002.0, "finished": 1700000003.0, "errors": ["write_files: write /etc/x: permission denied"]},
 "modules-final": {"start": 1700000006.0, "finished": 1700000007.0, "errors": ["runcmd: exit status 2", "phone_home: 'url' missing"]}}}`,
		"/run/cloud-init/result.json": `{"v1": {"datasource": "DataSourceOpenStackLocal [net,ver=2]", "errors": ["x"]}}`,
	}},
	{name: "long-errors", files: map[string]string{
		"/run/cloud-init/status.json": `{"v1": {"datasource": "DataSourceNoCloud [seed=/dev/sr0][dsmode=net]", "stage": null,
 "modules-config": {"start": 1700000004.0, "finished": 1700000005.0, "errors": ["ntp: write /etc/chrony/chrony.conf: open /sysroot/etc/chrony/chrony.conf: read-only file system, and then some more words to pass eighty columns", "locale: caf\u00e9 is not a locale: yes", "x:  two  spaces and a # hash"]}}}`,
		"/run/cloud-init/result.json": `{"v1": {"datasource": null, "errors": []}}`,
	}},
	{name: "offline-copy", files: map[string]string{
		"/var/lib/cloud/data/status.json": `{"v1": {"datasource": "DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud]", "stage": null, "modules-final": {"start": 1600000000, "finished": 1600000010, "errors": []}}}`,
		"/var/lib/cloud/data/result.json": `{"v1": {"datasource": "DataSourceNoCloud", "errors": []}}`,
	}},
}

func makeStatusRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var statusFormats = []struct {
	format string
	long   bool
	suffix string
}{
	{"tabular", false, "tabular"},
	{"tabular", true, "tabular-long"},
	{"json", true, "json"},
	{"yaml", true, "yaml"},
}

func TestFormatStatusGolden(t *testing.T) {
	for _, tc := range statusCases {
		for _, f := range statusFormats {
			t.Run(tc.name+"/"+f.suffix, func(t *testing.T) {
				root, err := rootfs.Open(makeStatusRoot(t, tc.files))
				if err != nil {
					t.Fatal(err)
				}
				got, code := FormatStatus(root, f.long, f.format)
				wantCode := 0
				if tc.name == "error" || tc.name == "long-errors" {
					wantCode = 1
				}
				if code != wantCode {
					t.Errorf("exit code %d, want %d", code, wantCode)
				}
				path := filepath.Join("testdata", "status", tc.name+"."+f.suffix)
				if *updateStatusGolden {
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read golden (run with -update-status): %v", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

// statusOracle runs cloud-init's handle_status_args over a directory laid
// out as run_dir, with the boot status code fixed to what seedinit
// reports (cloud-init would ask systemd, which is not ours to ask).
const statusOracle = `
import sys, argparse, os
from cloudinit.cmd import status
from cloudinit.helpers import Paths
root, fmt, long = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
paths = Paths({"run_dir": os.path.join(root, "run/cloud-init")})
status.read_cfg_paths = lambda: paths
marker = os.path.join(root, "etc/cloud/cloud-init.disabled")
def bootstatus(_disable_file, _paths):
    if os.path.exists(marker):
        return (status.UXAppBootStatusCode.DISABLED_BY_MARKER_FILE, "Cloud-init disabled by /etc/cloud/cloud-init.disabled")
    return (status.UXAppBootStatusCode.ENABLED_BY_SYSVINIT, "Cloud-init enabled on sysvinit")
status.get_bootstatus = bootstatus
args = argparse.Namespace(format=fmt, long=long, wait=False)
sys.exit(status.handle_status_args("status", args))
`

func TestFormatStatusAgainstCloudInit(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("cloud-init oracle: /usr/bin/python3 is not installed")
	}
	if err := exec.Command(py, "-c", "import cloudinit.cmd.status").Run(); err != nil {
		t.Skip("cloud-init oracle: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init)")
	}
	for _, tc := range statusCases {
		if tc.name == "offline-copy" {
			continue // cloud-init reads only /run/cloud-init
		}
		for _, f := range statusFormats {
			t.Run(tc.name+"/"+f.suffix, func(t *testing.T) {
				dir := makeStatusRoot(t, tc.files)
				root, err := rootfs.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				long := "0"
				if f.long {
					long = "1"
				}
				cmd := exec.Command(py, "-c", statusOracle, dir, f.format, long)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				want, err := cmd.Output()
				wantCode := 0
				if ee, ok := err.(*exec.ExitError); ok {
					wantCode = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("cloud-init status: %v\n%s", err, stderr.String())
				}
				got, code := FormatStatus(root, f.long, f.format)
				if code != wantCode {
					t.Errorf("exit code %d, cloud-init %d", code, wantCode)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("(-cloud-init +seedinit):\n%s", diff)
				}
			})
		}
	}
}

func TestWaitStatus(t *testing.T) {
	dir := makeStatusRoot(t, statusCases[2].files) // running
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ticks := 0
	done := make(chan StatusDetails, 1)
	go func() {
		d, err := WaitStatus(ctx, root, func() {
			ticks++
			if ticks == 2 {
				// The boot finishes while we wait.
				for name, content := range statusCases[3].files {
					os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
				}
			}
		})
		if err != nil {
			t.Errorf("WaitStatus: %v", err)
		}
		done <- d
	}()
	d := <-done
	if d.Status != StatusDone {
		t.Errorf("status %q after waiting, want %q", d.Status, StatusDone)
	}

	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := WaitStatus(cancelled, root, nil); err != nil {
		t.Errorf("WaitStatus on a finished boot: %v", err)
	}
	notRun, _ := rootfs.Open(t.TempDir())
	if _, err := WaitStatus(cancelled, notRun, nil); err == nil {
		t.Error("WaitStatus with a cancelled context on a boot that never ran returned no error")
	}
}

// FuzzStatusYAMLScalar checks that every string the YAML writer emits
// reads back as the same string.
func FuzzStatusYAMLScalar(f *testing.F) {
	f.Add("plain words", 4, 10)
	f.Add("it's: a # thing\nwith  breaks\n\n", 8, 70)
	f.Add("caf\u00e9 \t\x00 \"q\" \\ "+string(bytes.Repeat([]byte("word "), 30)), 0, 0)
	f.Fuzz(func(t *testing.T, s string, indent, column int) {
		if !utf8.ValidString(s) || indent < 0 || indent > 40 || column < 0 || column > 100 {
			return
		}
		doc := "k: " + yamlScalar(s, indent+4, 3) + "\n"
		v, err := yaml11.Load([]byte(doc))
		if err != nil {
			t.Fatalf("emitted YAML does not load: %v\n%s", err, doc)
		}
		m, _ := v.(map[string]any)
		if got, _ := m["k"].(string); got != s {
			t.Fatalf("round trip: got %q, want %q\n%s", got, s, doc)
		}
	})
}

func FuzzReadStatusDetails(f *testing.F) {
	for _, tc := range statusCases {
		f.Add([]byte(tc.files["/run/cloud-init/status.json"]))
	}
	f.Add([]byte(`{"v1": {"init": {"start": "x", "errors": [1, null]}, "stage": 5}}`))
	f.Fuzz(func(t *testing.T, status []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "run/cloud-init"), 0o755)
		os.WriteFile(filepath.Join(dir, "run/cloud-init/status.json"), status, 0o644)
		root, err := rootfs.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"json", "yaml", "tabular"} {
			FormatStatus(root, true, format)
		}
	})
}
