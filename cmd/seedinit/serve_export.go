package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/seedinit/seedinit/serve/export"
	"github.com/seedinit/seedinit/serve/inventory"
)

const serveExportUsage = "serve export: usage: seedinit serve export --format iso|vfat|configdrive [--sign-key KEY [--valid-for D]] [--report-url URL] --out DIR INVENTORY"

// runServeExport is `seedinit serve export`: one seed image per instance
// of an inventory, for appliances that read a disk and ask no server.
func runServeExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve export", flag.ContinueOnError)
	format := fs.String("format", "iso", "iso or vfat (NoCloud cidata), configdrive (OpenStack config-2, ISO9660)")
	out := fs.String("out", "", "folder the images are written to (NAME.iso, NAME.img, NAME.config-2.iso)")
	keyFile := fs.String("sign-key", "", "sign each image with this Ed25519 key (OpenSSH format, unencrypted), bound to its instance")
	validFor := fs.String("valid-for", "", "with --sign-key: each image is refused this long after signing (720h, 30d)")
	reportURL := fs.String("report-url", "", "a seedinit serve as instances reach it (http://HOST:PORT): each NoCloud image's meta-data that names no seedinit-report-url gets URL/report/NAME")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if *out == "" || len(rest) != 1 {
		return fail(stderr, serveExportUsage)
	}
	f, err := export.ParseFormat(*format)
	if err != nil {
		return fail(stderr, "serve export: %v", err)
	}
	opts := export.Options{Format: f}
	if *keyFile != "" {
		if opts.Key, err = readSigningKey(*keyFile); err != nil {
			return fail(stderr, "serve export: --sign-key: %v", err)
		}
	}
	if *validFor != "" {
		if *keyFile == "" {
			return fail(stderr, "serve export: --valid-for is for --sign-key")
		}
		if opts.ValidFor, err = parseValidity(*validFor); err != nil {
			return fail(stderr, "serve export: --valid-for %q: %v", *validFor, err)
		}
	}
	inv, err := inventory.Load(rest[0])
	var problems inventory.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return fail(stderr, "serve export: %s: %d problems (seedinit serve check)", rest[0], len(problems))
	}
	if err != nil {
		return fail(stderr, "serve export: %v", err)
	}
	if *reportURL != "" {
		if err := inv.AddReportURL(*reportURL); err != nil {
			return fail(stderr, "serve export: --report-url: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, _ := export.Export(ctx, inv, *out, opts)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stderr, "seedinit: serve %v\n", r.Err)
			continue
		}
		fmt.Fprintln(stdout, r.Path)
	}
	if ctx.Err() != nil {
		return fail(stderr, "serve export: interrupted after %d of %d instances", len(results), len(inv.Instances))
	}
	if failed > 0 {
		return fail(stderr, "serve export: %d of %d instances failed", failed, len(results))
	}
	return exitOK
}
