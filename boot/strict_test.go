package boot

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/apply/target"
)

func strictRoot(t *testing.T, instance, refused string) *target.Root {
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
	root, err := target.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestStrictRefusal(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stagesErr        error
		instance         string
		refused          string
		want             string // in the reason; "" for a handoff
		refusalFileStays bool
	}{
		{name: "clean run, never refused", instance: "i-1"},
		{name: "a module failed", stagesErr: errors.New("1 module error(s): bootcmd: exit status 1"), instance: "i-1", want: "bootcmd: exit status 1"},
		{name: "this instance was refused before", instance: "i-1", refused: "i-1\n1 module error(s): bootcmd\n", want: "refused before for instance i-1, whose modules do not run again: 1 module error(s): bootcmd", refusalFileStays: true},
		{name: "another instance was refused", instance: "i-2", refused: "i-1\nbootcmd\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := strictRoot(t, tc.instance, tc.refused)
			p := &PID1{stagesErr: tc.stagesErr, Log: slog.New(slog.DiscardHandler)}
			got := p.strictRefusal(root)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("refusal %q, want %q", got, tc.want)
			}
			_, err := root.Lstat(strictRefusedPath)
			if stays := err == nil; tc.refused != "" && stays != tc.refusalFileStays {
				t.Errorf("refusal file there afterwards: %v, want %v", stays, tc.refusalFileStays)
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
