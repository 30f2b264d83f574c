package boot

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/safego"
)

func strictRoot(t *testing.T, instance, refused string) *rootfs.Root {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "var/lib/cloud/data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if instance != "" {
		if err := os.WriteFile(filepath.Join(data, "instance-id"), []byte(instance+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if refused != "" {
		if err := os.WriteFile(filepath.Join(data, "seedinit-strict-refused"), []byte(refused), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestStrictRefusal(t *testing.T) {
	for _, tc := range []struct {
		name             string
		p                *PID1
		instance         string
		refused          string
		want             string // in the reason; "" for a handoff
		keep             bool
		refusalFileStays bool
	}{
		{name: "clean run, never refused", instance: "i-1", p: &PID1{foundSeed: true}},
		{name: "a module failed", p: &PID1{stagesErr: errors.New("1 module error(s): bootcmd: exit status 1")}, instance: "i-1", want: "bootcmd: exit status 1", keep: true},
		{name: "this instance was refused before", p: &PID1{}, instance: "i-1", refused: "i-1\n1 module error(s): bootcmd\n", want: "refused before for instance i-1, whose modules do not run again: 1 module error(s): bootcmd", refusalFileStays: true},
		{name: "another instance was refused", instance: "i-2", refused: "i-1\nbootcmd\n", p: &PID1{}},
		// Failures before the modules ran none of them: not kept, the
		// next boot tries again.
		{name: "provisioning panicked", p: &PID1{provisionFailures: []string{"provision: panic: boom"}}, instance: "i-1", want: "provision: panic: boom"},
		{name: "the seed was refused", p: &PID1{foundSeed: true, provisionFailures: []string{"the seed's trust decision (require) left parts out"}}, want: "trust decision"},
		{name: "the TPM did not answer", p: &PID1{foundSeed: true, provisionFailures: []string{"measure the seed into PCR 12: user-data: no answer"}}, want: "PCR 12"},
		{name: "no datasource, plain strict", p: &PID1{}},
		{name: "no datasource, strict=datasource, never provisioned", p: &PID1{Opts: Options{StrictDatasource: true}}, want: "no datasource gave a seed"},
		{name: "no datasource, strict=datasource, provisioned before", p: &PID1{Opts: Options{StrictDatasource: true}}, instance: "i-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := strictRoot(t, tc.instance, tc.refused)
			p := tc.p
			p.Log = slog.New(slog.DiscardHandler)
			got, keep := p.strictRefusal(root)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("refusal %q, want %q", got, tc.want)
			}
			if keep != tc.keep {
				t.Errorf("kept %v, want %v", keep, tc.keep)
			}
			_, err := root.Lstat(strictRefusedPath)
			if stays := err == nil; tc.refused != "" && stays != tc.refusalFileStays {
				t.Errorf("refusal file there afterwards: %v, want %v", stays, tc.refusalFileStays)
			}
		})
	}
}

// A panic in provisioning, in its own goroutine or in one it started, is
// a failure strict refuses: the step's error was dropped before, and a
// recovered panic in a goroutine never reached it.
func TestRunProvisionNotesFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		provision func(p *PID1) error
		want      string
	}{
		{"clean", func(*PID1) error { return nil }, ""},
		{"an error", func(*PID1) error { return errors.New("open /sysroot: no such file") }, "provision: open /sysroot"},
		{"a panic", func(*PID1) error { panic("nil map") }, "provision: panic: nil map"},
		{"a panic in a goroutine, recovered", func(p *PID1) error {
			p.reportPanic(&safego.PanicError{Name: "probe NoCloud", Value: "boom"})
			return nil
		}, "1 panic(s) recovered while provisioning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &PID1{Log: slog.New(slog.DiscardHandler)}
			p.Timeline = NewTimeline(time.Now(), p.Log)
			p.runProvision(func() error { return tc.provision(p) })
			got := strings.Join(p.provisionFailures, "; ")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("failures %q, want %q", got, tc.want)
			}
			reason, keep := p.strictRefusal(strictRoot(t, "i-1", ""))
			if (reason != "") != (tc.want != "") || keep {
				t.Errorf("strict: %q, kept %v", reason, keep)
			}
		})
	}
}

func TestNoteHandoffRefused(t *testing.T) {
	root := strictRoot(t, "i-1", "")
	if err := stages.NoteHandoffRefused(root, "seedinit.strict: refused: bootcmd failed"); err != nil {
		t.Fatal(err)
	}
	st, err := stages.ReadStatus(root)
	if err != nil {
		t.Fatal(err)
	}
	var config, final *stages.StageStatus
	for name, s := range st.V1.Stages {
		switch name {
		case "modules-config":
			config = s
		case "modules-final":
			final = s
		}
	}
	if config == nil || len(config.Errors) != 1 || !strings.Contains(config.Errors[0], "bootcmd failed") {
		t.Errorf("modules-config: %+v", config)
	}
	if final == nil || !strings.Contains(final.Waiting, "never") {
		t.Errorf("modules-final: %+v", final)
	}
	if _, err := root.Lstat(apply.Path("data", "status.json")); errors.Is(err, fs.ErrNotExist) {
		t.Error("status.json not written")
	}
}
