package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

func runApply(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit apply", flag.ContinueOnError)
	rootDir := fs.String("root", "", "target root directory (required)")
	seedDir := fs.String("seed", "", "NoCloud seed directory: meta-data, user-data, vendor-data, network-config (required)")
	stageName := fs.String("stage", "all", "stage to run: local, network, config, final or all")
	trustKeys := fs.String("trust-keys", "", "trusted Ed25519 keys for the seed's manifest (authorized_keys lines; default: the target's "+trust.KeysFile+")")
	trustPolicy := fs.String("trust", "", "seed trust: off, warn (report what no trusted manifest covers) or require (apply only what it covers); default: the target's "+trust.PolicyFile+", else off")
	out := outputFlags(fs)
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *rootDir == "" || *seedDir == "" {
		return fail(stderr, "apply: --root and --seed are required")
	}
	anchor, err := applyAnchor(*rootDir, *trustPolicy, *trustKeys)
	if err != nil {
		return fail(stderr, "apply: %v", err)
	}
	decide := func(_ string, sd *seed.Seed, log *slog.Logger) (*seed.Seed, *trust.Decision, bool) {
		applied, d := trust.DecideHere(sd, anchor, log)
		return applied, d, false
	}
	return runStages("apply", *rootDir, *seedDir, *stageName, decide, out, stdout, stderr)
}

// applyAnchor is apply's trust anchor: the target's own files, each
// unless --trust or --trust-keys names another.
func applyAnchor(rootDir, policyFlag, keysFlag string) (trust.Anchor, error) {
	a := trust.Anchor{}
	var where []string
	var problem string
	if policyFlag != "" {
		p, err := trust.ParsePolicy(policyFlag)
		if err != nil {
			return a, fmt.Errorf("--trust: %w", err)
		}
		a.Policy = p
		where = append(where, "--trust "+p.String())
	} else {
		if a.Policy, problem = trust.ReadPolicyFile(rootDir); problem != "" {
			a.Problems = append(a.Problems, problem)
		}
		where = append(where, "the target's "+trust.PolicyFile)
	}
	if keysFlag != "" {
		b, err := os.ReadFile(keysFlag)
		if err != nil {
			return a, fmt.Errorf("--trust-keys: %w", err)
		}
		if a.Keys, err = trust.ParseKeys(b, keysFlag); err != nil {
			return a, fmt.Errorf("--trust-keys: %w", err)
		}
		where = append(where, "--trust-keys "+keysFlag)
	} else {
		if a.Keys, problem = trust.ReadKeysFile(rootDir); problem != "" {
			a.Problems = append(a.Problems, problem)
		}
		where = append(where, "the target's "+trust.KeysFile)
	}
	a.Where = strings.Join(where, " and ")
	return a, nil
}

// decideFunc makes a run's trust decision over the seed it loaded: the
// seed to apply, the decision, and whether the decision was kept from
// the run that read the seed (reported in status.json already).
type decideFunc func(seedDir string, sd *seed.Seed, log *slog.Logger) (*seed.Seed, *trust.Decision, bool)

// output holds the flags apply and run share.
type output struct {
	asJSON, debug, quiet *bool
}

func outputFlags(fs *flag.FlagSet) output {
	return output{
		asJSON: fs.Bool("json", false, "print the report as JSON"),
		debug:  fs.Bool("debug", false, "log debug messages"),
		quiet:  fs.Bool("quiet", false, "print no report, only errors"),
	}
}

