// Package stages runs cloud-init's stages against a target root: it turns
// the seed's user-data and vendor-data into one cloud-config, keeps the
// /var/lib/cloud state, runs each stage's modules with their frequencies,
// and records status.json and result.json. A failing, panicking or hanging
// module is reported and the next one runs.
package stages

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/known"
	"github.com/seedinit/seedinit/apply/merge"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

// DefaultModuleTimeout bounds one module; scripts_user and runcmd are the
// ones that can take long, and a boot must still go on.
const DefaultModuleTimeout = 15 * time.Minute

// Options says what to run and where.
type Options struct {
	Root    *rootfs.Root
	Seed    *seed.Seed
	Stages  []apply.Stage
	Sys     apply.System
	Log     *slog.Logger
	Console io.Writer
	Random  io.Reader
	Now     func() time.Time
	Version string
	// Fetch serves #include URLs; nil uses the user-data decoder's default.
	Fetch         func(ctx context.Context, url string) ([]byte, error)
	ModuleTimeout time.Duration
	// MaxUserData caps decompressed user-data (0: the decoder's 16 MiB).
	MaxUserData int64
	// SELinuxLoaded reports whether the running kernel has an SELinux
	// policy loaded and the target sees it (its selinuxfs mounted in the
	// target), which restorecon needs; nil reads the target's selinuxfs.
	SELinuxLoaded func(root *rootfs.Root) bool
	// SeedErrors and SeedWarnings are what was found wrong with the seed
	// before the run (its trust decision), reported with the first
	// stage's own in the report and status.json.
	SeedErrors, SeedWarnings []string
	// SeedTrust is the trust decision the seed was let through by, kept
	// in status.json (nil: none was made, as for a seed kept from
	// before).
	SeedTrust *trust.Decision
	// CmdlineReportURL is the kernel command line's seedinit.report=: the
	// report URL when neither the config nor the meta-data names one,
	// and never under require (report.go).
	CmdlineReportURL string
}

// Module outcomes.
const (
	StatusRan        = "ran"
	StatusFailed     = "failed"
	StatusSkipped    = "skipped"
	StatusAlreadyRan = "already-ran"
)

