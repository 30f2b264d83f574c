package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/live"
	"github.com/seedinit/seedinit/seed/ds"
)

// runDHCPBudget bounds `run --dhcp`'s lease as PID 1's bounds its own: a
// machine without a DHCP server must not wait long for one.
const runDHCPBudget = 10 * time.Second

// bringUpEphemeral takes a DHCPv4 lease on the first NIC that gets one,
// with PID 1's own step (live.BringUp: every Ethernet NIC at once, the
// lease's address, option 121 or 3 routes and MTU applied), and returns
// it with the way to take it off again. Tests replace it.
var bringUpEphemeral = func(ctx context.Context, log *slog.Logger) (*dhcp.Lease, func() error, error) {
	up, err := live.BringUp(ctx, nil, live.Options{Log: log, DHCP: dhcp.Options{Log: log}})
	if up == nil || len(up.Leases) == 0 {
		if err == nil {
			err = errors.New("no lease")
		}
		return nil, nil, err
	}
	lease := up.Leases[0]
	if err != nil {
		// A route that could not be added: the metadata address may
		// still be on the link, so the search goes on.
		log.Warn("ephemeral network", "interface", lease.Interface, "error", err.Error())
	}
	return lease, lease.Remove, nil
}

// searchWithDHCP is PID 1's search order for `seedinit run --dhcp`: the
// local sources; when none has the seed and network sources are left, an
// ephemeral DHCP lease, then those network sources. takeDown takes the
// lease off again once the stages are over (modules may still need the
// network: #include, phone_home); it is never nil. Unlike PID 1, no IPv4
// link-local search first: a running system that asks for DHCP has a
// DHCP server.
func searchWithDHCP(ctx context.Context, env *ds.Env, log *slog.Logger) (res *ds.Result, takeDown func(), err error) {
	takeDown = func() {}
	res, err = ds.DetectStage(ctx, env, 0, ds.StageLocal)
	if res == nil || res.Seed != nil || !res.WantsNetwork {
		return res, takeDown, err
	}
	dctx, cancel := context.WithTimeout(ctx, runDHCPBudget)
	start := time.Now()
	lease, remove, err := bringUpEphemeral(dctx, log)
	cancel()
	if err != nil {
		return res, takeDown, fmt.Errorf("ephemeral DHCP: %w; the network sources (%s) were not tried", err, strings.Join(res.NetworkCandidates, ", "))
	}
	log.Info("ephemeral network up", "interface", lease.Interface, "address", lease.Address.String(), "server", lease.ServerID.String(), "duration", time.Since(start))
	env.Interface, env.DHCPServer, env.DHCPSiteOptions = lease.Interface, lease.ServerID, lease.SiteOptions
	takeDown = func() {
		if err := remove(); err != nil {
			log.Warn("take the ephemeral lease off", "interface", lease.Interface, "error", err.Error())
			return
		}
		log.Info("ephemeral lease taken off", "interface", lease.Interface, "address", lease.Address.String())
	}
	res, err = ds.DetectStage(ctx, env, 0, ds.StageNetwork)
	return res, takeDown, err
}