func runStages(verb, rootDir, seedDir, stageName string, decide decideFunc, out output, stdout, stderr io.Writer) int {
	var stageList []apply.Stage
	if stageName != "all" {
		st, err := apply.ParseStage(stageName)
		if err != nil {
			return fail(stderr, "%s: --stage: %v", verb, err)
		}
		stageList = []apply.Stage{st}
	}
	root, err := rootfs.Open(rootDir)
	if err != nil {
		return fail(stderr, "%s: %v", verb, err)
	}
	defer root.Close()
	sd, err := seed.LoadNoCloudDir(seedDir)
	if err != nil {
		return fail(stderr, "%s: %v", verb, err)
	}
	// A seed PID 1 kept for the final stage names its real datasource.
	// seed.ReadSeedFile: a named pipe here must not block PID 1.
	if b, err := seed.ReadSeedFile(filepath.Join(seedDir, "subplatform"), 4096); err == nil {
		sd.Subplatform = strings.TrimSpace(string(b))
	}
	if b, err := seed.ReadSeedFile(filepath.Join(seedDir, "datasource"), 4096); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		sd.Datasource = strings.TrimSpace(string(b))
	}

	level := slog.LevelInfo
	if *out.debug {
		level = slog.LevelDebug
	}
	var logBuf bytes.Buffer
	logOut := io.MultiWriter(stderr, &logBuf)
	if *out.quiet {
		logOut = &logBuf
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	// Before anything of the seed is used: from here on, sd is what the
	// decision lets through.
	sd, decision, kept := decide(seedDir, sd, log)
	var seedErrs, seedWarns []string
	if !kept {
		seedErrs, seedWarns = decision.Report()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// What modules show the user (final_message, RANDOM passwords) must not
	// mix with a JSON report.
	console := stdout
	if *out.asJSON {
		console = stderr
	}
	if os.Geteuid() != 0 && !root.IsHostRoot() {
		// Said once here rather than by every module that meets it.
		log.Warn("not running as root: new files belong to this user rather than their owners, and commands (bootcmd, runcmd, scripts) are skipped", "root", root.Dir())
	}
	host := &apply.HostSystem{Root: root, Log: log}
	// run works on the system this kernel booted; apply on a root that
	// may be an image, which the host's command line says nothing of.
	var cmdlineReport string
	if verb == "run" {
		cmdlineReport = boot.CmdlineReportURL()
	}
	start := time.Now()
	report, err := stages.Run(ctx, stages.Options{
		Root:    root,
		Seed:    sd,
		Stages:  stageList,
		Sys:     host,
		Log:     log,
		Console: console,
		Version: apply.Version,

		SeedErrors:   seedErrs,
		SeedWarnings: seedWarns,
		SeedTrust:    decision,

		CmdlineReportURL: cmdlineReport,
	})
	elapsed := time.Since(start)
	// The log is kept in the target like cloud-init.log, appended per run.
	if werr := root.AppendFile("/var/log/seedinit.log", logBuf.Bytes(), 0o640, rootfs.KeepOwner); werr != nil {
		fmt.Fprintf(stderr, "seedinit: %s: keep the log: %v\n", verb, werr)
	}
	if err != nil {
		return fail(stderr, "%s: %v", verb, err)
	}
	switch {
	case *out.asJSON:
		b, _ := json.MarshalIndent(report, "", "  ")
		fmt.Fprintln(stdout, string(b))
	case !*out.quiet:
		printReport(stdout, report, elapsed)
	}
	// power_state_change acts once everything else is over.
	if err := host.RunPendingPower(ctx); err != nil {
		fmt.Fprintf(stderr, "seedinit: %s: %v\n", verb, err)
	}
	if errs := report.Errors(); len(errs) > 0 {
		fmt.Fprintf(stderr, "seedinit: %s finished with %d error(s):\n%s\n", verb, len(errs), indent(strings.Join(errs, "\n"), "  "))
		return exitRecoverable
	}
	return exitOK
}

func printReport(w io.Writer, r *stages.Report, elapsed time.Duration) {
	fmt.Fprintf(w, "\ninstance %s from %s\n", r.InstanceID, r.Datasource)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tMODULE\tSTATUS\tTIME\tCHANGED")
	for _, s := range r.Stages {
		if len(s.Modules) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t%s\t\n", s.Stage, ms(s.Finished.Sub(s.Start)))
		}
		for _, m := range s.Modules {
			if m.Status == stages.StatusAlreadyRan {
				fmt.Fprintf(tw, "%s\t%s\t%s\t\t\n", s.Stage, m.Name, m.Status)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Stage, m.Name, m.Status, ms(m.Duration), changedPaths(m.Changes))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "total %s\n", ms(elapsed))
}

func changedPaths(changes []rootfs.Change) string {
	seen := map[string]bool{}
	var paths []string
	for _, c := range changes {
		if c.Op == "mkdir" || seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		paths = append(paths, c.Path)
	}
	const show = 4
	if len(paths) > show {
		return strings.Join(paths[:show], " ") + fmt.Sprintf(" (+%d more)", len(paths)-show)
	}
	return strings.Join(paths, " ")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
}
