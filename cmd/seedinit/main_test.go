package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/testenv"
)

// newTargetRoot makes a small Debian-like root, like scripts/demo's.
func newTargetRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/passwd":          "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"etc/group":           "root:x:0:\nadm:x:4:\nsudo:x:27:\nnogroup:x:65534:\n",
		"etc/shadow":          "root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n",
		"etc/gshadow":         "root:*::\nadm:*::\nsudo:*::\nnogroup:*::\n",
		"etc/ssh/sshd_config": "PasswordAuthentication yes\n",
		"etc/motd":            "Welcome.\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestApplyExampleSeedThenStatusQueryClean(t *testing.T) {
	root := newTargetRoot(t)
	seedDir := "../../images/examples/appliance"
	code, out, stderr := run(t, "apply", "--root", root, "--seed", seedDir)
	if code != exitOK && code != exitRecoverable {
		t.Fatalf("apply exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{"users_groups", "write_files", "set_hostname"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s:\n%s", want, out)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		return string(b)
	}
	if got := read("etc/hostname"); got != "waf-01\n" {
		t.Errorf("/etc/hostname = %q", got)
	}
	if !strings.Contains(read("etc/passwd"), "\nadmin:x:1000:1000:Appliance administrator:/home/admin:/bin/sh\n") {
		t.Errorf("admin missing from passwd:\n%s", read("etc/passwd"))
	}
	if !strings.Contains(read("home/admin/.ssh/authorized_keys"), "admin@laptop") {
		t.Error("admin's key missing")
	}
	if got := read("etc/waf/banner.txt"); got != "Authorised access only.\n" {
		t.Errorf("b64 file = %q", got)
	}
	if strings.Contains(out+stderr+read("var/log/seedinit.log"), "correct horse") {
		t.Error("a password reached the output or the log")
	}

	// A second apply changes nothing and reports per-instance modules as done.
	before := read("etc/passwd") + read("etc/shadow") + read("etc/group") + read("etc/motd")
	code, out, _ = run(t, "apply", "--root", root, "--seed", seedDir)
	if code != exitOK && code != exitRecoverable {
		t.Fatalf("second apply exit %d", code)
	}
	if after := read("etc/passwd") + read("etc/shadow") + read("etc/group") + read("etc/motd"); after != before {
		t.Errorf("second apply changed the accounts or motd")
	}
	if !strings.Contains(out, "already-ran") {
		t.Errorf("second apply should report already-ran modules:\n%s", out)
	}

	code, out, _ = run(t, "status", "--root", root, "--format", "json")
	var st struct{ Status, Datasource, Detail string }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --format json: %v\n%s", err, out)
	}
	if st.Status != "done" || st.Datasource != "nocloud" || !strings.Contains(st.Detail, "NoCloud") || code == exitError {
		t.Errorf("status = %+v (exit %d)", st, code)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/cloud/instances/waf-0001/boot-finished")); err != nil {
		t.Errorf("boot-finished: %v", err)
	}
	for key, want := range map[string]string{
		"v1.instance_id":           "waf-0001",
		"instance_id":              "waf-0001",
		"local_hostname":           "waf-01",
		"v1.cloud_name":            "nocloud",
		"ds.meta_data.instance-id": "waf-0001",
	} {
		code, out, stderr := run(t, "query", "--root", root, key)
		if code != exitOK || strings.TrimSpace(out) != want {
			t.Errorf("query %s = %q (exit %d, %s), want %q", key, out, code, stderr, want)
		}
	}
	if code, _, stderr := run(t, "query", "--root", root, "v1.no_such_key"); code != exitError || !strings.Contains(stderr, "no_such_key") {
		t.Errorf("query of a missing key: exit %d, %s", code, stderr)
	}

	os.MkdirAll(filepath.Join(root, "var/lib/cloud/seed/nocloud"), 0o755)
	if code, _, stderr := run(t, "clean", "--root", root, "--logs"); code != exitOK {
		t.Fatalf("clean: exit %d: %s", code, stderr)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "var/lib/cloud"))
	if len(entries) != 1 || entries[0].Name() != "seed" {
		t.Errorf("after clean /var/lib/cloud holds %v, want only seed/", entries)
	}
	if code, out, _ := run(t, "status", "--root", root); code != exitOK || !strings.Contains(out, "not run") {
		t.Errorf("status after clean: %q", out)
	}
}

