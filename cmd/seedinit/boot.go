package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/seed/ds"
)

// runInit is PID 1: in an initramfs (as /init) it mounts the real root on
// /sysroot and switches to it; on the real root (as /sbin/init) it works
// on "/". It never returns.
func runInit(args []string, stdout, stderr io.Writer) int {
	if os.Getpid() != 1 {
		return fail(stderr, "init: must run as PID 1 (use 'seedinit run' from an init system)")
	}
	_, err := os.Stat("/etc/initrd-release")
	initramfs := err == nil || isInitramfsRoot()
	boot.Main(initramfs)
	return exitError // not reached
}

// isInitramfsRoot: an initramfs's "/" is a ramfs or tmpfs with no /sysroot
// mounted yet, and seedinit is its /init.
func isInitramfsRoot() bool {
	self, _ := os.Executable()
	return filepath.Clean(self) == "/init"
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit run", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	seedDir := fs.String("seed", "", "seed directory (default: "+boot.SeedCacheDir+", then /var/lib/cloud/seed/nocloud)")
	stageName := fs.String("stage", "all", "stage to run: local, network, config, final or all")
	afterHandoff := fs.Bool("after-handoff", false, "wait until PID 1 is the real init before running (used by PID 1 for the final stage)")
	out := outputFlags(fs)
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *seedDir == "" {
		for _, d := range []string{boot.SeedCacheDir, filepath.Join(*rootDir, "var/lib/cloud/seed/nocloud"), filepath.Join(*rootDir, "var/lib/cloud/seed/nocloud-net")} {
			if _, err := os.Stat(filepath.Join(d, "meta-data")); err == nil {
				*seedDir = d
				break
			}
		}
		if *seedDir == "" {
			// Called by an init system: search for the datasource as PID 1
			// would (the OS has brought the network up by the network stage)
			// and keep what is found for the later stages.
			if code := searchSeed(*rootDir, *stageName, *out.debug, stderr); code != exitOK {
				return code
			}
			*seedDir = boot.SeedCacheDir
		}
	}
	if *afterHandoff {
		waitForRealInit(*rootDir)
	}
	return runStages("run", *rootDir, *seedDir, *stageName, out, stdout, stderr)
}

// waitForRealInit returns once PID 1 has exec'd the real init (its
// executable is no longer ours) and that init has made the root writable,
// as every init does early from fstab; at most two minutes, then the final
// stage runs anyway and reports what it could not write.
func waitForRealInit(root string) {
	self, _ := os.Readlink("/proc/self/exe")
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if exe, err := os.Readlink("/proc/1/exe"); err == nil && exe != self && writable(root) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writable(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY == 0
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
// seed in /run/seedinit/seed. The local stage tries only local sources.
func searchSeed(rootDir, stageName string, debug bool, stderr io.Writer) int {
	env, done, err := datasourceEnv(rootDir, debug, stderr)
	if err != nil {
		return fail(stderr, "run: %v", err)
	}
	defer done()
	stage := ds.StageAll
	if stageName == "local" {
		stage = ds.StageLocal
	}
	res, err := ds.DetectStage(context.Background(), env, 0, stage)
	if res == nil || res.Seed == nil {
		return fail(stderr, "run: no datasource found: %v", err)
	}
	if err := boot.SaveSeed(res.Seed); err != nil {
		return fail(stderr, "run: keep the seed: %v", err)
	}
	return exitOK
}
