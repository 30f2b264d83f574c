// Package applytest gives module tests a temporary target root, a state
// directory and a fake System that records what it was asked to do.
package applytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// InstanceID is the instance-id NewEnv records.
const InstanceID = "iid-test-0001"

// FakeSystem records hostnames and commands instead of changing the machine.
type FakeSystem struct {
	mu        sync.Mutex
	IsLive    bool
	Hostnames []string
	Commands  []apply.Command
	// RunFunc, when set, decides what Run returns (and may write to
	// cmd.Output); otherwise Run succeeds.
	RunFunc func(cmd apply.Command) error
}

func (f *FakeSystem) Live() bool { return f.IsLive }

func (f *FakeSystem) SetHostname(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Hostnames = append(f.Hostnames, name)
	return nil
}

func (f *FakeSystem) Run(ctx context.Context, cmd apply.Command) error {
	f.mu.Lock()
	f.Commands = append(f.Commands, cmd)
	run := f.RunFunc
	f.mu.Unlock()
	if run != nil {
		return run(cmd)
	}
	return nil
}

// Ran returns the recorded commands' argv, joined by spaces.
func (f *FakeSystem) Ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.Commands {
		out = append(out, strings.Join(c.Argv, " "))
	}
	return out
}

// Env is an apply.Env over a temporary root, with its fakes at hand.
type Env struct {
	*apply.Env
	Sys     *FakeSystem
	Console *bytes.Buffer
}

// NewEnv makes an Env for cfg over a fresh temporary root with the state of
// InstanceID opened, logging to t.
func NewEnv(t testing.TB, cfg apply.Config) *Env {
	t.Helper()
	return NewEnvAt(t, t.TempDir(), cfg)
}

// NewEnvAt is NewEnv over an existing directory (to run a module twice on
// the same root, or to prepare files first).
func NewEnvAt(t testing.TB, dir string, cfg apply.Config) *Env {
	t.Helper()
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	st, err := apply.OpenState(root, InstanceID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = apply.Config{}
	}
	sys := &FakeSystem{}
	console := &bytes.Buffer{}
	return &Env{
		Env: &apply.Env{
			Root:    root,
			Config:  cfg,
			Seed:    &seed.Seed{Datasource: "NoCloud", InstanceID: InstanceID, LocalHostname: "test-host"},
			Sys:     sys,
			Log:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Random:  rand.Reader,
			State:   st,
			Console: console,
			Stage:   apply.StageNetwork,
		},
		Sys:     sys,
		Console: console,
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
