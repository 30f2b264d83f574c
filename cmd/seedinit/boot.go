package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/kept"
	"github.com/seedinit/seedinit/seed/trust"
)

// runInit is PID 1: in an initramfs (as /init) it mounts the real root on
// /sysroot and switches to it; on the real root (as /sbin/init) it works
// on "/". It never returns.
func runInit(args []string, stdout, stderr io.Writer) int {
	if os.Getpid() != 1 {
		return fail(stderr, "init: must run as PID 1 (use 'seedinit run' from an init system)")
	}
	// By what "/" is, not by the name seedinit was started as: u-root's
	// -initcmd makes /init a symlink to it, and a real root is never a
	// ramfs or tmpfs.
	boot.Main(boot.IsInitramfs())
	return exitError // not reached
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit run", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	seedDir := fs.String("seed", "", "seed directory (default: "+kept.Dir+", then /var/lib/cloud/seed/nocloud)")
	stageName := fs.String("stage", "all", "stage to run: local, network, config, final or all; none with --keep-self")
	afterHandoff := fs.Bool("after-handoff", false, "wait until PID 1 is the real init and the root is writable before running (used by PID 1 for the final stage)")
	waitMounts := fs.String("wait-for-mounts", "", "with --after-handoff, also wait until these comma-separated mount points (in --root) are mounted")
	waitNetwork := fs.String("wait-for-network", "", "with --after-handoff, then wait (at most 2 minutes) until these comma-separated interfaces have an address")
	keepSelf := fs.Bool("keep-self", false, "with --after-handoff, first copy this program into --root for the running system (used by PID 1 when it ran from an initramfs)")
	withDHCP := fs.Bool("dhcp", false, "when the search runs and no local source has the seed, take an ephemeral DHCP lease on the NICs first, as PID 1 does, for the network sources; it is taken off again when run ends")
	out := outputFlags(fs)
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *keepSelf && !*afterHandoff {
		return fail(stderr, "run: --keep-self is for --after-handoff")
	}
	if *withDHCP && (*stageName == "local" || *afterHandoff) {
		return fail(stderr, "run: --dhcp is for the network search, not --stage local or --after-handoff")
	}
	keepOnly := *stageName == "none"
	searched := false
	if keepOnly && !*keepSelf {
		return fail(stderr, "run: --stage none is for --keep-self")
	}
	// PID 1's final stage (--after-handoff) finds the drivers loaded.
	if !*afterHandoff {
		loadModulesInInitramfs(*rootDir, *out.debug, stderr)
	}
	if *seedDir == "" && !keepOnly {
		for _, d := range []string{kept.Dir, filepath.Join(*rootDir, "var/lib/cloud/seed/nocloud"), filepath.Join(*rootDir, "var/lib/cloud/seed/nocloud-net")} {
			if _, err := os.Stat(filepath.Join(d, "meta-data")); err == nil {
				*seedDir = d
				break
			}
		}
		if *seedDir == "" {
			// Called by an init system: search for the datasource as PID 1
			// would (the OS has brought the network up by the network stage)
			// and keep what is found for the later stages.
			code, takeDown := searchSeed(*rootDir, *stageName, *withDHCP, *out.debug, stderr)
			defer takeDown()
			if code != exitOK {
				return code
			}
			*seedDir = kept.Dir
			searched = true
		}
	}
	if *afterHandoff {
		wait := boot.AfterHandoff{Root: *rootDir, KeepSelf: *keepSelf, KeepOnly: keepOnly, Log: stderrLogger(*out.debug, stderr)}
		if *waitMounts != "" {
			wait.Mounts = strings.Split(*waitMounts, ",")
		}
		if *waitNetwork != "" {
			wait.Network = strings.Split(*waitNetwork, ",")
		}
		if err := wait.Wait(context.Background()); err != nil {
			return fail(stderr, "run: %v", err)
		}
		if keepOnly {
			return exitOK
		}
	}
	return runStages("run", *rootDir, *seedDir, *stageName, runDecision(*rootDir, searched), out, stdout, stderr)
}

