package live

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/netup/model"
)

// Missing returns the config's physical NICs (those named by a MAC) that
// no link on the machine has yet: a NIC the cloud attaches after the boot.
func Missing(n *model.Network) ([]*model.Interface, error) {
	if n == nil {
		return nil, nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var missing []*model.Interface
	for _, iface := range n.Interfaces {
		if iface.Type != model.TypePhysical || iface.MACAddress == "" {
			continue
		}
		if !slices.ContainsFunc(links, func(l netlink.Link) bool { return sameMAC(l.Attrs().HardwareAddr.String(), iface.MACAddress) }) {
			missing = append(missing, iface)
		}
	}
	return missing, nil
}

func sameMAC(a, b string) bool { return a != "" && strings.EqualFold(a, b) }

// Hotplug configures the physical NICs of n (those named by a MAC) as
// each appears, from the kernel's netlink link events (no udev): renamed
// by its MAC, its MTU, addresses and routes, its DHCP, as Apply does at
// boot; one already there when it starts is configured at once. n is what
// was missing when the caller looked (Missing), so a NIC that came since
// is not skipped. applied gets each interface and what was done. It
// returns when every one has come, or when ctx ends. Bonds, bridges and
// VLANs over a NIC that comes late are not made.
//
// The watch outlives the socket it listens on: a burst of events while a
// NIC is configured (its DHCP can take seconds) overflows the socket
// (ENOBUFS) and ends the library's subscription, and a new one, which
// lists the links there first, finds what came meanwhile. Nothing it
// starts is left behind when it returns.
func Hotplug(ctx context.Context, n *model.Network, opts Options, applied func(*model.Interface, *Result, error)) error {
	var missing []*model.Interface
	for _, iface := range n.Interfaces {
		if iface.Type == model.TypePhysical && iface.MACAddress != "" {
			missing = append(missing, iface)
		}
	}
	opts = opts.withDefaults()
	failures := 0
	for len(missing) > 0 && ctx.Err() == nil {
		var err error
		missing, err = watchLinks(ctx, n, missing, opts, applied)
		if err == nil {
			failures = 0
			continue
		}
		// The subscription ended (the socket overflowed, or could not be
		// made): again, at once the first time, then waiting longer.
		wait := min(100*time.Millisecond<<min(failures, 9), 30*time.Second)
		failures++
		opts.Log.Warn("watching for new NICs again", "after", err.Error(), "in", wait, "still_missing", len(missing))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// linkEventBuffer is the socket's room for link events: a bus's probe
// makes bursts. A variable for the tests, which make it overflow.
var linkEventBuffer = 1 << 20

// watchLinks runs one subscription to the kernel's link events (its
// existing links listed first) and configures the NICs of missing as they
// appear; it returns what is still missing when ctx ends, when every one
// came (nil error), or when the subscription ended (its error). The
// library's goroutine is waited for before it returns.
func watchLinks(ctx context.Context, n *model.Network, missing []*model.Interface, opts Options, applied func(*model.Interface, *Result, error)) ([]*model.Interface, error) {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	// The library's last word (its own goroutine calls this; the errors
	// are of several types).
	var mu sync.Mutex
	var lastErr error
	err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{
		ListExisting:           true,
		ReceiveBufferSize:      linkEventBuffer,
		ReceiveBufferForceSize: true,
		ErrorCallback: func(err error) {
			mu.Lock()
			lastErr = err
			mu.Unlock()
		},
	})
	if err != nil {
		close(done)
		return missing, fmt.Errorf("watch for new NICs: %w", err)
	}
	defer func() {
		// Closing done closes the socket, which ends the library's read;
		// a send of it waiting for room ends as the channel is drained,
		// until the library closes it.
		close(done)
		for range updates {
		}
	}()
	for len(missing) > 0 {
		select {
		case <-ctx.Done():
			return missing, nil
		case u, ok := <-updates:
			if !ok {
				mu.Lock()
				why := lastErr
				mu.Unlock()
				if why == nil {
					why = errors.New("the kernel's netlink socket closed")
				}
				return missing, fmt.Errorf("watch for new NICs: %w", why)
			}
			if u.Header.Type != unix.RTM_NEWLINK || u.Link == nil {
				continue
			}
			mac := u.Link.Attrs().HardwareAddr.String()
			i := slices.IndexFunc(missing, func(iface *model.Interface) bool { return sameMAC(mac, iface.MACAddress) })
			if i < 0 {
				continue
			}
			iface := missing[i]
			missing = slices.Delete(missing, i, i+1)
			opts.Log.Info("a NIC of the network config appeared", "name", u.Link.Attrs().Name, "mac", mac, "config_name", iface.Name)
			one := &model.Network{Version: n.Version, Interfaces: []*model.Interface{iface}, Routes: routesVia(n, iface), UseIPv6: n.UseIPv6}
			res, err := Apply(ctx, one, opts)
			applied(iface, res, err)
		}
	}
	return nil, nil
}

// routesVia are the config's global routes whose gateway is on one of
// iface's static subnets: those that could not be added while it was
// missing.
func routesVia(n *model.Network, iface *model.Interface) []model.Route {
	var out []model.Route
	for _, r := range n.Routes {
		gw, err := netip.ParseAddr(r.Gateway)
		if err != nil {
			continue
		}
		for _, s := range iface.Subnets {
			if p, err := subnetPrefix(s); err == nil && s.Address != "" && p.Masked().Contains(gw) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}