// ModuleResult is one module's run.
type ModuleResult struct {
	Name      string          `json:"name"`
	Frequency apply.Frequency `json:"frequency"`
	Status    string          `json:"status"`
	Error     string          `json:"error,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	Duration  time.Duration   `json:"duration_ns"`
	Changes   []rootfs.Change `json:"changes,omitempty"`
}

// StageResult is one stage's run.
type StageResult struct {
	Stage    apply.Stage    `json:"stage"`
	Start    time.Time      `json:"start"`
	Finished time.Time      `json:"finished"`
	Modules  []ModuleResult `json:"modules"`
	Errors   []string       `json:"errors"`
	Warnings []string       `json:"warnings"`
}

// Report is what a run did.
type Report struct {
	Datasource string        `json:"datasource"`
	InstanceID string        `json:"instance_id"`
	Stages     []StageResult `json:"stages"`
	// ReportURL is where the instance's report goes (report.go), and
	// ReportFrom what named it; "" for nowhere. For PID 1, whose stages
	// send none, to report a handoff it refuses.
	ReportURL  string `json:"-"`
	ReportFrom string `json:"-"`
}

// Errors lists every stage's errors.
func (r *Report) Errors() []string {
	var out []string
	for _, s := range r.Stages {
		out = append(out, s.Errors...)
	}
	return out
}

// Prepared is the instance's config and decoded parts, made once per run.
type Prepared struct {
	Config     apply.Config
	UserData   *seed.Processed
	VendorData *seed.Processed
	Warnings   []string
	Errors     []string
}

// Run runs opts.Stages in order against opts.Root. The error is for what
// stops the run before any module (no seed, a bad instance-id, a state
// directory that cannot be written); module failures are in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Root == nil || opts.Seed == nil {
		return nil, errors.New("run stages: a target root and a seed are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Console == nil {
		opts.Console = io.Discard
	}
	if opts.Random == nil {
		opts.Random = rand.Reader
	}
	if opts.ModuleTimeout == 0 {
		opts.ModuleTimeout = DefaultModuleTimeout
	}
	if len(opts.Stages) == 0 {
		opts.Stages = apply.Stages
	}
	firstChange := opts.Root.ChangeCount()
	st, err := apply.OpenState(opts.Root, opts.Seed.InstanceID, opts.Now)
	if err != nil {
		return nil, fmt.Errorf("run stages: %w", err)
	}
	if st.NewInstance {
		opts.Log.Info("new instance", "instance_id", st.InstanceID, "previous", st.PreviousInstanceID)
	}
	sweepAtStart(opts.Root, st)
	report := &Report{Datasource: datasourceLine(opts.Seed), InstanceID: st.InstanceID}
	status := loadStatus(opts.Root, opts.Stages[0] == apply.StageLocal || st.NewInstance)
	status.setDatasource(report.Datasource)
	if opts.SeedTrust != nil {
		status.V1.Trust = opts.SeedTrust
	}

	var prep *Prepared
	var prestarted map[string]any
	for i, stage := range opts.Stages {
		res := StageResult{Stage: stage, Start: opts.Now()}
		status.start(stage, res.Start)
		writeStatus(opts.Root, status, opts.Log)
		if prep == nil {
			prep = Prepare(ctx, opts, st)
			res.Errors = append(res.Errors, opts.SeedErrors...)
			res.Warnings = append(res.Warnings, opts.SeedWarnings...)
			res.Errors = append(res.Errors, prep.Errors...)
			res.Warnings = append(res.Warnings, prep.Warnings...)
			prestarted = prestart(ctx, opts, st, prep)
			report.ReportURL, report.ReportFrom = reportTarget(opts, prep.Config)
		}
		if prep != nil {
			runModules(ctx, opts, st, prep, prestarted, &res)
		}
		res.Finished = opts.Now()
		status.finish(stage, res.Finished, res.Errors, res.Warnings)
		writeStatus(opts.Root, status, opts.Log)
		if i == len(opts.Stages)-1 {
			if stage == apply.StageFinal {
				writeResult(opts.Root, status, opts.Log)
			}
			// Last, so that it covers every stage's files and the status,
			// and before the sync that makes the run durable.
			if warns, errs := relabel(ctx, opts, st, firstChange); len(warns)+len(errs) > 0 {
				res.Warnings = append(res.Warnings, warns...)
				res.Errors = append(res.Errors, errs...)
				status.finish(stage, res.Finished, res.Errors, res.Warnings)
				writeStatus(opts.Root, status, opts.Log)
				if stage == apply.StageFinal {
					writeResult(opts.Root, status, opts.Log)
				}
			}
		}
		if err := opts.Root.Sync(); err != nil {
			opts.Log.Warn("sync", "error", err.Error())
		}
		report.Stages = append(report.Stages, res)
		opts.Log.Info("stage finished", "stage", stage, "duration", res.Finished.Sub(res.Start).Round(time.Microsecond), "errors", len(res.Errors))
	}
	// After the status is final and durable, and only at the end of the
	// boot's last stage: PID 1's stages never get here, so the handoff
	// never waits for it (report.go).
	if opts.Stages[len(opts.Stages)-1] == apply.StageFinal && prep != nil {
		SendReport(ctx, opts.Root, report.ReportURL, report.ReportFrom, opts.Log)
	}
	return report, nil
}

// prestart calls the Prestart of each module of the run's stages that
// will run (as runModules decides), and returns what they gave by module.
func prestart(ctx context.Context, opts Options, st *apply.State, prep *Prepared) map[string]any {
	started := map[string]any{}
	for _, stage := range opts.Stages {
		mods, _, err := apply.ModulesFor(stage, prep.Config)
		if err != nil {
			continue // runModules reports it
		}
		for _, m := range mods {
			if m.Prestart == nil || willSkip(st, m) {
				continue
			}
			if _, done := started[m.Name]; done {
				continue
			}
			env := moduleEnv(opts, st, prep, m, stage)
			var v any
			if err := safego.Run("prestart "+m.Name, func() { v = m.Prestart(ctx, env) }); err != nil {
				env.Log.Error("prestart failed; the module does its work when it runs", "error", err.Error())
				continue
			}
			started[m.Name] = v
		}
	}
	return started
}

// willSkip reports whether m has run already for this instance (or ever,
// for a once module), so that it is not run again.
func willSkip(st *apply.State, m apply.Module) bool {
	if !st.NewInstance || m.Frequency == apply.PerOnce {
		return st.HasRun("config_"+m.Name, m.Frequency)
	}
	return false
}

func moduleEnv(opts Options, st *apply.State, prep *Prepared, m apply.Module, stage apply.Stage) *apply.Env {
	return &apply.Env{
		Root: opts.Root, Config: prep.Config, Seed: opts.Seed,
		UserData: prep.UserData, VendorData: prep.VendorData,
		Sys: opts.Sys, Log: opts.Log.With("module", m.Name), Random: opts.Random,
		State: st, Console: opts.Console, Stage: stage,
	}
}

func runModules(ctx context.Context, opts Options, st *apply.State, prep *Prepared, prestarted map[string]any, res *StageResult) {
	mods, missing, err := apply.ModulesFor(res.Stage, prep.Config)
	if err != nil {
		res.Errors = append(res.Errors, fmt.Sprintf("read module list: %v", err))
		mods, missing, _ = apply.ModulesFor(res.Stage, apply.Config{})
	}
	if prep.Config.Has(moduleListKey[res.Stage]) {
		// Only a list the user or the image gave is worth a warning; the
		// built-in one names modules seedinit does not have on purpose.
		for _, name := range missing {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: module %q is not supported by seedinit; skipped", moduleListKey[res.Stage], name))
		}
	}
	var worker moduleWorker
	defer worker.abandon()
	for _, m := range mods {
		if err := ctx.Err(); err != nil {
			// The run is being stopped (SIGTERM, the boot's deadline): the
			// rest stay unmarked and run next time.
			res.Errors = append(res.Errors, fmt.Sprintf("stage %s stopped before %s: %v", res.Stage, m.Name, err))
			return
		}
		mr := ModuleResult{Name: m.Name, Frequency: m.Frequency}
		semName := "config_" + m.Name
		if willSkip(st, m) {
			mr.Status = StatusAlreadyRan
			res.Modules = append(res.Modules, mr)
			continue
		}
		env := moduleEnv(opts, st, prep, m, res.Stage)
		// What was started for the module is handed to its first run in
		// this run only.
		env.Prestarted = prestarted[m.Name]
		delete(prestarted, m.Name)
		before := opts.Root.ChangeCount()
		start := time.Now()
		env.Log.Debug("module start")
		err := runOne(ctx, &worker, m, env, opts.ModuleTimeout)
		mr.Duration = time.Since(start)
		mr.Changes = opts.Root.Changes(before)
		mr.Warnings = env.Warnings()
		res.Warnings = append(res.Warnings, prefixAll(m.Name, mr.Warnings)...)
		switch {
		case err == nil:
			mr.Status = StatusRan
			env.Log.Info("module ran", "duration", mr.Duration.Round(time.Microsecond), "changes", len(mr.Changes))
		case onlySkips(err):
			mr.Status = StatusSkipped
			mr.Error = err.Error()
			env.Log.Info("module skipped", "reason", err.Error())
		default:
			mr.Status = StatusFailed
			mr.Error = err.Error()
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", m.Name, err))
			env.Log.Error("module failed", "duration", mr.Duration.Round(time.Microsecond), "error", err.Error())
		}
		// The module's files are made durable before its semaphore is
		// written, so that after a power cut either both are there or the
		// module runs again. A module that wrote nothing needs no flush.
		if len(mr.Changes) > 0 {
			if err := opts.Root.Sync(); err != nil {
				env.Log.Warn("sync", "error", err.Error())
			}
		}
		// Like cloud-init, a module that ran (even if it failed), or found
		// its work done, is not run again for the same instance; one that
		// could not act, or was cut short because the run is stopping, is
		// retried. The semaphore of
		// one whose run would repeat what it did (a user's command) is
		// made durable at once; others' with the next module's files.
		if (mr.Status != StatusSkipped || errors.Is(err, apply.ErrDone)) && ctx.Err() == nil {
			if err := st.MarkRun(semName, m.Frequency); err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s: record semaphore: %v", m.Name, err))
			} else if env.Unrepeatable() && m.Frequency != apply.PerBoot {
				if err := opts.Root.Sync(); err != nil {
					env.Log.Warn("sync", "error", err.Error())
				}
			}
		}
		res.Modules = append(res.Modules, mr)
	}
}

// onlySkips reports whether err says the module could not act and
// nothing else: a skip joined with a real failure (a module that joins
// its items' errors) is a failure, else it would be retried as if
// nothing had gone wrong and its failure never reported.
func onlySkips(err error) bool {
	switch {
	case err == nil:
		return false
	case err == apply.ErrSkipped:
		return true
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		for _, e := range errs {
			if !onlySkips(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	if wrapped := errors.Unwrap(err); wrapped != nil {
		return onlySkips(wrapped)
	}
	return errors.Is(err, apply.ErrSkipped) // a type with an Is of its own
}

var moduleListKey = map[apply.Stage]string{
	apply.StageNetwork: "cloud_init_modules",
	apply.StageConfig:  "cloud_config_modules",
	apply.StageFinal:   "cloud_final_modules",
}

// runOne runs a module with a deadline, turning a panic into an error. A
// module that ignores its context is abandoned at the deadline: the boot
// must go on.
func runOne(ctx context.Context, w *moduleWorker, m apply.Module, env *apply.Env, timeout time.Duration) error {
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := w.run(func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return m.Run(mctx, env)
	})
	select {
	case err := <-done:
		return err
	case <-mctx.Done():
		w.abandon()
		return fmt.Errorf("did not finish within %s: %w", timeout, mctx.Err())
	}
}

// moduleWorker runs a stage's modules one after another on one goroutine.
// A goroutine starts with a small stack that grows by copying, and every
// copy walks the stack's frames through the binary's function tables; a
// worker that lives through the stage grows its stack once instead of once
// per module, so fewer of those tables are read in (0.1 to 0.3 MiB of the
// bench's peak). A module that overruns its deadline keeps the goroutine
// it hangs in; the next module gets a new one.
type moduleWorker struct {
	jobs chan func()
}

func (w *moduleWorker) run(job func() error) <-chan error {
	if w.jobs == nil {
		w.jobs = make(chan func())
		jobs := w.jobs
		// Each job recovers its module's panic itself (runOne); this
		// guards the loop, which PID 1 runs too.
		safego.Go("stage worker", func() {
			for job := range jobs {
				job()
			}
		}, nil)
	}
	done := make(chan error, 1)
	w.jobs <- func() { done <- job() }
	return done
}

// abandon leaves the current goroutine to its hung module; it ends when
// the module returns.
func (w *moduleWorker) abandon() {
	if w.jobs != nil {
		close(w.jobs)
		w.jobs = nil
	}
}

// Prepare decodes user-data and vendor-data, merges them with the target's
// /etc/cloud config, writes cloud-init's per-instance copies and the
// instance data. Problems are collected, never fatal: a boot with broken
// user-data still runs every module it can.
func Prepare(ctx context.Context, opts Options, st *apply.State) *Prepared {
	p := &Prepared{}
	system, sysErrs := readSystemConfig(opts.Root)
	p.Errors = append(p.Errors, sysErrs...)
	vars := InstanceData(opts.Root, opts.Seed, system, opts.Version)
	// #include-once content is fetched once per instance and kept where
	// cloud-init keeps it.
	includeOnce := seed.FileIncludeCache{
		Dir:      seed.IncludeOnceDir,
		ReadFile: opts.Root.ReadFile,
		WriteFile: func(name string, data []byte) error {
			return opts.Root.WriteFile(name, data, 0o600, rootfs.KeepOwner)
		},
	}
	decode := func(what string, raw []byte) (*seed.Processed, map[string]any) {
		o := seed.Options{MaxSize: opts.MaxUserData, Fetch: opts.Fetch, TemplateVars: vars, IncludeOnce: includeOnce, Name: what}
		if opts.SeedTrust != nil && opts.SeedTrust.Policy == trust.Require.String() {
			o.NoIncludes = "seed trust is require, and a URL's content is no part of a signed seed (put it in the user-data: seedinit make-mime)"
		}
		if what == "user-data" {
			o.LaunchIndex = launchIndex(opts.Seed.Metadata)
		}
		proc, err := seed.ProcessUserData(ctx, raw, o)
		if err != nil {
			p.Errors = append(p.Errors, fmt.Sprintf("process %s: %v", what, err))
			return &seed.Processed{}, nil
		}
		p.Warnings = append(p.Warnings, summarize(what+": ", "warnings of "+what, proc.Warnings)...)
		p.Errors = append(p.Errors, summarize(what+": ", "includes of "+what+" refused", proc.Refused)...)
		cfg, errs := merge.MergeParts(proc.Parts)
		for _, e := range errs {
			p.Errors = append(p.Errors, fmt.Sprintf("%s: %v", what, e))
		}
		return proc, cfg
	}
	var userCfg, vendorCfg map[string]any
	p.UserData, userCfg = decode("user-data", opts.Seed.UserData)
	if vendorDataEnabled(userCfg, system) {
		p.VendorData, vendorCfg = decode("vendor-data", opts.Seed.VendorData)
	} else {
		p.VendorData = &seed.Processed{}
		opts.Log.Info("vendor-data disabled by vendor_data.enabled")
	}
	// cloud-init's order: instance configs over the datasource's over
	// /etc/cloud's.
	p.Config = apply.Config(merge.MergeMany(userCfg, vendorCfg, opts.Seed.Config, system))
	p.Warnings = append(p.Warnings, summarize("", "unknown or unsupported cloud-config keys", unknownKeys(userCfg, vendorCfg))...)

	write := func(name string, data []byte, mode uint32) {
		if _, err := opts.Root.WriteFileIfChanged(name, data, fsMode(mode), rootfs.KeepOwner); err != nil {
			p.Errors = append(p.Errors, err.Error())
		}
	}
	write(st.InstanceDir("user-data.txt"), opts.Seed.UserData, 0o600)
	write(st.InstanceDir("vendor-data.txt"), opts.Seed.VendorData, 0o600)
	write(st.InstanceDir("cloud-config.txt"), cloudConfigText(userCfg), 0o600)
	write(st.InstanceDir("vendor-cloud-config.txt"), cloudConfigText(vendorCfg), 0o600)
	write(st.InstanceDir("datasource"), []byte(datasourceLine(opts.Seed)+"\n"), 0o644)
	for _, f := range opts.Seed.Keep {
		if err := opts.Root.MkdirAll(path.Dir(f.Path), fsMode(f.DirMode), rootfs.KeepOwner); err != nil {
			p.Errors = append(p.Errors, fmt.Sprintf("keep the datasource's %s: %v", f.Path, err))
			continue
		}
		write(f.Path, f.Data, f.Mode)
	}
	if len(opts.Seed.NetworkConfig) > 0 {
		write(st.InstanceDir("network-config"), opts.Seed.NetworkConfig, 0o600)
	}
	data := InstanceData(opts.Root, opts.Seed, p.Config, opts.Version)
	write("/run/cloud-init/instance-data-sensitive.json", marshalJSON(data), 0o600)
	write("/run/cloud-init/instance-data.json", marshalJSON(Redacted(data)), 0o644)
	return p
}

// launchIndex is the metadata's launch-index (EC2, OpenStack): parts
// addressed to another instance of a multi-instance launch are left out.
func launchIndex(md map[string]any) *int {
	switch v := md["launch-index"].(type) {
	case int64:
		n := int(v)
		return &n
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return &n
		}
	}
	return nil
}

// vendorDataEnabled reads vendor_data.enabled, user-data first.
func vendorDataEnabled(cfgs ...map[string]any) bool {
	for _, c := range cfgs {
		vd, ok := c["vendor_data"].(map[string]any)
		if !ok {
			continue
		}
		if v, ok := vd["enabled"]; ok && v != nil {
			b, err := apply.AsBool(v)
			return err != nil || b
		}
	}
	return true
}

// systemKeys are cloud-config keys that configure cloud-init itself rather
// than a module.
var systemKeys = map[string]bool{
	"merge_how": true, "merge_type": true, "system_info": true, "datasource_list": true,
	"datasource": true, "cloud_init_modules": true, "cloud_config_modules": true,
	"cloud_final_modules": true, "vendor_data": true, "vendor_data2": true,
	"_log": true, "log_cfgs": true, "output": true, "def_log_file": true,
	"syslog_fix_perms": true, "disable_root": true, "disable_root_opts": true,
	"preserve_hostname": true, "manual_cache_clean": true, "network": true,
	"reporting": true, "ssh_pwauth": true, "allow_public_ssh_keys": true,
	// seedinit's own settings (the report, report.go).
	"seedinit": true,
}

// maxListedWarnings bounds the warnings of one kind that Prepare lists
// one by one. status.json repeats every warning and is written after each
// module: a config of 100,000 unknown keys made 100,000 warnings and kept
// apply busy for half a minute and 260 MiB writing them.
const maxListedWarnings = 100

// summarize prefixes the first maxListedWarnings warnings and sums up the
// rest in one more, which says what they were.
func summarize(prefix, what string, warnings []string) []string {
	out := make([]string, 0, min(len(warnings), maxListedWarnings+1))
	for i, w := range warnings {
		if i == maxListedWarnings {
			out = append(out, fmt.Sprintf("%s%d more %s, not listed (the first %d are)", prefix, len(warnings)-i, what, maxListedWarnings))
			break
		}
		out = append(out, prefix+w)
	}
	return out
}

func unknownKeys(cfgs ...map[string]any) []string {
	claimed := map[string]bool{}
	for _, name := range apply.Registered() {
		m, _ := apply.Lookup(name)
		for _, k := range m.Keys {
			claimed[k] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cfgs {
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if claimed[k] || systemKeys[k] || seen[k] {
				continue
			}
			seen[k] = true
			if known.IsKnown(k) {
				out = append(out, fmt.Sprintf("cloud-config key %q is cloud-init's but seedinit does not support it; ignored", k))
			} else {
				out = append(out, fmt.Sprintf("cloud-config key %q is unknown (not cloud-init's, not seedinit's); ignored", k))
			}
		}
	}
	return out
}

func datasourceLine(s *seed.Seed) string {
	line := "DataSource" + s.Datasource
	if s.Subplatform != "" {
		line += " [" + s.Subplatform + "]"
	}
	return line
}

func prefixAll(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + ": " + s
	}
	return out
}
