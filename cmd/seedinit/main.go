// Command seedinit provisions a machine from its cloud's seed, the job
// cloud-init does, as one static binary. See the README for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/apply"
	_ "github.com/seedinit/seedinit/apply/all"
	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/internal/devprobe"
)

// Exit codes, as cloud-init status uses them.
const (
	exitOK          = 0
	exitError       = 1
	exitRecoverable = 2
)

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"apply":       {"apply a NoCloud seed directory to a target root", runApply},
	"status":      {"show the state of the last run", runStatus},
	"query":       {"print instance data (cloud-init's v1 keys)", runQuery},
	"clean":       {"remove the state so the next run starts over", runClean},
	"version":     {"print the version", runVersion},
	"init":        {"run as PID 1 (what /init and /sbin/init do)", runInit},
	"run":         {"run stages on this system, from an init system or after the handoff", runRun},
	"analyze":     {"print the boot timeline: show or blame", runAnalyze},
	"initramfs":   {"build an initramfs with seedinit as /init: initramfs build ...", runInitramfs},
	"net-convert": {"convert network config like cloud-init devel net-convert", runNetConvert},
	"growpart":    {"grow a partition to the end of its disk, like cloud-utils growpart", runGrowpart},
	"resizefs":    {"grow a mounted filesystem to its device's size, online", runResizefs},
	"schema":      {"validate cloud-config like cloud-init schema", runSchema},
	"seed":        {"build NoCloud or config-drive seed images: seed build ...", runSeed},
	"serve":       {"the fleet's side: serve an inventory's seeds (serve DIR; serve --db DSN for replicas over PostgreSQL), check it (serve check DIR), load it (serve load --db DSN DIR)", runServe},
	"detect":      {"say which datasource this machine has, and why", runDetect},
	"dhcp":        {"keep PID 1's DHCP leases after the handoff: dhcp keep --state FILE", runDHCP},
	"fetch":       {"fetch the instance's seed into a NoCloud directory", runFetch},
	"make-mime":   {"combine files into MIME multipart user-data like cloud-init devel make-mime", runMakeMIME},
}

func main() {
	// A helper PID 1 started to probe block devices for it.
	devprobe.ServeIfHelper()
	// As the kernel's init (an initramfs's /init, or /sbin/init on the
	// root) seedinit is PID 1 whatever its arguments say.
	if os.Getpid() == 1 {
		runInit(nil, os.Stdout, os.Stderr)
	}
	code := dispatch(os.Args[1:], os.Stdout, os.Stderr)
	// As u-root's uinit, seedinit leads the console's session: exiting
	// with it would hang the console up under u-root's init.
	boot.ReleaseControllingTerminal()
	os.Exit(code)
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitError
		}
		return exitOK
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "seedinit: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitError
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: seedinit COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'seedinit COMMAND -h' for a command's flags.")
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit version", flag.ContinueOnError)
	long := fs.Bool("long", false, "also the commit, the Go version and the modules built in")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	fmt.Fprintln(stdout, "seedinit", apply.Version)
	if *long {
		writeBuildInfo(stdout)
	}
	return exitOK
}

// writeBuildInfo prints what the running binary was built from, as the
// Go toolchain recorded it (`go version -m` reads the same): the commit,
// the Go version, the build settings that change the binary, and every
// module with its version and checksum.
func writeBuildInfo(w io.Writer) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "no build information in this binary")
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	commit := apply.Commit
	if commit == "" {
		commit = settings["vcs.revision"]
		if settings["vcs.modified"] == "true" {
			commit += " (with uncommitted changes)"
		}
	}
	if commit == "" {
		commit = "unknown (not built by scripts/build-seedinit, nor in a git checkout)"
	}
	fmt.Fprintf(w, "commit %s\n", commit)
	fmt.Fprintf(w, "go %s %s/%s\n", bi.GoVersion, settings["GOOS"], settings["GOARCH"])
	for _, k := range []string{"-tags", "-trimpath", "CGO_ENABLED", "GOAMD64", "GOARM64", "GOARM"} {
		if v, ok := settings[k]; ok {
			fmt.Fprintf(w, "build %s=%s\n", k, v)
		}
	}
	fmt.Fprintf(w, "module %s\n", bi.Main.Path)
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		fmt.Fprintf(w, "dep %s %s %s\n", m.Path, m.Version, m.Sum)
	}
}

// parseFlags parses flags wherever they stand among the positional
// arguments, so that "query KEY --root DIR" works like "query --root DIR KEY".
// A false ok means the caller returns code: 0 after -h, 1 after bad flags.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (positional []string, code int, ok bool) {
	fs.SetOutput(stderr)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitError, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, exitOK, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func fail(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "seedinit: "+format+"\n", args...)
	return exitError
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
