package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/pgstore"
	"github.com/seedinit/seedinit/serve/state"
)

const serveStatusUsage = "serve status: usage: seedinit serve status (--state DIR [--inventory DIR] | --db DSN | --url http://SERVER) [--format text|json]"

// maxStatusAnswer caps what a server's /status may send back: a line per
// instance of a large lab.
const maxStatusAnswer = 64 << 20

// runServeStatus is `seedinit serve status`: each instance's state, read
// from the state folder (offline, the server running or not) or asked of
// a running server's /status.
func runServeStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve status", flag.ContinueOnError)
	stateDir := fs.String("state", "", "the server's state folder")
	invDir := fs.String("inventory", "", "with --state: list the inventory's instances, waiting ones included")
	server := fs.String("url", "", "ask a running server's /status instead (http://HOST:PORT)")
	dsn := fs.String("db", "", "read the state replicas keep in PostgreSQL, with the inventory stored there")
	format := fs.String("format", "text", "text or json")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	sources := 0
	for _, s := range []string{*stateDir, *server, *dsn} {
		if s != "" {
			sources++
		}
	}
	if len(rest) != 0 || sources != 1 || (*invDir != "" && *stateDir == "") {
		return fail(stderr, serveStatusUsage)
	}
	if *format != "text" && *format != "json" {
		return fail(stderr, "serve status: --format %q: want text or json", *format)
	}
	if *server != "" {
		return serveStatusRemote(*server, *format, stdout, stderr)
	}
	if *dsn != "" {
		return serveStatusDB(*dsn, *format, stdout, stderr)
	}
	var inv *inventory.Inventory
	if *invDir != "" {
		var err error
		if inv, err = inventory.Load(*invDir); err != nil {
			var problems inventory.Problems
			if errors.As(err, &problems) {
				return fail(stderr, "serve status: --inventory %s: %d problems (seedinit serve check)", *invDir, len(problems))
			}
			return fail(stderr, "serve status: %v", err)
		}
	}
	store, err := state.ReadFileStore(*stateDir)
	if err != nil {
		return fail(stderr, "serve status: %v", err)
	}
	defer store.Close()
	for _, p := range store.Problems {
		fmt.Fprintf(stderr, "seedinit: serve status: warning: %s\n", p)
	}
	return writeStatus(context.Background(), store, inv, *format, stdout, stderr)
}

// writeStatus writes the status of inv's instances (nil: of every
// record) in store.
func writeStatus(ctx context.Context, store state.Store, inv *inventory.Inventory, format string, stdout, stderr io.Writer) int {
	entries, err := state.Entries(ctx, store, inv)
	if err != nil {
		return fail(stderr, "serve status: %v", err)
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(state.NewStatusJSON(entries)); err != nil {
			return fail(stderr, "serve status: %v", err)
		}
		return exitOK
	}
	if err := state.WriteText(stdout, entries); err != nil {
		return fail(stderr, "serve status: %v", err)
	}
	return exitOK
}

// serveStatusDB is status --db: the replicas' shared state, listed with
// the latest inventory stored (records only when there is none).
func serveStatusDB(dsn, format string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	db, err := pgstore.Open(ctx, dsn, nil)
	if err != nil {
		return fail(stderr, "serve status: %v", err)
	}
	defer db.Close()
	inv, _, err := db.Inventory(ctx)
	if err != nil && !errors.Is(err, pgstore.ErrNoInventory) {
		var problems inventory.Problems
		if !errors.As(err, &problems) {
			return fail(stderr, "serve status: %v", err)
		}
		fmt.Fprintf(stderr, "seedinit: serve status: warning: the stored inventory has %d problems here: records only\n", len(problems))
	}
	return writeStatus(ctx, db, inv, format, stdout, stderr)
}

func serveStatusRemote(server, format string, stdout, stderr io.Writer) int {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(stderr, "serve status: --url %q: want http://HOST[:PORT]", server)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + state.StatusPath
	if format == "json" {
		u.RawQuery = "format=json"
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(u.String())
	if err != nil {
		return fail(stderr, "serve status: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusAnswer))
	if err != nil {
		return fail(stderr, "serve status: read %s: %v", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fail(stderr, "serve status: %s: %s: %s", u.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	stdout.Write(body)
	return exitOK
}
