package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// statusSummary is what seedinit's own callers want from status.json
// beyond cloud-init's output: the recoverable errors (warnings).
type statusSummary struct {
	Status            string              `json:"status"`
	Datasource        string              `json:"datasource"`
	Stage             string              `json:"stage,omitempty"`
	Errors            []string            `json:"errors"`
	RecoverableErrors map[string][]string `json:"recoverable_errors"`
	LastUpdate        string              `json:"last_update,omitempty"`
	BootFinished      bool                `json:"boot_finished"`
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit status", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	format := fs.String("format", "tabular", "output format: tabular, json or yaml")
	asJSON := fs.Bool("json", false, "same as --format json")
	long := fs.Bool("long", false, "also print the boot status code, the last update and the detail")
	wait := fs.Bool("wait", false, "wait until the stages have finished")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *asJSON {
		*format = "json"
	}
	root, err := rootfs.Open(*rootDir)
	if err != nil {
		return fail(stderr, "status: %v", err)
	}
	defer root.Close()
	if *wait {
		var tick func()
		if *format == "tabular" {
			tick = func() { fmt.Fprint(stdout, ".") }
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		_, err := stages.WaitStatus(ctx, root, tick)
		stop()
		if err != nil {
			return fail(stderr, "status: %v", err)
		}
		if *format == "tabular" {
			fmt.Fprintln(stdout)
		}
	}
	text, code := stages.FormatStatus(root, *long, *format)
	if code == 2 {
		return fail(stderr, "status: %s", strings.TrimSpace(text))
	}
	fmt.Fprint(stdout, text)
	if code != 0 {
		return exitError
	}
	// Like newer cloud-init: done, but with warnings, is "recoverable".
	if sum, err := summarize(root); err == nil && len(sum.RecoverableErrors) > 0 && sum.Status == "done" {
		return exitRecoverable
	}
	return exitOK
}

// summarize reads status.json the way `cloud-init status` does: "not run"
// without one, "running" while a stage has started and not finished,
// "error" when any stage recorded errors, else "done".
func summarize(root *rootfs.Root) (*statusSummary, error) {
	sum := &statusSummary{Errors: []string{}, RecoverableErrors: map[string][]string{}}
	st, err := stages.ReadStatus(root)
	if errors.Is(err, fs.ErrNotExist) {
		sum.Status = "not run"
		return sum, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", stages.StatusPath, err)
	}
	if st.V1.Datasource != nil {
		sum.Datasource = *st.V1.Datasource
	}
	sum.Status = "done"
	var latest float64
	names := make([]string, 0, len(st.V1.Stages))
	for n := range st.V1.Stages {
		names = append(names, n)
	}
	sort.Strings(names)
	started := false
	for _, n := range names {
		s := st.V1.Stages[n]
		if s.Start != nil {
			started = true
			if s.Finished == nil {
				sum.Status = "running"
				sum.Stage = n
			}
		}
		for _, t := range []*float64{s.Start, s.Finished} {
			if t != nil && *t > latest {
				latest = *t
			}
		}
		sum.Errors = append(sum.Errors, s.Errors...)
		for k, v := range s.RecoverableErrors {
			sum.RecoverableErrors[k] = append(sum.RecoverableErrors[k], v...)
		}
	}
	if !started {
		sum.Status = "not run"
	}
	if len(sum.Errors) > 0 && sum.Status == "done" {
		sum.Status = "error"
	}
	if latest > 0 {
		sum.LastUpdate = time.UnixMicro(int64(latest * 1e6)).UTC().Format(time.RFC1123Z)
	}
	if id, err := root.ReadFile(apply.Path("data", "instance-id")); err == nil {
		sum.BootFinished = root.Exists(apply.Path("instances", strings.TrimSpace(string(id)), "boot-finished"))
	}
	return sum, nil
}
