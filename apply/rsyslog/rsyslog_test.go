package rsyslog

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name         string
		cfg          apply.Config
		live         bool
		wantFile     string
		wantContent  string
		wantCommands [][]string
		wantErr      bool
	}{
		{
			name: "remotes sorted without user-data, reloaded when live",
			cfg: apply.Config{"rsyslog": map[string]any{"remotes": map[string]any{
				"b": "10.0.0.2", "a": "@@[fd00::1]:514"}}},
			live:         true,
			wantFile:     "/etc/rsyslog.d/20-cloud-config.conf",
			wantContent:  "# begin remotes\n*.* @@[fd00::1]:514 # a\n*.* @10.0.0.2 # b\n# end remotes\n",
			wantCommands: [][]string{{"service", "rsyslog", "restart"}},
		},
		{
			name:        "not live: files only",
			cfg:         apply.Config{"rsyslog": []any{"*.* @@h"}, "rsyslog_dir": "/srv/rs"},
			wantFile:    "/srv/rs/20-cloud-config.conf",
			wantContent: "*.* @@h\n",
		},
		{
			name: "absolute filename replaces the directory",
			cfg: apply.Config{"rsyslog": map[string]any{"configs": []any{
				map[string]any{"filename": "/etc/rsyslog.conf", "content": "x"}}}},
			wantFile:    "/etc/rsyslog.conf",
			wantContent: "x\n",
		},
		{
			name:         "custom reload argv, bad entry does not stop the good one",
			cfg:          apply.Config{"rsyslog": map[string]any{"configs": []any{map[string]any{"filename": int64(3), "content": "x"}, "good"}, "service_reload_command": []any{"sv", "restart", "rsyslog"}}},
			live:         true,
			wantFile:     "/etc/rsyslog.d/20-cloud-config.conf",
			wantContent:  "good\n",
			wantCommands: [][]string{{"sv", "restart", "rsyslog"}},
			wantErr:      true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for round := 0; round < 2; round++ {
				env := applytest.NewEnvAt(t, dir, tt.cfg)
				env.Sys.IsLive = tt.live
				err := run(context.Background(), env.Env)
				if (err != nil) != tt.wantErr {
					t.Fatalf("round %d: run error = %v, want error %v", round, err, tt.wantErr)
				}
				got, rerr := env.Root.ReadFile(tt.wantFile)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if diff := cmp.Diff(tt.wantContent, string(got)); diff != "" {
					t.Errorf("round %d: %s (-want +got):\n%s", round, tt.wantFile, diff)
				}
				var cmds [][]string
				for _, c := range env.Sys.Commands {
					cmds = append(cmds, c.Argv)
				}
				if diff := cmp.Diff(tt.wantCommands, cmds); diff != "" {
					t.Errorf("round %d: commands (-want +got):\n%s", round, diff)
				}
			}
		})
	}
}

func TestRunSkipsWithoutKey(t *testing.T) {
	env := applytest.NewEnv(t, apply.Config{})
	if err := run(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("run without rsyslog = %v, want skipped", err)
	}
}

func TestRunReloadFailureIsWarning(t *testing.T) {
	env := applytest.NewEnv(t, apply.Config{"rsyslog": []any{"x"}})
	env.Sys.IsLive = true
	env.Sys.RunFunc = func(apply.Command) error { return errors.New("exit status 1") }
	if err := run(context.Background(), env.Env); err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(env.Warnings()) != 1 {
		t.Errorf("warnings = %q, want one for the failed reload", env.Warnings())
	}
}