// runDecision is run's trust decision, PID 1's rule on the system run
// works on: the anchor is the root's own /etc/seedinit, raised by
// seedinit.trust= on the kernel command line. A seed PID 1 or an earlier
// run's search kept in kept.Dir was decided when it was read: its
// decision stands unless the anchor here asks for more, and then it is
// decided again. searched: this run's own search made the kept decision,
// which its stages are the first to report.
func runDecision(rootDir string, searched bool) decideFunc {
	return func(seedDir string, sd *seed.Seed, log *slog.Logger) (*seed.Seed, *trust.Decision, bool) {
		a := runAnchor(rootDir)
		if d, err := kept.Decision(seedDir); err != nil {
			log.Warn("seed trust: the decision kept with the seed is unreadable; deciding again", "error", err.Error())
		} else if d != nil {
			if p, err := trust.ParsePolicy(d.Policy); err == nil && p >= a.Policy {
				if !searched {
					trust.Log(d, log)
				}
				return sd, d, !searched
			}
		}
		applied, d := trust.DecideHere(sd, a, log)
		return applied, d, false
	}
}

// runAnchor is the trust anchor of a run on rootDir.
func runAnchor(rootDir string) trust.Anchor {
	return boot.TrustAnchor(rootDir, "/etc/seedinit in the root "+rootDir, boot.KernelCmdline())
}

// stderrLogger logs to stderr like the stages.
func stderrLogger(debug bool, stderr io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// loadModulesInInitramfs is boot.LoadModulesInInitramfs, logging to
// stderr like the stages.
func loadModulesInInitramfs(rootDir string, debug bool, stderr io.Writer) {
	boot.LoadModulesInInitramfs(stderrLogger(debug, stderr), rootDir)
}

func runAnalyze(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit analyze", flag.ContinueOnError)
	file := fs.String("timeline", boot.TimelinePath, "timeline file")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return fail(stderr, "analyze: %v", err)
	}
	t, err := boot.ReadTimeline(b)
	if err != nil {
		return fail(stderr, "analyze: %s: %v", *file, err)
	}
	what := "show"
	if len(pos) > 0 {
		what = pos[0]
	}
	switch what {
	case "show":
		t.Show(stdout)
	case "blame":
		t.Blame(stdout)
	default:
		return fail(stderr, "analyze: unknown %q (want show or blame)", what)
	}
	return exitOK
}

// searchSeed runs the datasource search for `seedinit run` and keeps the
// seed in /run/seedinit/seed. The local stage tries only local sources;
// withDHCP takes an ephemeral lease before the network ones, which
// takeDown (never nil) takes off again.
func searchSeed(rootDir, stageName string, withDHCP, debug bool, stderr io.Writer) (code int, takeDown func()) {
	takeDown = func() {}
	env, done, err := datasourceEnv(rootDir, debug, stderr)
	if err != nil {
		return fail(stderr, "run: %v", err), takeDown
	}
	defer done()
	var res *ds.Result
	if withDHCP {
		res, takeDown, err = searchWithDHCP(context.Background(), env, stderrLogger(debug, stderr))
	} else {
		stage := ds.StageAll
		if stageName == "local" {
			stage = ds.StageLocal
		}
		res, err = ds.DetectStage(context.Background(), env, 0, stage)
	}
	if res == nil || res.Seed == nil {
		return fail(stderr, "run: no datasource found: %v", err), takeDown
	}
	// Decided here, as PID 1 decides, before anything of it is kept: the
	// later stages apply what the decision let through, and report it.
	sd, decision := trust.DecideHere(res.Seed, runAnchor(rootDir), stderrLogger(debug, stderr))
	if err := kept.Save(sd, decision); err != nil {
		return fail(stderr, "run: keep the seed: %v", err), takeDown
	}
	return exitOK, takeDown
}