func TestApplyBadInput(t *testing.T) {
	root := newTargetRoot(t)
	if code, _, stderr := run(t, "apply", "--root", root); code != exitError || !strings.Contains(stderr, "--seed") {
		t.Errorf("missing --seed: exit %d, %s", code, stderr)
	}
	if code, _, stderr := run(t, "apply", "--root", root, "--seed", t.TempDir()); code != exitError || !strings.Contains(stderr, "meta-data") {
		t.Errorf("seed without meta-data: exit %d, %s", code, stderr)
	}
	seedDir := t.TempDir()
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: bad-1\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nwrite_files:\n  - path: /etc/ok\n    content: fine\n  - content: no path\nhostname: [\n"), 0o644)
	code, _, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network")
	if code != exitRecoverable || !strings.Contains(stderr, "line") {
		t.Errorf("broken YAML: exit %d (want 2), stderr should name the line:\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "sideways"); code != exitError || !strings.Contains(stderr, "sideways") {
		t.Errorf("bad stage: exit %d, %s", code, stderr)
	}
}

func TestSchemaAndMakeMIME(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("#cloud-config\nruncmd: [ls]\n"), 0o644)
	os.WriteFile(bad, []byte("#cloud-config\nruncmd: {a: 1}\n"), 0o644)
	if code, out, _ := run(t, "schema", "-c", good); code != exitOK || !strings.Contains(out, "Valid") {
		t.Errorf("schema of a valid file: exit %d, %q", code, out)
	}
	if code, _, stderr := run(t, "schema", "-c", bad); code != exitError || !strings.Contains(stderr, "runcmd") {
		t.Errorf("schema of an invalid file: exit %d, stderr %q", code, stderr)
	}
	script := filepath.Join(dir, "s.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755)
	code, out, stderr := run(t, "make-mime", "-a", good+":cloud-config", "-a", script+":x-shellscript")
	if code != exitOK || !strings.Contains(out, "Content-Type: multipart/mixed") || !strings.Contains(out, "text/x-shellscript") {
		t.Errorf("make-mime: exit %d, %s\n%s", code, stderr, out)
	}
	if code, _, _ := run(t, "make-mime", "-a", script+":nonsense"); code != exitError {
		t.Errorf("make-mime with an unknown type should fail without --force: exit %d", code)
	}
}

func TestNetConvert(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := run(t, "net-convert", "-p", "../../netup/testdata/convert/v1-static4.yaml", "-k", "yaml", "-O", "eni", "-d", out)
	if code != exitOK {
		t.Fatalf("net-convert: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "etc/network/interfaces.d/50-cloud-init"))
	if err != nil || !strings.Contains(string(b), "iface") {
		t.Errorf("ENI output: %v\n%s", err, b)
	}
}

func TestHelpAndUnknown(t *testing.T) {
	if code, out, _ := run(t, "help"); code != exitOK || !strings.Contains(out, "apply") {
		t.Errorf("help: %d %q", code, out)
	}
	if code, _, _ := run(t, "frobnicate"); code != exitError {
		t.Errorf("unknown command exit %d", code)
	}
	if code, out, _ := run(t, "version"); code != exitOK || !strings.HasPrefix(out, "seedinit ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// moduleStatus reads one module's status and message from apply --json.
func moduleStatus(t *testing.T, report, name string) (status, msg string) {
	t.Helper()
	var r struct {
		Stages []struct {
			Modules []struct{ Name, Status, Error string }
		}
	}
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatalf("apply --json: %v\n%s", err, report)
	}
	for _, s := range r.Stages {
		for _, m := range s.Modules {
			if m.Name == name {
				return m.Status, m.Error
			}
		}
	}
	t.Fatalf("no module %s in the report", name)
	return "", ""
}

// A target without a shell cannot run runcmd yet: scripts_user is
// skipped, naming the script and the missing interpreter, the apply
// succeeds, and the next apply, once the target has a shell, runs it.
func TestApplyWithoutShellSkipsScriptsThenRunsThem(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "running scripts in another root needs chroot, so root")
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		testenv.Skip(t, "needs /bin/busybox (busybox-static) to give the root a shell")
	}
	root := newTargetRoot(t)
	seedDir := "../../images/examples/appliance"
	code, out, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--json")
	if code != exitOK {
		t.Fatalf("apply into a root without a shell: exit %d, want %d\n%s", code, exitOK, stderr)
	}
	status, msg := moduleStatus(t, out, "scripts_user")
	runcmd := "/var/lib/cloud/instances/waf-0001/scripts/runcmd"
	if status != "skipped" || !strings.Contains(msg, runcmd) || !strings.Contains(msg, "interpreter /bin/sh") {
		t.Errorf("scripts_user: %s %q, want skipped naming %s and /bin/sh", status, msg, runcmd)
	}

	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "date", "hostname", "mkdir", "echo"} {
		os.Symlink("busybox", filepath.Join(root, "bin", applet))
	}
	code, out, stderr = run(t, "apply", "--root", root, "--seed", seedDir, "--json")
	if code != exitOK {
		t.Fatalf("apply once the root has a shell: exit %d\n%s", code, stderr)
	}
	if status, msg := moduleStatus(t, out, "scripts_user"); status != "ran" {
		t.Errorf("scripts_user once the root has a shell: %s %q, want ran", status, msg)
	}
	if _, err := os.Stat(filepath.Join(root, "var/log/waf-firstboot.log")); err != nil {
		t.Errorf("runcmd did not run: %v", err)
	}
	_, out, _ = run(t, "apply", "--root", root, "--seed", seedDir, "--json")
	if status, _ := moduleStatus(t, out, "scripts_user"); status != "already-ran" {
		t.Errorf("scripts_user on the third apply: %s, want already-ran", status)
	}

	// A script that runs and fails is a failure, not retried.
	perBoot := filepath.Join(root, "var/lib/cloud/scripts/per-boot")
	os.MkdirAll(perBoot, 0o755)
	if err := os.WriteFile(filepath.Join(perBoot, "fails"), []byte("#!/bin/sh\nexit 4\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "apply", "--root", root, "--seed", seedDir, "--json")
	if status, msg := moduleStatus(t, out, "scripts_per_boot"); code != exitRecoverable || status != "failed" || !strings.Contains(msg, "exit status 4") {
		t.Errorf("a per-boot script exiting 4: exit %d, %s %q; want exit %d, failed with its status", code, status, msg, exitRecoverable)
	}
}

// TestApplyToRootWithoutAccounts is a u-root system as its uinit sees it:
// no /etc/passwd at all. users_groups starts the database with root, and
// the ssh module, which installs root's keys, finds root in it.
func TestApplyToRootWithoutAccounts(t *testing.T) {
	root := t.TempDir()
	code, out, stderr := run(t, "apply", "--root", root, "--seed", "../../images/examples/appliance")
	if code != exitOK {
		t.Fatalf("apply exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, out, stderr)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"root:x:0:0:root:/root:/bin/sh\n", "\nadmin:x:1000:"} {
		if !strings.Contains(string(passwd), want) {
			t.Errorf("/etc/passwd lacks %q:\n%s", want, passwd)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "root/.ssh/authorized_keys")); err != nil {
		t.Errorf("root's authorized_keys: %v", err)
	}
}

func TestInitramfsBuildFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.cpio")
	code, _, stderr := run(t, "initramfs", "build", "--no-init", "--compress", "zstd", "-o", out)
	if code != exitError || !strings.Contains(stderr, `--compress "zstd"`) {
		t.Errorf("--compress zstd: exit %d, stderr %q; want exit %d naming the value", code, stderr, exitError)
	}
	// Without an init and without modules: the device nodes alone, bare.
	code, _, stderr = run(t, "initramfs", "build", "--no-init", "--compress", "none", "--seedinit", "/nonexistent", "-o", out)
	if code != exitOK {
		t.Fatalf("--no-init --compress none: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("070701")) || bytes.Contains(b, []byte("init\x00")) {
		t.Errorf("want a bare newc cpio without /init, got %q...", b[:min(len(b), 120)])
	}
}

// The Debian package's manual page names every command, so that it does
// not fall behind the binary.
func TestManualPageListsEveryCommand(t *testing.T) {
	page, err := os.ReadFile("../../images/deb/seedinit.8")
	if err != nil {
		t.Fatal(err)
	}
	for name := range commands {
		if !strings.Contains(string(page), "\n.B "+name+"\n") {
			t.Errorf("images/deb/seedinit.8 lacks the command %q", name)
		}
	}
}

// version --long says what the binary was built from: the Go version
// and every module, with its checksum.
func TestVersionLong(t *testing.T) {
	code, out, _ := run(t, "version", "--long")
	if code != exitOK || !strings.HasPrefix(out, "seedinit ") || !strings.Contains(out, "\ngo go1.") ||
		!strings.Contains(out, "\ndep github.com/vishvananda/netlink v") || !strings.Contains(out, "\nmodule github.com/seedinit/seedinit\n") {
		t.Errorf("version --long:\n%s", out)
	}
}

// A bootcmd that starts a daemon ("sleep 300 &") held `seedinit apply`
// until the module's 15-minute deadline: the daemon kept the command's
// output open. The apply must end with bootcmd ran, its output kept and
// the daemon named in it, and the daemon left running.
func TestApplyBootcmdDaemonDoesNotHoldTheApply(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "running bootcmd in another root needs chroot, so root")
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		testenv.Skip(t, "needs /bin/busybox (busybox-static) to give the root a shell")
	}
	root := newTargetRoot(t)
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "sleep", "echo"} {
		os.Symlink("busybox", filepath.Join(root, "bin", applet))
	}
	// The shell gives a background job /dev/null for its input.
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	if err := syscall.Mknod(filepath.Join(root, "dev/null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		testenv.Skipf(t, "cannot make /dev/null in the test's root: %v", err)
	}
	seedDir := t.TempDir()
	os.WriteFile(filepath.Join(seedDir, "meta-data"), []byte("instance-id: daemon-1\n"), 0o644)
	os.WriteFile(filepath.Join(seedDir, "user-data"), []byte("#cloud-config\nbootcmd:\n- echo before\n- sleep 300 &\n- echo $! > /daemon.pid\n"), 0o644)
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(root, "daemon.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	type result struct {
		code        int
		out, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, stderr := run(t, "apply", "--root", root, "--seed", seedDir, "--stage", "network", "--json")
		done <- result{code, out, stderr}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		// Not a timing claim: the old code waited 15 minutes, for ever
		// for PID 1; this only keeps the test from waiting as long.
		t.Fatal("seedinit apply still running 3 minutes after a bootcmd started a daemon")
	}
	if r.code != exitOK {
		t.Fatalf("apply: exit %d, want %d\n%s", r.code, exitOK, r.stderr)
	}
	if status, msg := moduleStatus(t, r.out, "bootcmd"); status != "ran" {
		t.Errorf("bootcmd: %s %q, want ran", status, msg)
	}
	log, _ := os.ReadFile(filepath.Join(root, "var/log/seedinit-output.log"))
	if !strings.Contains(string(log), "before\n") || !strings.Contains(string(log), "background process sleep") {
		t.Errorf("the output log does not keep the output and name the daemon:\n%s", log)
	}
	b, err := os.ReadFile(filepath.Join(root, "daemon.pid"))
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid <= 1 || syscall.Kill(pid, 0) != nil {
		t.Errorf("the daemon is not running after the apply (pid file: %q, %v)", b, err)
	}
}
