package stages

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

func init() {
	apply.Register(apply.Module{Name: "test_final_write", Keys: []string{"test_final_write"}, Run: func(ctx context.Context, env *apply.Env) error {
		return env.Root.WriteFile("/etc/test-final", []byte("final\n"), 0o644, rootfs.KeepOwner)
	}})
	// Makes a file anew on every boot: the shape of module that could turn
	// a relabel into a relabel on every boot.
	apply.Register(apply.Module{Name: "test_fresh_every_boot", Frequency: apply.PerBoot, Run: func(ctx context.Context, env *apply.Env) error {
		if err := env.Root.Remove("/etc/every-boot"); err != nil {
			return err
		}
		return env.Root.WriteFile("/etc/every-boot", []byte("x\n"), 0o644, rootfs.KeepOwner)
	}})
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func writeHost(t *testing.T, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestReadSELinuxConfig(t *testing.T) {
	tests := []struct {
		name, content string
		want          selinuxConfig
		enabled       bool
	}{
		{"RHEL's", "# This file controls the state of SELinux\nSELINUX=enforcing\nSELINUXTYPE=targeted\n", selinuxConfig{"enforcing", "targeted"}, true},
		{"permissive, mls", "SELINUX=permissive\nSELINUXTYPE=mls\n", selinuxConfig{"permissive", "mls"}, true},
		{"disabled", "SELINUX=disabled\n", selinuxConfig{"disabled", "targeted"}, false},
		{"case and spaces", "  SELINUX = Enforcing  \n", selinuxConfig{"enforcing", "targeted"}, true},
		{"quoted", "SELINUX=\"enforcing\"\n", selinuxConfig{"enforcing", "targeted"}, true},
		{"first wins", "SELINUX=disabled\nSELINUX=enforcing\n", selinuxConfig{"disabled", "targeted"}, false},
		{"commented out", "#SELINUX=enforcing\n", selinuxConfig{"", "targeted"}, false},
		{"a typo", "SELINUX=enforce\n", selinuxConfig{"enforce", "targeted"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeHost(t, dir, "etc/selinux/config", tt.content, 0o644)
			root, err := rootfs.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			got, err := readSELinuxConfig(root)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || got.enabled() != tt.enabled {
				t.Errorf("got %+v (enabled %v), want %+v (enabled %v)", got, got.enabled(), tt.want, tt.enabled)
			}
		})
	}
}

// The decision: restorecon on exactly what the run changed when the target
// is the live system with a policy loaded and has the tool; /.autorelabel
// when SELinux is configured but labels cannot be given now and the run
// made something new; nothing when SELinux is off in the target.
func TestRelabelDecision(t *testing.T) {
	const (
		none        = ""
		restorecon  = "/usr/sbin/restorecon -i /etc/ssh/sshd_config /home /home/admin /home/admin/.ssh /home/admin/.ssh/authorized_keys"
		setfiles    = "/usr/sbin/setfiles /etc/selinux/mls/contexts/files/file_contexts /etc/ssh/sshd_config /home /home/admin /home/admin/.ssh /home/admin/.ssh/authorized_keys"
		enforcing   = "SELINUX=enforcing\nSELINUXTYPE=targeted\n"
		permissive  = "SELINUX=permissive\nSELINUXTYPE=mls\n"
		disabled    = "SELINUX=disabled\n"
		noConfig    = "-"
		withTool    = "restorecon"
		withSetfile = "setfiles"
		noTool      = ""
	)
	tests := []struct {
		name        string
		config      string
		tool        string
		live        bool
		loaded      bool
		toolFails   bool
		onlyReplace bool // the run only replaced files that were there
		pending     bool // /.autorelabel is there already
		requested   bool // this instance asked for a relabel before
		wantCmd     string
		wantAuto    bool
		wantWarn    string
	}{
		{name: "enforcing, live, policy loaded, restorecon", config: enforcing, tool: withTool, live: true, loaded: true, wantCmd: restorecon},
		{name: "permissive, live, policy loaded, setfiles only", config: permissive, tool: withSetfile, live: true, loaded: true, wantCmd: setfiles},
		{name: "enforcing, initramfs: no policy loaded", config: enforcing, tool: withTool, live: true, loaded: false, wantAuto: true},
		{name: "enforcing, offline target", config: enforcing, tool: withTool, live: false, loaded: true, wantAuto: true},
		{name: "enforcing, live, no tool", config: enforcing, tool: noTool, live: true, loaded: true, wantAuto: true},
		{name: "restorecon fails", config: enforcing, tool: withTool, live: true, loaded: true, toolFails: true, wantCmd: restorecon, wantAuto: true, wantWarn: "restorecon: exit status 1: restorecon: bad path; asking for a relabel at the next boot instead"},
		{name: "disabled", config: disabled, tool: withTool, live: true, loaded: true},
		{name: "disabled, initramfs", config: disabled, tool: withTool, live: true},
		{name: "no config", config: noConfig, tool: withTool, live: true, loaded: true},
		{name: "no config, initramfs", config: noConfig, tool: noTool, live: true},
		{name: "initramfs, only replaced files: they kept their labels", config: enforcing, tool: withTool, live: true, onlyReplace: true},
		{name: "live, only replaced files: restorecon still runs", config: enforcing, tool: withTool, live: true, loaded: true, onlyReplace: true, wantCmd: "/usr/sbin/restorecon -i /etc/ssh/sshd_config"},
		{name: "a relabel already pending", config: enforcing, tool: withTool, pending: true, wantAuto: true},
		{name: "this instance had its relabel", config: enforcing, tool: withTool, requested: true, wantWarn: "6 new path(s) have no label (/home, /home/admin, /home/admin/.ssh, /home/admin/.ssh/authorized_keys, /etc/ssh/sshd_config.d and 1 more), but this instance had its relabel already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.config != noConfig {
				writeHost(t, dir, "etc/selinux/config", tt.config, 0o644)
			}
			if tt.tool != noTool {
				writeHost(t, dir, "usr/sbin/"+tt.tool, "#!/bin/sh\n", 0o755)
			}
			writeHost(t, dir, "etc/ssh/sshd_config", "old\n", 0o644)
			if tt.pending {
				writeHost(t, dir, ".autorelabel", "-F\n", 0o644)
			}
			root, err := rootfs.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			st, err := apply.OpenState(root, "i-1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.requested {
				if err := st.MarkRun(autorelabelSem, apply.PerInstance); err != nil {
					t.Fatal(err)
				}
			}
			since := root.ChangeCount()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(root.WriteFile("/etc/ssh/sshd_config", []byte("new\n"), 0o600, rootfs.KeepOwner))
			if !tt.onlyReplace {
				must(root.WriteFile("/home/admin/.ssh/authorized_keys", []byte("ssh-ed25519 AAAA\n"), 0o600, rootfs.KeepOwner))
				if tt.requested {
					must(root.WriteFile("/etc/ssh/sshd_config.d/50-cloud-init.conf", []byte("x\n"), 0o600, rootfs.KeepOwner))
				}
				must(root.WriteFile("/run/cloud-init/instance-data.json", []byte("{}\n"), 0o600, rootfs.KeepOwner))
			}
			sys := &applytest.FakeSystem{IsLive: tt.live}
			if tt.toolFails {
				sys.RunFunc = func(cmd apply.Command) error {
					cmd.Output.Write([]byte("restorecon: bad path\n"))
					return errors.New("exit status 1")
				}
			}
			opts := Options{Root: root, Sys: sys, Log: testLogger(t), SELinuxLoaded: func(*rootfs.Root) bool { return tt.loaded }}
			warns, errs := relabel(context.Background(), opts, st, since)
			if len(errs) > 0 {
				t.Errorf("errors: %q", errs)
			}
			ran := sys.Ran()
			var wantRan []string
			if tt.wantCmd != "" {
				// /run's file is relabelled too on the live system.
				wantRan = []string{strings.Replace(tt.wantCmd, "/home/admin/.ssh/authorized_keys", "/home/admin/.ssh/authorized_keys /run /run/cloud-init /run/cloud-init/instance-data.json", 1)}
			}
			if d := cmp.Diff(wantRan, ran); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if got := root.Exists(AutorelabelPath); got != tt.wantAuto {
				t.Errorf("/.autorelabel there: %v, want %v", got, tt.wantAuto)
			}
			if tt.wantAuto && !tt.pending {
				if !st.HasRun(autorelabelSem, apply.PerInstance) {
					t.Error("the request was not recorded for the instance")
				}
				if fi, err := os.Stat(filepath.Join(dir, ".autorelabel")); err != nil || fi.Size() != 0 {
					t.Errorf("/.autorelabel: %v, %v; want an empty file", fi, err)
				}
			}
			if tt.pending {
				if b, _ := os.ReadFile(filepath.Join(dir, ".autorelabel")); string(b) != "-F\n" {
					t.Errorf("a pending /.autorelabel was rewritten: %q", b)
				}
			}
			joined := strings.Join(warns, "\n")
			if tt.wantWarn == "" && joined != "" || !strings.Contains(joined, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", joined, tt.wantWarn)
			}
		})
	}
}

