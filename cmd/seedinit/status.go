package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/apply/target"
)

// statusSummary is `seedinit status --json`.
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
	asJSON := fs.Bool("json", false, "print JSON")
	long := fs.Bool("long", false, "also print the datasource and the errors")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	root, err := target.Open(*rootDir)
	if err != nil {
		return fail(stderr, "status: %v", err)
	}
	defer root.Close()
	sum, err := summarize(root)
	if err != nil {
		return fail(stderr, "status: %v", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "status: %s\n", sum.Status)
		if *long {
			if sum.LastUpdate != "" {
				fmt.Fprintf(stdout, "time: %s\n", sum.LastUpdate)
			}
			fmt.Fprintf(stdout, "detail:\n%s\n", sum.Datasource)
			for _, e := range sum.Errors {
				fmt.Fprintf(stdout, "error: %s\n", e)
			}
			for _, w := range sum.RecoverableErrors["WARNING"] {
				fmt.Fprintf(stdout, "warning: %s\n", w)
			}
		}
	}
	switch {
	case sum.Status == "error":
		return exitError
	case len(sum.RecoverableErrors) > 0 && sum.Status == "done":
		return exitRecoverable
	}
	return exitOK
}

// summarize reads status.json the way `cloud-init status` does: "not run"
// without one, "running" while a stage has started and not finished,
// "error" when any stage recorded errors, else "done".
func summarize(root *target.Root) (*statusSummary, error) {
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
