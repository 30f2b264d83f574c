package scripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// exitStatus simulates a command that exited non-zero.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitStatus) ExitCode() int { return int(e) }

func loadConfig(t *testing.T, doc string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return apply.Config(v.(map[string]any))
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, name, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func modeOf(t *testing.T, dir, name string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

const iid = applytest.InstanceID

func TestBootcmd(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "bootcmd:\n- echo one > /tmp/x\n- [cloud-init-per, once, mymkfs, mkfs, /dev/vdb]\n"))
	var script string
	env.Sys.RunFunc = func(cmd apply.Command) error {
		// The script must be in the target while it runs.
		b, err := env.Root.ReadFile(cmd.Argv[1])
		if err != nil {
			t.Errorf("bootcmd script %s not in the target while it runs: %v", cmd.Argv[1], err)
		}
		script = string(b)
		fmt.Fprint(cmd.Output, "formatted")
		return nil
	}
	if err := runBootcmd(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	if len(env.Sys.Commands) != 1 {
		t.Fatalf("ran %v, want one command", env.Sys.Ran())
	}
	cmd := env.Sys.Commands[0]
	if cmd.Argv[0] != "/bin/sh" || !strings.HasPrefix(cmd.Argv[1], "/run/seedinit/tmp/bootcmd-") || len(cmd.Argv) != 2 {
		t.Errorf("argv = %q, want /bin/sh and the script", cmd.Argv)
	}
	if diff := cmp.Diff([]string{"INSTANCE_ID=" + iid}, cmd.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if want := "#!/bin/sh\necho one > /tmp/x\n'cloud-init-per' 'once' 'mymkfs' 'mkfs' '/dev/vdb'\n"; script != want {
		t.Errorf("script = %q, want %q", script, want)
	}
	if env.Root.Exists(cmd.Argv[1]) {
		t.Errorf("bootcmd script %s left behind", cmd.Argv[1])
	}
	wantLog := "==> bootcmd: /bin/sh " + cmd.Argv[1] + " (ok) <==\nformatted\n"
	if diff := cmp.Diff(wantLog, readFile(t, dir, "var/log/seedinit-output.log")); diff != "" {
		t.Errorf("output log (-want +got):\n%s", diff)
	}
}

func TestBootcmdOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      string
		runErr   error
		wantErr  string
		wantSkip bool
		wantRan  int
	}{
		{name: "absent", cfg: "{}", wantSkip: true},
		{name: "failing", cfg: "bootcmd: [exit 3]", runErr: exitStatus(3), wantErr: "bootcmd: exit status 3", wantRan: 1},
		{name: "cannot run here", cfg: "bootcmd: [echo hi]", runErr: fmt.Errorf("run /bin/sh: %w: running commands in target /x needs root (for chroot)", apply.ErrSkipped), wantSkip: true, wantRan: 1},
		{name: "not a list", cfg: "bootcmd: echo hi", wantErr: "bootcmd: bootcmd: want a list, got a string"},
		{name: "bad item runs nothing", cfg: "bootcmd: [echo a, 3]", wantErr: "bootcmd: item 1: want a string or a list, got an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := applytest.NewEnv(t, loadConfig(t, tt.cfg))
			env.Sys.RunFunc = func(apply.Command) error { return tt.runErr }
			err := runBootcmd(context.Background(), env.Env)
			if got := errors.Is(err, apply.ErrSkipped); got != tt.wantSkip {
				t.Errorf("bootcmd: %v, want skip %v", err, tt.wantSkip)
			}
			if tt.wantSkip && tt.runErr != nil && !strings.Contains(err.Error(), "needs root") {
				t.Errorf("skip %q lost the reason", err)
			}
			if tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("bootcmd error = %v, want %q", err, tt.wantErr)
			}
			if len(env.Sys.Commands) != tt.wantRan {
				t.Errorf("ran %v, want %d commands", env.Sys.Ran(), tt.wantRan)
			}
		})
	}
}

