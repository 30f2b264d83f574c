package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/ds"
)

// datasourceEnv is the datasource search's view of this machine, with
// /etc/cloud read from root.
func datasourceEnv(rootDir string, debug bool, stderr io.Writer) (*ds.Env, func(), error) {
	root, err := rootfs.Open(rootDir)
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	env, cfgErr := ds.HostEnv(root, log)
	if cfgErr != nil {
		fmt.Fprintf(stderr, "seedinit: datasource configuration: %v\n", cfgErr)
	}
	return env, func() { root.Close() }, nil
}

// runDetect prints which datasource this machine has and why, like
// ds-identify, without fetching more than the probes need.
func runDetect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit detect", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "root whose /etc/cloud configuration to read")
	budget := fs.Duration("budget", 0, "time limit for the search when nothing answers (default: configured, else 2s)")
	asJSON := fs.Bool("json", false, "print JSON")
	debug := fs.Bool("debug", false, "log each probe")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	env, done, err := datasourceEnv(*rootDir, *debug, stderr)
	if err != nil {
		return fail(stderr, "detect: %v", err)
	}
	defer done()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := ds.RunDetect(ctx, stdout, env, *budget, *asJSON); err != nil {
		if errors.Is(err, ds.ErrNoDatasource) {
			return exitError
		}
		return fail(stderr, "detect: %v", err)
	}
	return exitOK
}

// runFetch finds the datasource (or fetches the one named, from --url)
// and writes the seed as a NoCloud directory plus instance-data.json, for
// `seedinit apply --seed DIR` and for bug reports.
func runFetch(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit fetch", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "root whose /etc/cloud configuration to read")
	name := fs.String("datasource", "", "fetch this datasource without probing (NoCloud, ConfigDrive, OpenStack, Ec2, ...)")
	url := fs.String("url", "", "the datasource's endpoint (with --datasource)")
	out := fs.String("out", "", "directory to write the seed into (required)")
	budget := fs.Duration("budget", 0, "time limit for the search")
	debug := fs.Bool("debug", false, "log each request")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	env, done, err := datasourceEnv(*rootDir, *debug, stderr)
	if err != nil {
		return fail(stderr, "fetch: %v", err)
	}
	defer done()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := ds.RunFetch(ctx, stdout, env, ds.FetchRequest{Datasource: *name, URL: *url, Out: *out, Budget: *budget}); err != nil {
		return fail(stderr, "fetch: %v", err)
	}
	return exitOK
}
