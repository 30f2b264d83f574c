package dhcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/safego"
)

// Options bound a DHCP exchange.
type Options struct {
	// Timeout is how long to wait for each answer; 3s when zero.
	Timeout time.Duration
	// Retries is how many times each message is sent; 3 when zero.
	Retries int
	// Hostname, when set, is sent as option 12.
	Hostname string
	Log      *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// requested are the options seedinit asks for, beyond nclient4's
// defaults (subnet mask, router, DNS, domain name): those that carry the
// metadata route, the MTU and the search list, and 245, where Azure may
// name its wireserver (servers send site options only when asked).
var requested = []dhcpv4.OptionCode{
	dhcpv4.OptionSubnetMask,
	dhcpv4.OptionRouter,
	dhcpv4.OptionDomainNameServer,
	dhcpv4.OptionDomainName,
	dhcpv4.OptionHostName,
	dhcpv4.OptionBroadcastAddress,
	dhcpv4.OptionInterfaceMTU,
	dhcpv4.OptionDNSDomainSearchList,
	dhcpv4.OptionClasslessStaticRoute,
	dhcpv4.GenericOptionCode(245),
}

// Acquire brings iface up and runs a DHCPv4 exchange on it, within ctx
// and the bounds in opts. It does not apply the lease.
func Acquire(ctx context.Context, iface string, opts Options) (*Lease, error) {
	opts = opts.withDefaults()
	link, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, fmt.Errorf("dhcp on %s: find link: %w", iface, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("dhcp on %s: set link up: %w", iface, err)
	}
	waitCarrier(ctx, iface, carrierWait)
	client, err := nclient4.New(iface, nclient4.WithTimeout(opts.Timeout), nclient4.WithRetry(opts.Retries))
	if err != nil {
		return nil, fmt.Errorf("dhcp on %s: open client: %w", iface, err)
	}
	defer client.Close()
	mods := []dhcpv4.Modifier{dhcpv4.WithRequestedOptions(requested...)}
	if opts.Hostname != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(opts.Hostname)))
	}
	start := time.Now()
	// The first DISCOVER gets quickFirstTry, on the same client, before
	// the exchange goes on at the caller's pace.
	quick, cancel := context.WithTimeout(ctx, quickFirstTry)
	offer, err := client.DiscoverOffer(quick, mods...)
	cancel()
	if err != nil && ctx.Err() == nil {
		offer, err = client.DiscoverOffer(ctx, mods...)
	}
	if err != nil {
		return nil, fmt.Errorf("dhcp on %s: unable to receive an offer: %w", iface, err)
	}
	raw, err := client.RequestFromOffer(ctx, offer, mods...)
	if err != nil {
		return nil, fmt.Errorf("dhcp on %s: %w", iface, err)
	}
	lease, err := FromACK(iface, raw.ACK)
	if lease == nil {
		return nil, err
	}
	lease.raw = raw
	opts.Log.Info("dhcp lease", "interface", iface, "address", lease.Address, "server", lease.ServerID, "duration", time.Since(start))
	return lease, err
}

// quickFirstTry is how long the first DISCOVER waits for an offer before
// the exchange goes on at the caller's pace: make fleet saw the first
// DISCOVER on a link just up lost even after its carrier (100 veths
// coming up on one bridge at once), and waiting the full 3 s timeout for
// it made every such lease 3 s long. Servers answer in milliseconds.
const quickFirstTry = time.Second

// carrierWait bounds the wait for a link's carrier before the first
// DISCOVER: one sent before it is lost (a veth whose bridge has not yet
// seen the carrier, a NIC still negotiating), and the client sends again
// only after its timeout, 3 s. A link that never reports carrier is tried
// anyway.
const carrierWait = 3 * time.Second

// waitCarrier waits until iface has carrier and is operationally up, at
// most limit or until ctx ends.
func waitCarrier(ctx context.Context, iface string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		link, err := netlink.LinkByName(iface)
		if err != nil || time.Now().After(deadline) {
			return
		}
		// The carrier flag comes first; the queue that sends packets is
		// only attached when the kernel's link watcher then marks the link
		// up (deferred, up to a second behind): until then what is sent is
		// dropped. A link without operational states says unknown.
		a := link.Attrs()
		if a.RawFlags&unix.IFF_LOWER_UP != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// acquireOne is Acquire; tests make it fail, panic or hang.
var acquireOne = Acquire

// acquireGrace is how long AcquireAny waits, once its context has ended,
// for an exchange that does not end with it (a call stuck in the
// kernel): then it answers without it.
const acquireGrace = 2 * time.Second

// AcquireAny runs Acquire on every interface at once and returns the
// first lease; the other exchanges are stopped. The error joins every
// interface's failure, a panic in one included, when none got a lease:
// a nil lease always comes with an error.
func AcquireAny(ctx context.Context, ifaces []string, opts Options) (*Lease, error) {
	if len(ifaces) == 0 {
		return nil, errors.New("dhcp: no candidate interfaces")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		lease *Lease
		err   error
	}
	// Each exchange sends exactly one result, from its end or from its
	// panic; the buffer takes them all, so none waits for a reader that
	// has answered already.
	results := make(chan result, len(ifaces))
	for _, name := range ifaces {
		safego.Go("dhcp on "+name, func() {
			l, err := acquireOne(ctx, name, opts)
			results <- result{l, err}
		}, func(err error) { results <- result{nil, err} })
	}
	var errs []error
	var first *Lease
	var grace <-chan time.Time
	done := ctx.Done()
	for pending := len(ifaces); pending > 0 && first == nil; {
		select {
		case r := <-results:
			pending--
			switch {
			case r.lease != nil:
				first = r.lease
				if r.err != nil {
					opts.withDefaults().Log.Warn("dhcp lease has bad options", "interface", r.lease.Interface, "error", r.err)
				}
			case r.err != nil:
				errs = append(errs, r.err)
			default:
				errs = append(errs, errors.New("dhcp: an exchange ended with neither a lease nor an error"))
			}
		case <-done:
			done, grace = nil, time.After(acquireGrace)
		case <-grace:
			errs = append(errs, fmt.Errorf("dhcp: %d exchange(s) still under way %s after the deadline; not waited for", pending, acquireGrace))
			pending = 0
		}
	}
	if first == nil {
		return nil, errors.Join(errs...)
	}
	return first, nil
}

// Release tells the server the lease is no longer wanted: an ephemeral
// lease taken only to reach a metadata service, or a kept one at
// shutdown. It is sent from the leased address while that is still on
// the NIC (a server's kernel drops unicast from 0.0.0.0 as a martian).
func (l *Lease) Release() error {
	if l.raw == nil {
		return nil
	}
	client, err := unicastClient(l, Options{}.withDefaults())
	if err != nil {
		client, err = nclient4.New(l.Interface)
	}
	if err != nil {
		return fmt.Errorf("release dhcp lease on %s: %w", l.Interface, err)
	}
	defer client.Close()
	if err := client.Release(l.raw); err != nil {
		return fmt.Errorf("release dhcp lease on %s: %w", l.Interface, err)
	}
	return nil
}
