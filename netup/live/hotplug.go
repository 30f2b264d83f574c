package live

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

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
func Hotplug(ctx context.Context, n *model.Network, opts Options, applied func(*model.Interface, *Result, error)) error {
	var missing []*model.Interface
	for _, iface := range n.Interfaces {
		if iface.Type == model.TypePhysical && iface.MACAddress != "" {
			missing = append(missing, iface)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	opts = opts.withDefaults()
	updates := make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	defer close(done)
	subscribeErr := make(chan error, 1)
	// ListExisting: a NIC that came before the subscription is among the
	// links listed first.
	if err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{
		ListExisting: true,
		ErrorCallback: func(err error) {
			select {
			case subscribeErr <- err:
			default:
			}
		},
	}); err != nil {
		return fmt.Errorf("watch for new NICs: %w", err)
	}
	for len(missing) > 0 {
		select {
		case <-ctx.Done():
			return nil
		case err := <-subscribeErr:
			return fmt.Errorf("watch for new NICs: %w", err)
		case u, ok := <-updates:
			if !ok {
				return errors.New("watch for new NICs: the kernel's netlink socket closed")
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
	return nil
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