const relabelUserData = `#cloud-config
cloud_init_modules: [test_ok, test_fresh_every_boot]
cloud_config_modules: []
cloud_final_modules: [test_final_write]
test_ok: true
test_final_write: true
`

func runRelabelled(t *testing.T, dir string, sys *applytest.FakeSystem, loaded bool) *Report {
	t.Helper()
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rep, err := Run(context.Background(), Options{
		Root:          root,
		Seed:          &seed.Seed{Datasource: "NoCloud", InstanceID: "i-1", UserData: []byte(relabelUserData)},
		Sys:           sys,
		Log:           testLogger(t),
		SELinuxLoaded: func(*rootfs.Root) bool { return loaded },
		ModuleTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// On the live system the relabel is one restorecon after the last stage,
// of what every stage changed, status and result included.
func TestRunRelabelsEveryStageOnce(t *testing.T) {
	dir := t.TempDir()
	writeHost(t, dir, "etc/selinux/config", "SELINUX=enforcing\n", 0o644)
	writeHost(t, dir, "usr/sbin/restorecon", "#!/bin/sh\n", 0o755)
	sys := &applytest.FakeSystem{IsLive: true}
	runRelabelled(t, dir, sys, true)
	ran := sys.Ran()
	if len(ran) != 1 {
		t.Fatalf("ran %q, want one restorecon", ran)
	}
	argv := strings.Fields(ran[0])
	if argv[0] != "/usr/sbin/restorecon" {
		t.Fatalf("ran %q", ran[0])
	}
	for _, want := range []string{"/etc/test-ok", "/etc/test-final", "/etc/every-boot", StatusPath, ResultPath, "/var/lib/cloud/instances/i-1/sem"} {
		if !slices.Contains(argv, want) {
			t.Errorf("restorecon was not given %s: %q", want, argv)
		}
	}
	for _, p := range argv[2:] {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("restorecon was given %s, which is not in the target: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".autorelabel")); err == nil {
		t.Error("/.autorelabel was made though restorecon did the relabel")
	}
}

// From the initramfs: the first boot asks for a relabel; the boot after
// the relabel (which removes /.autorelabel) does not ask again even though
// a module makes a file anew on every boot, since a relabel reboots and
// asking each time would never let the machine come up.
func TestRunAutorelabelNeverLoops(t *testing.T) {
	dir := t.TempDir()
	writeHost(t, dir, "etc/selinux/config", "SELINUX=enforcing\n", 0o644)
	writeHost(t, dir, "usr/sbin/restorecon", "#!/bin/sh\n", 0o755)
	autorelabel := filepath.Join(dir, ".autorelabel")
	for boot := 1; boot <= 3; boot++ {
		sys := &applytest.FakeSystem{IsLive: true}
		rep := runRelabelled(t, dir, sys, false)
		if len(sys.Ran()) != 0 {
			t.Errorf("boot %d ran %q with no policy loaded", boot, sys.Ran())
		}
		_, err := os.Stat(autorelabel)
		if asked := err == nil; asked != (boot == 1) {
			t.Errorf("boot %d: /.autorelabel there: %v, want %v", boot, asked, boot == 1)
		}
		// Only what the module made anew is unlabelled on a later boot:
		// everything else a run writes replaced a file and kept its label.
		warnings := strings.Join(rep.Stages[len(rep.Stages)-1].Warnings, "\n")
		warned := strings.Contains(warnings, "1 new path(s) have no label (/etc/every-boot)")
		if warned != (boot > 1) {
			t.Errorf("boot %d: warnings %q; want one about the unlabelled /etc/every-boot: %v", boot, warnings, boot > 1)
		}
		// The relabel boot removes the file and reboots.
		os.Remove(autorelabel)
	}
}

// A directory that looks like selinuxfs in an image is not a loaded
// policy: only a mounted selinuxfs is.
func TestPolicyLoadedNeedsSelinuxfs(t *testing.T) {
	dir := t.TempDir()
	writeHost(t, dir, "sys/fs/selinux/class/file/index", "6\n", 0o644)
	writeHost(t, dir, "sys/fs/selinux/enforce", "1\n", 0o644)
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if policyLoaded(root) {
		t.Error("a plain directory was taken for a loaded SELinux policy")
	}
}
