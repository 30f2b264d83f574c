package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/seedinit/seedinit/serve/inventory"
)

// runServe is `seedinit serve`: the fleet's side. Its verbs: check an
// inventory (check), and more below.
func runServe(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return runServeCheck(args[1:], stdout, stderr)
		case "export":
			return runServeExport(args[1:], stdout, stderr)
		case "status":
			return runServeStatus(args[1:], stdout, stderr)
		}
	}
	return fail(stderr, "serve: usage: seedinit serve check [--show INSTANCE] DIR")
}

// runServeCheck is `seedinit serve check DIR`: load the inventory as
// serving would, and say everything wrong with it.
func runServeCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve check", flag.ContinueOnError)
	show := fs.String("show", "", "also print this instance's parts as they are served")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return fail(stderr, "serve check: usage: seedinit serve check [--show INSTANCE] DIR")
	}
	inv, err := inventory.Load(rest[0])
	var problems inventory.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		fmt.Fprintf(stdout, "%s: %d problems\n", rest[0], len(problems))
		return exitError
	}
	if err != nil {
		return fail(stderr, "serve check: %v", err)
	}
	for _, w := range inv.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	if *show != "" {
		inst, ok := inv.Instance(*show)
		if !ok {
			return fail(stderr, "serve check: no instance %s in %s", *show, rest[0])
		}
		showInstance(stdout, inst)
	}
	fmt.Fprintf(stdout, "%s: %d instances, %d groups: ok\n", rest[0], len(inv.Instances), len(inv.Groups))
	return exitOK
}

// showInstance prints an instance's selectors and parts, for an operator
// to see what a template made.
func showInstance(w io.Writer, inst *inventory.Instance) {
	fmt.Fprintf(w, "instance %s (%s)\n", inst.Name, inst.File)
	fmt.Fprintf(w, "selectors: mac %v, system-uuid %v, serial %v, address %v\n", inst.MACs, inst.SystemUUIDs, inst.Serials, inst.Addresses)
	for _, p := range []struct {
		name    string
		content []byte
	}{
		{"meta-data", inventory.MarshalYAML(inst.MetaData)},
		{"user-data", inst.UserData},
		{"vendor-data", inst.VendorData},
		{"network-config", inst.NetworkConfig},
	} {
		if p.content == nil {
			continue
		}
		fmt.Fprintf(w, "--- %s\n%s", p.name, p.content)
		if len(p.content) > 0 && p.content[len(p.content)-1] != '\n' {
			fmt.Fprintln(w)
		}
	}
}