func TestRuncmd(t *testing.T) {
	dir := t.TempDir()
	cfg := loadConfig(t, "runcmd:\n- [ls, -l, /]\n- [sh, -xc, \"echo $(date) ': hello world!'\"]\n- [sh, -c, echo \"=========hello world=========\"]\n- ls -l /root\n")
	want := "#!/bin/sh\n'ls' '-l' '/'\n'sh' '-xc' 'echo $(date) '\\'': hello world!'\\'''\n'sh' '-c' 'echo \"=========hello world=========\"'\n'ls' '-l' '/root'\n"
	want = strings.Replace(want, "'ls' '-l' '/root'", "ls -l /root", 1)
	for i := range 2 {
		env := applytest.NewEnvAt(t, dir, cfg)
		if err := runRuncmd(context.Background(), env.Env); err != nil {
			t.Fatal(err)
		}
		if i == 1 && env.Root.ChangeCount() != 0 {
			t.Errorf("second run changed %v", env.Root.Changes(0))
		}
		if len(env.Sys.Commands) != 0 {
			t.Errorf("runcmd ran %v; it only writes the script", env.Sys.Ran())
		}
	}
	name := "var/lib/cloud/instances/" + iid + "/scripts/runcmd"
	if diff := cmp.Diff(want, readFile(t, dir, name)); diff != "" {
		t.Errorf("runcmd script (-want +got):\n%s", diff)
	}
	if m := modeOf(t, dir, name); m != 0o700 {
		t.Errorf("runcmd mode = %v, want 0700", m)
	}
}

func TestRuncmdSkipsWithout(t *testing.T) {
	env := applytest.NewEnv(t, nil)
	if err := runRuncmd(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("runcmd without runcmd: %v, want a skip", err)
	}
}

func TestScriptsDirectories(t *testing.T) {
	tests := []struct {
		module func(context.Context, *apply.Env) error
		dir    string
	}{
		{runScriptsPerOnce, "var/lib/cloud/scripts/per-once"},
		{runScriptsPerBoot, "var/lib/cloud/scripts/per-boot"},
		{runScriptsPerInstance, "var/lib/cloud/scripts/per-instance"},
		{runScriptsUser, "var/lib/cloud/instances/" + iid + "/scripts"},
		{runScriptsVendor, "var/lib/cloud/instances/" + iid + "/scripts/vendor"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, tt.dir+"/10-run", "#!/bin/sh\n", 0o755)
			env := applytest.NewEnvAt(t, dir, nil)
			if err := tt.module(context.Background(), env.Env); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"/" + tt.dir + "/10-run"}, env.Sys.Ran()); diff != "" {
				t.Errorf("ran (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunParts(t *testing.T) {
	dir := t.TempDir()
	scripts := "var/lib/cloud/scripts/per-boot"
	writeFile(t, dir, scripts+"/b-fails", "#!/bin/sh\nexit 3\n", 0o700)
	writeFile(t, dir, scripts+"/a-first", "#!/bin/sh\n", 0o755)
	writeFile(t, dir, scripts+"/c-not-executable", "#!/bin/sh\n", 0o644)
	writeFile(t, dir, scripts+"/d-also-fails", "#!/bin/sh\n", 0o500)
	writeFile(t, dir, scripts+"/e-last", "#!/bin/sh\n", 0o111)
	writeFile(t, dir, "opt/tool", "#!/bin/sh\n", 0o755)
	os.MkdirAll(filepath.Join(dir, scripts, "c2-directory"), 0o755)
	os.Symlink("/opt/tool", filepath.Join(dir, scripts, "c3-link"))
	os.Symlink("/nowhere", filepath.Join(dir, scripts, "c4-dangling"))
	env := applytest.NewEnvAt(t, dir, nil)
	env.Sys.RunFunc = func(cmd apply.Command) error {
		switch filepath.Base(cmd.Argv[0]) {
		case "b-fails":
			fmt.Fprint(cmd.Output, "boom\n")
			return exitStatus(3)
		case "d-also-fails":
			return errors.New("run d-also-fails: exec format error")
		}
		return nil
	}
	err := runScriptsPerBoot(context.Background(), env.Env)
	p := "/" + scripts + "/"
	wantRan := []string{p + "a-first", p + "b-fails", p + "c3-link", p + "d-also-fails", p + "e-last"}
	if diff := cmp.Diff(wantRan, env.Sys.Ran()); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Fatal("scripts_per_boot with failing scripts succeeded")
	}
	for _, want := range []string{"2 of 5 scripts", p + "b-fails: exit status 3", p + "d-also-fails: run d-also-fails: exec format error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	log := readFile(t, dir, "var/log/seedinit-output.log")
	if !strings.Contains(log, "==> scripts_per_boot: "+p+"b-fails (exit status 3) <==\nboom\n") {
		t.Errorf("output log does not show b-fails' output and status:\n%s", log)
	}
}

func TestRunPartsSkips(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, nil)
	if err := runScriptsPerOnce(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("empty per-once: %v, want a skip", err)
	}
}

