package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/seedinit/seedinit/apply/query"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func runQuery(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit query", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	all := fs.Bool("all", false, "print all instance data")
	listKeys := fs.Bool("list-keys", false, "list the keys below KEY (or the top level)")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return fail(stderr, "query: one KEY at most, got %d", len(pos))
	}
	if len(pos) == 0 && !*all && !*listKeys {
		return fail(stderr, "query: give a KEY (such as v1.instance_id), --all or --list-keys")
	}
	root, err := rootfs.Open(*rootDir)
	if err != nil {
		return fail(stderr, "query: %v", err)
	}
	defer root.Close()
	data, err := query.Read(root)
	if err != nil {
		return fail(stderr, "query: %v", err)
	}
	if *listKeys {
		var keys []string
		if len(pos) == 1 {
			keys, err = data.Keys(pos[0])
		} else {
			keys, err = data.TopKeys()
		}
		if errors.Is(err, query.ErrNotMapping) {
			return fail(stderr, "query: --list-keys: %s is not a mapping", pos[0])
		}
		if err != nil {
			return fail(stderr, "query: %v", err)
		}
		fmt.Fprintln(stdout, strings.Join(keys, "\n"))
		return exitOK
	}
	var v any
	if len(pos) == 1 {
		v, err = data.Value(pos[0])
	} else {
		v, err = data.All()
	}
	if err != nil {
		return fail(stderr, "query: %v", err)
	}
	if s, ok := v.(string); ok {
		fmt.Fprintln(stdout, s)
		return exitOK
	}
	if err := query.WriteJSON(stdout, v); err != nil {
		return fail(stderr, "query: %v", err)
	}
	return exitOK
}
