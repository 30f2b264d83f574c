package system

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

// ec2MetadataAddr is the address disable_ec2_metadata makes unreachable.
var ec2MetadataAddr = netip.MustParseAddr("169.254.169.254")

func runDisableEC2Metadata(ctx context.Context, env *apply.Env) error {
	disable, err := env.Config.Bool("disable_ec2_metadata", false)
	if err != nil {
		return fmt.Errorf("read disable_ec2_metadata: %w", err)
	}
	if !disable {
		return apply.Skip("disable_ec2_metadata is not true")
	}
	if r, ok := env.Sys.(RouteRejecter); ok {
		if err := r.RejectRoute(ctx, ec2MetadataAddr); err != nil {
			return fmt.Errorf("add a reject route for %s: %w", ec2MetadataAddr, err)
		}
		return nil
	}
	// Without the capability, do what cloud-init does with the target's
	// own tools, but only on the running system: routes belong to it.
	if !env.Sys.Live() {
		return apply.Skip("the target is not the running system; no route to change")
	}
	var argv []string
	if ip, ok := apply.LookPath(env.Root, "ip"); ok {
		argv = []string{ip, "route", "add", "prohibit", ec2MetadataAddr.String()}
	} else if route, ok := apply.LookPath(env.Root, "route"); ok {
		argv = []string{route, "add", "-host", ec2MetadataAddr.String(), "reject"}
	} else {
		return fmt.Errorf("add a reject route for %s: neither ip nor route is available on this image", ec2MetadataAddr)
	}
	var out bytes.Buffer
	if err := env.Sys.Run(ctx, apply.Command{Argv: argv, Output: &out}); err != nil {
		return fmt.Errorf("add a reject route for %s with %s: %w: %s", ec2MetadataAddr, argv[0], err, strings.TrimSpace(out.String()))
	}
	return nil
}