// A script the target cannot run yet is passed over and the others run.
// If none could run, the module is skipped (so it is tried again next
// time); if some ran, it fails naming those that could not, because a
// skipped module would run again those that did.
func TestRunPartsScriptsTheTargetCannotRun(t *testing.T) {
	cannot := func(p string) error {
		return fmt.Errorf("run %s: %w: the interpreter /usr/bin/python3 on the #! line of %s does not exist in target /t", p, apply.ErrSkipped, p)
	}
	tests := []struct {
		name string
		// outcome per script: "ok", "skip" or "fail".
		outcomes map[string]string
		skipped  bool
		// want is what the module's error says, in order; nil: no error.
		want []string
	}{
		{
			name:     "none can run",
			outcomes: map[string]string{"x": "skip", "y": "skip"},
			skipped:  true,
			want:     []string{"/per-once/x does not exist", "/per-once/y does not exist"},
		},
		{
			name:     "one cannot run, the other ran",
			outcomes: map[string]string{"x": "skip", "y": "ok"},
			want:     []string{"1 of 2 scripts in /var/lib/cloud/scripts/per-once could not run", "python3 on the #! line of /var/lib/cloud/scripts/per-once/x"},
		},
		{
			name:     "one cannot run, the other failed",
			outcomes: map[string]string{"x": "fail", "y": "skip"},
			want:     []string{"1 of 2 scripts in /var/lib/cloud/scripts/per-once failed and 1 could not run", "per-once/x: exit status 2", "per-once/y does not exist"},
		},
		{
			name:     "all ran",
			outcomes: map[string]string{"x": "ok", "y": "ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name := range tt.outcomes {
				writeFile(t, dir, "var/lib/cloud/scripts/per-once/"+name, "#!/usr/bin/python3\n", 0o755)
			}
			env := applytest.NewEnvAt(t, dir, nil)
			env.Sys.RunFunc = func(cmd apply.Command) error {
				switch tt.outcomes[filepath.Base(cmd.Argv[0])] {
				case "skip":
					return cannot(cmd.Argv[0])
				case "fail":
					return exitStatus(2)
				}
				return nil
			}
			err := runScriptsPerOnce(context.Background(), env.Env)
			if len(env.Sys.Commands) != len(tt.outcomes) {
				t.Errorf("ran %v, want every script tried", env.Sys.Ran())
			}
			if errors.Is(err, apply.ErrSkipped) != tt.skipped {
				t.Errorf("err = %v, want skipped %v", err, tt.skipped)
			}
			if tt.want == nil {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("err = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestScriptsVendorPrefix(t *testing.T) {
	for _, tt := range []struct {
		cfg  string
		want string
	}{
		{"vendor_data: {prefix: /usr/bin/ltrace}", "/usr/bin/ltrace /var/lib/cloud/instances/" + iid + "/scripts/vendor/v.sh"},
		{"vendor_data: {prefix: [timeout, 30]}", "timeout 30 /var/lib/cloud/instances/" + iid + "/scripts/vendor/v.sh"},
		{"{}", "/var/lib/cloud/instances/" + iid + "/scripts/vendor/v.sh"},
	} {
		dir := t.TempDir()
		writeFile(t, dir, "var/lib/cloud/instances/"+iid+"/scripts/vendor/v.sh", "#!/bin/sh\n", 0o700)
		env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.cfg))
		if err := runScriptsVendor(context.Background(), env.Env); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{tt.want}, env.Sys.Ran()); diff != "" {
			t.Errorf("%s: ran (-want +got):\n%s", tt.cfg, diff)
		}
	}
}

func TestConsumeData(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, nil)
	env.UserData = &seed.Processed{Parts: []seed.Part{
		{Kind: seed.KindCloudConfig, Filename: "part-001", ContentType: "text/cloud-config", Content: []byte("#cloud-config\n")},
		{Kind: seed.KindScript, Filename: "setup.sh", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\r\necho hi\r\n")},
		{Kind: seed.KindBoothook, Filename: "part-003", ContentType: "text/cloud-boothook", Content: []byte("#cloud-boothook\n  #!/bin/sh\necho early\n")},
		{Kind: seed.KindScript, Filename: "../../etc/evil name!", ContentType: "text/x-shellscript-per-boot", Frequency: "always", Content: []byte("#!/bin/sh\n")},
		{Kind: seed.KindScript, Filename: "once.sh", ContentType: "text/x-shellscript-per-once", Frequency: "once", Content: []byte("#!/bin/sh\n")},
		{Kind: seed.KindScript, Filename: "inst.sh", ContentType: "text/x-shellscript-per-instance", Frequency: "once-per-instance", Content: []byte("#!/bin/sh\n")},
		{Kind: seed.KindScript, Filename: "", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\n")},
	}}
	env.VendorData = &seed.Processed{Parts: []seed.Part{
		{Kind: seed.KindScript, Filename: "vendor.sh", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\nvendor\n")},
		{Kind: seed.KindScript, Filename: "vboot.sh", ContentType: "text/x-shellscript-per-boot", Frequency: "always", Content: []byte("#!/bin/sh\n")},
	}}
	if err := runConsumeData(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	inst := "var/lib/cloud/instances/" + iid
	want := map[string]string{
		inst + "/scripts/setup.sh":                          "#!/bin/sh\necho hi\n",
		inst + "/boothooks/part-003":                        "#!/bin/sh\necho early\n",
		"var/lib/cloud/scripts/per-boot/.._.._etc_evilname": "#!/bin/sh\n",
		"var/lib/cloud/scripts/per-once/once.sh":            "#!/bin/sh\n",
		"var/lib/cloud/scripts/per-instance/inst.sh":        "#!/bin/sh\n",
		inst + "/scripts/part-007":                          "#!/bin/sh\n",
		inst + "/scripts/vendor/vendor.sh":                  "#!/bin/sh\nvendor\n",
		"var/lib/cloud/scripts/vendor/per-boot/vboot.sh":    "#!/bin/sh\n",
	}
	got := map[string]string{}
	for name := range want {
		got[name] = readFile(t, dir, name)
		if got[name] != "<missing>" {
			if m := modeOf(t, dir, name); m != 0o700 {
				t.Errorf("%s mode = %v, want 0700", name, m)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("written parts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/" + inst + "/boothooks/part-003"}, env.Sys.Ran()); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"INSTANCE_ID=" + iid}, env.Sys.Commands[0].Env); diff != "" {
		t.Errorf("boothook env (-want +got):\n%s", diff)
	}
}

func TestConsumeDataSettings(t *testing.T) {
	userScript := seed.Part{Kind: seed.KindScript, Filename: "u.sh", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\n")}
	vendorParts := []seed.Part{
		{Kind: seed.KindScript, Filename: "v.sh", ContentType: "text/x-shellscript", Content: []byte("#!/bin/sh\n")},
		{Kind: seed.KindBoothook, Filename: "vb", ContentType: "text/cloud-boothook", Content: []byte("#cloud-boothook\n#!/bin/sh\n")},
	}
	inst := "var/lib/cloud/instances/" + iid
	tests := []struct {
		name     string
		cfg      string
		want     []string
		wantRuns int
		wantWarn bool
	}{
		{name: "defaults", cfg: "{}", want: []string{inst + "/scripts/u.sh", inst + "/scripts/vendor/v.sh"}, wantRuns: 1},
		{name: "user-data not allowed", cfg: "allow_userdata: false", want: []string{inst + "/scripts/vendor/v.sh"}, wantRuns: 1},
		{name: "vendor-data disabled", cfg: "vendor_data: {enabled: false}", want: []string{inst + "/scripts/u.sh"}},
		{name: "vendor boothooks disabled", cfg: "vendor_data: {disabled_handlers: [text/cloud-boothook]}", want: []string{inst + "/scripts/u.sh", inst + "/scripts/vendor/v.sh"}},
		{name: "vendor_data not a mapping", cfg: "vendor_data: yes", want: []string{inst + "/scripts/u.sh"}, wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.cfg))
			env.UserData = &seed.Processed{Parts: []seed.Part{userScript}}
			env.VendorData = &seed.Processed{Parts: vendorParts}
			if err := runConsumeData(context.Background(), env.Env); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, name := range []string{inst + "/scripts/u.sh", inst + "/scripts/vendor/v.sh"} {
				if readFile(t, dir, name) != "<missing>" {
					got = append(got, name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
			if len(env.Sys.Commands) != tt.wantRuns {
				t.Errorf("ran %v, want %d boothooks", env.Sys.Ran(), tt.wantRuns)
			}
			if got := len(env.Warnings()) > 0; got != tt.wantWarn {
				t.Errorf("warnings %q, want some: %v", env.Warnings(), tt.wantWarn)
			}
		})
	}
}

func TestConsumeDataBoothookFailureDoesNotStopOthers(t *testing.T) {
	env := applytest.NewEnv(t, nil)
	env.UserData = &seed.Processed{Parts: []seed.Part{
		{Kind: seed.KindBoothook, Filename: "first", Content: []byte("#cloud-boothook\nexit 1\n")},
		{Kind: seed.KindBoothook, Filename: "second", Content: []byte("#cloud-boothook\ntrue\n")},
		{Kind: seed.KindScript, Filename: "s.sh", Content: []byte("#!/bin/sh\n")},
	}}
	env.Sys.RunFunc = func(cmd apply.Command) error {
		if strings.HasSuffix(cmd.Argv[0], "/first") {
			return exitStatus(1)
		}
		return nil
	}
	err := runConsumeData(context.Background(), env.Env)
	if err == nil || !strings.Contains(err.Error(), "consume user-data part 0 (first): exit status 1") {
		t.Errorf("consume_data error = %v, want the failed boothook named", err)
	}
	if len(env.Sys.Commands) != 2 || !env.Root.Exists(env.State.InstanceDir("scripts", "s.sh")) {
		t.Errorf("after a failed boothook: ran %v, script written %v", env.Sys.Ran(), env.Root.Exists(env.State.InstanceDir("scripts", "s.sh")))
	}
}

// A boothook the target cannot run yet does not keep the next from
// running; consume_data then reports the skip (it runs every boot, so the
// skipped boothook is tried again at the next).
func TestConsumeDataBoothookTheTargetCannotRunDoesNotStopOthers(t *testing.T) {
	env := applytest.NewEnv(t, nil)
	env.UserData = &seed.Processed{Parts: []seed.Part{
		{Kind: seed.KindBoothook, Filename: "first", Content: []byte("#cloud-boothook\n#!/usr/bin/python3\n")},
		{Kind: seed.KindBoothook, Filename: "second", Content: []byte("#cloud-boothook\n#!/bin/sh\ntrue\n")},
	}}
	env.Sys.RunFunc = func(cmd apply.Command) error {
		if strings.HasSuffix(cmd.Argv[0], "/first") {
			return fmt.Errorf("run %s: %w: the interpreter /usr/bin/python3 on the #! line of %s does not exist in target /t", cmd.Argv[0], apply.ErrSkipped, cmd.Argv[0])
		}
		return nil
	}
	err := runConsumeData(context.Background(), env.Env)
	if !errors.Is(err, apply.ErrSkipped) || !strings.Contains(err.Error(), "/usr/bin/python3 on the #! line of") {
		t.Errorf("consume_data = %v, want a skip naming the missing interpreter", err)
	}
	if len(env.Sys.Commands) != 2 {
		t.Errorf("ran %v, want both boothooks tried", env.Sys.Ran())
	}
}

func TestFinalMessage(t *testing.T) {
	oldNow, oldUptime := now, uptime
	now = func() time.Time { return time.Date(2024, 3, 5, 6, 7, 8, 0, time.UTC) }
	uptime = func() string { return "12.34" }
	t.Cleanup(func() { now, uptime = oldNow, oldUptime })
	tests := []struct {
		name, cfg, want string
		wantWarn        bool
	}{
		{
			name: "default",
			cfg:  "{}",
			want: "seedinit v. dev finished at Tue, 05 Mar 2024 06:07:08 +0000. Datasource DataSourceNoCloud.  Up 12.34 seconds\n",
		},
		{
			name: "basic variables both cases",
			cfg:  "final_message: \"  up $UPTIME (${uptime}) v$version on $DATASOURCE  \"",
			want: "up 12.34 (12.34) vdev on DataSourceNoCloud\n",
		},
		{
			name:     "unknown variable warns and shows nothing",
			cfg:      "final_message: done at $when",
			wantWarn: true,
		},
		{
			name: "empty falls back to the default",
			cfg:  "final_message: ''",
			want: "seedinit v. dev finished at Tue, 05 Mar 2024 06:07:08 +0000. Datasource DataSourceNoCloud.  Up 12.34 seconds\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.cfg))
			if err := runFinalMessage(context.Background(), env.Env); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, env.Console.String()); diff != "" {
				t.Errorf("console (-want +got):\n%s", diff)
			}
			if got := len(env.Warnings()) > 0; got != tt.wantWarn {
				t.Errorf("warnings %q, want some: %v", env.Warnings(), tt.wantWarn)
			}
			want := "12.34 - Tue, 05 Mar 2024 06:07:08 +0000 - v. dev\n"
			if got := readFile(t, dir, "var/lib/cloud/instances/"+iid+"/boot-finished"); got != want {
				t.Errorf("boot-finished = %q, want %q", got, want)
			}
		})
	}
}
