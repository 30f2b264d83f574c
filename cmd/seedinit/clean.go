package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func runClean(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit clean", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	logs := fs.Bool("logs", false, "also remove seedinit's logs")
	if _, code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	root, err := rootfs.Open(*rootDir)
	if err != nil {
		return fail(stderr, "clean: %v", err)
	}
	defer root.Close()
	// Like cloud-init clean: everything under /var/lib/cloud but the seed
	// directory, which the image's maker put there.
	entries, err := root.ReadDir(apply.CloudDir)
	if err != nil && root.Exists(apply.CloudDir) {
		return fail(stderr, "clean: %v", err)
	}
	var failed bool
	remove := func(p string) {
		if err := root.RemoveAll(p); err != nil {
			fmt.Fprintf(stderr, "seedinit: clean: %v\n", err)
			failed = true
		}
	}
	for _, e := range entries {
		if e.Name() != "seed" {
			remove(apply.Path(e.Name()))
		}
	}
	remove("/run/cloud-init")
	if *logs {
		for _, p := range []string{"/var/log/seedinit.log", "/var/log/seedinit-output.log"} {
			remove(p)
		}
	}
	if failed {
		return exitError
	}
	return exitOK
}
