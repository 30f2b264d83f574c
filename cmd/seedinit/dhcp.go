package main

import (
	"context"
	"flag"
	"io"

	"github.com/seedinit/seedinit/boot"
	"github.com/seedinit/seedinit/netup/keeper"
)

// runDHCP is `seedinit dhcp keep`, the lease keeper PID 1 starts before
// the handoff: netup/keeper does the work.
func runDHCP(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseDHCPKeep(args, stderr)
	if !ok {
		return code
	}
	o.Log = stderrLogger(o.Debug, stderr).With("component", "lease keeper")
	if err := keeper.Run(context.Background(), o); err != nil {
		return fail(stderr, "dhcp keep: %v", err)
	}
	return exitOK
}

// parseDHCPKeep reads `dhcp keep`'s flags; keeper.Options.Args writes
// them back for the keeper's move to the root's copy.
func parseDHCPKeep(args []string, stderr io.Writer) (o keeper.Options, code int, ok bool) {
	if len(args) == 0 || args[0] != "keep" {
		return o, fail(stderr, "dhcp: usage: seedinit dhcp keep --state FILE [--network FILE] [--move-to PATH]"), false
	}
	fs := flag.NewFlagSet("seedinit dhcp keep", flag.ContinueOnError)
	fs.StringVar(&o.State, "state", boot.LeaseKeeperState, "the leases to keep, as PID 1 wrote them; rewritten as they change")
	fs.StringVar(&o.Network, "network", "", "the live network config (JSON, as PID 1 wrote it): its NICs that come later are renamed, configured and their leases kept")
	fs.StringVar(&o.MoveTo, "move-to", "", "once this copy of seedinit exists and is this build, go on from it (PID 1 passes the copy it keeps in the root)")
	fs.BoolVar(&o.Debug, "debug", false, "log each renewal")
	if _, code, ok := parseFlags(fs, args[1:], stderr); !ok {
		return o, code, false
	}
	return o, exitOK, true
}
