package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/nclient6"
	"golang.org/x/sys/unix"
)

// errRefused: the server answered the renewal with a NAK (DHCPv4) or a
// failure status (DHCPv6): the lease is gone and must be asked for anew.
var errRefused = errors.New("the server refused the lease")

// keptLease is what the keeper does with a lease of either family.
type keptLease interface {
	address() string
	times() leaseTimes
	renew(ctx context.Context, opts Options, rebind bool) (keptLease, error)
	apply() error
	remove() error
	release() error
	kept() KeptLease
	// ResolvConf is the lease's resolv.conf, nil without DNS servers.
	ResolvConf() []byte
}

// leaseTimes are a lease's renewal (T1), rebinding (T2) and end times on
// CLOCK_BOOTTIME, and its length.
type leaseTimes struct {
	t1, t2, end, length time.Duration
	infinite            bool
}

// infiniteLease is 0xffffffff seconds, "for ever" in both protocols.
const infiniteLease = 0xffffffff * time.Second

// timesFrom works out T1 and T2 where the server sent none or nonsense:
// half and seven eighths of the lease (RFC 2131 4.4.5), and for DHCPv6
// half and four fifths of the preferred lifetime (RFC 8415 21.4).
func timesFrom(acquired, length, t1, t2, defT1, defT2 time.Duration) leaseTimes {
	if length <= 0 || length >= infiniteLease {
		return leaseTimes{infinite: true}
	}
	if t1 <= 0 || t1 > length {
		t1 = defT1
	}
	if t2 <= t1 || t2 > length {
		t2 = max(defT2, t1)
	}
	return leaseTimes{t1: acquired + t1, t2: acquired + t2, end: acquired + length, length: length}
}

type lease4 struct{ *Lease }

func (l lease4) address() string { return l.Address.String() }

func (l lease4) times() leaseTimes {
	ack := l.raw.ACK
	return timesFrom(l.acquiredBoot, l.LeaseTime,
		ack.IPAddressRenewalTime(0), ack.IPAddressRebindingTime(0),
		l.LeaseTime/2, l.LeaseTime*7/8)
}

// renew asks the lease's server (renewing: unicast from the leased
// address, as RFC 2131 4.4.5 says) or any server (rebinding: broadcast)
// to extend the lease.
func (l lease4) renew(ctx context.Context, opts Options, rebind bool) (keptLease, error) {
	opts = opts.withDefaults()
	var client *nclient4.Client
	var err error
	if !rebind {
		client, err = unicastClient(l.Lease, opts)
	}
	if rebind || err != nil {
		// A renewal that cannot be sent from the address goes out as a
		// broadcast, which servers answer as well.
		client, err = nclient4.New(l.Interface, nclient4.WithTimeout(opts.Timeout), nclient4.WithRetry(opts.Retries))
	}
	if err != nil {
		return nil, fmt.Errorf("renew dhcp lease on %s: %w", l.Interface, err)
	}
	defer client.Close()
	req, err := dhcpv4.NewRenewFromAck(l.raw.ACK, dhcpv4.WithRequestedOptions(requested...),
		dhcpv4.WithOption(dhcpv4.OptMaxMessageSize(nclient4.MaxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("renew dhcp lease on %s: %w", l.Interface, err)
	}
	match := nclient4.IsMessageType(dhcpv4.MessageTypeAck, dhcpv4.MessageTypeNak)
	if !rebind {
		match = nclient4.IsAll(nclient4.IsCorrectServer(l.raw.ACK.ServerIdentifier()), match)
	}
	resp, err := client.SendAndRead(ctx, client.RemoteAddr(), req, match)
	if err != nil {
		return nil, fmt.Errorf("renew dhcp lease on %s: %w", l.Interface, err)
	}
	if resp.MessageType() == dhcpv4.MessageTypeNak {
		return nil, fmt.Errorf("renew dhcp lease on %s: %w (NAK from %v: %q)", l.Interface, errRefused, resp.ServerIdentifier(), resp.Message())
	}
	nl, err := FromACK(l.Interface, resp)
	if nl == nil {
		return nil, err
	}
	if err != nil {
		opts.Log.Warn("renewed dhcp lease has bad options", "interface", l.Interface, "error", err.Error())
	}
	// The next renewal and the release go by this ACK's server.
	nl.raw = &nclient4.Lease{Offer: resp, ACK: resp, CreationTime: time.Now()}
	return lease4{nl}, nil
}

// unicastClient is a DHCP client on a UDP socket on port 68 of the NIC,
// that sends to the lease's server.
func unicastClient(l *Lease, opts Options) (*nclient4.Client, error) {
	if !l.ServerID.IsValid() {
		return nil, errors.New("the lease names no server")
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
				return
			}
			serr = unix.BindToDevice(int(fd), l.Interface)
		})
		return errors.Join(err, serr)
	}}
	// Bound to the port only: the server broadcasts its NAK (RFC 2131
	// 4.1), which a socket bound to the leased address would not see; the
	// kernel sends from the leased address, the NIC's own.
	conn, err := lc.ListenPacket(context.Background(), "udp4", ":68")
	if err != nil {
		return nil, err
	}
	iface, err := net.InterfaceByName(l.Interface)
	if err != nil {
		conn.Close()
		return nil, err
	}
	server := &net.UDPAddr{IP: net.IP(l.ServerID.AsSlice()), Port: dhcpv4.ServerPort}
	client, err := nclient4.NewWithConn(conn, iface.HardwareAddr, nclient4.WithServerAddr(server),
		nclient4.WithTimeout(opts.Timeout), nclient4.WithRetry(opts.Retries))
	if err != nil {
		conn.Close()
	}
	return client, err
}

func (l lease4) apply() error  { return l.Lease.Apply() }
func (l lease4) remove() error { return l.Lease.Remove() }

func (l lease4) release() error { return l.Lease.Release() }

func (l lease4) kept() KeptLease {
	return KeptLease{
		Interface: l.Interface, Family: 4,
		Offer: l.raw.Offer.ToBytes(), ACK: l.raw.ACK.ToBytes(),
		AcquiredBoot: l.acquiredBoot,
		Address:      l.Address.String(), Server: l.ServerID.String(),
	}
}

type lease6 struct{ *Lease6 }

func (l lease6) address() string { return l.Address.String() }

func (l lease6) times() leaseTimes {
	return timesFrom(l.acquiredBoot, l.ValidLifetime, l.T1, l.T2,
		l.PreferredLifetime/2, l.PreferredLifetime*4/5)
}

// renew sends a Renew to the lease's server or, rebinding, a Rebind to
// any server (RFC 8415 18.2.4 and 18.2.5), for the lease's IA_NA address.
func (l lease6) renew(ctx context.Context, opts Options, rebind bool) (keptLease, error) {
	opts = opts.withDefaults()
	msg, err := l.message(dhcpv6.MessageTypeRenew, rebind)
	if err != nil {
		return nil, fmt.Errorf("renew dhcpv6 lease on %s: %w", l.Interface, err)
	}
	client, err := nclient6.New(l.Interface, nclient6.WithTimeout(opts.Timeout), nclient6.WithRetry(opts.Retries))
	if err != nil {
		return nil, fmt.Errorf("renew dhcpv6 lease on %s: %w", l.Interface, err)
	}
	defer client.Close()
	reply, err := client.SendAndRead(ctx, nclient6.AllDHCPRelayAgentsAndServers, msg, nclient6.IsMessageType(dhcpv6.MessageTypeReply))
	if err != nil {
		return nil, fmt.Errorf("renew dhcpv6 lease on %s: %w", l.Interface, err)
	}
	nl, err := FromReply6(l.Interface, reply, true)
	if nl == nil {
		return nil, fmt.Errorf("renew dhcpv6 lease on %s: %w: %w", l.Interface, errRefused, err)
	}
	if err != nil {
		opts.Log.Warn("renewed dhcpv6 lease has bad options", "interface", l.Interface, "error", err.Error())
	}
	return lease6{nl}, nil
}

// message builds a Renew (or, with rebind, a Rebind) or a Release for the
// lease: the client's DUID and the IA_NA's IAID as they were, the server's
// DUID but when rebinding.
func (l lease6) message(kind dhcpv6.MessageType, rebind bool) (*dhcpv6.Message, error) {
	ia := l.reply.Options.OneIANA()
	client := l.reply.Options.ClientID()
	if ia == nil || client == nil {
		return nil, errors.New("the reply has no IA_NA or client DUID to renew")
	}
	msg, err := dhcpv6.NewMessage()
	if err != nil {
		return nil, err
	}
	msg.MessageType = kind
	if rebind {
		msg.MessageType = dhcpv6.MessageTypeRebind
	}
	msg.AddOption(dhcpv6.OptClientID(client))
	if !rebind {
		server := l.reply.Options.ServerID()
		if server == nil {
			return nil, errors.New("the reply has no server DUID")
		}
		msg.AddOption(dhcpv6.OptServerID(server))
	}
	addr := &dhcpv6.OptIAAddress{IPv6Addr: net.IP(l.Address.AsSlice())}
	msg.AddOption(&dhcpv6.OptIANA{IaId: ia.IaId, Options: dhcpv6.IdentityOptions{Options: dhcpv6.Options{addr}}})
	msg.AddOption(dhcpv6.OptElapsedTime(0))
	if kind != dhcpv6.MessageTypeRelease {
		msg.AddOption(dhcpv6.OptRequestedOption(dhcpv6.OptionDNSRecursiveNameServer, dhcpv6.OptionDomainSearchList))
	}
	return msg, nil
}

func (l lease6) apply() error  { return l.Lease6.Apply() }
func (l lease6) remove() error { return l.Lease6.Remove() }

// release sends a Release and waits a moment for the server's Reply.
func (l lease6) release() error {
	msg, err := l.message(dhcpv6.MessageTypeRelease, false)
	if err != nil {
		return fmt.Errorf("release dhcpv6 lease on %s: %w", l.Interface, err)
	}
	client, err := nclient6.New(l.Interface, nclient6.WithTimeout(time.Second), nclient6.WithRetry(1))
	if err != nil {
		return fmt.Errorf("release dhcpv6 lease on %s: %w", l.Interface, err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := client.SendAndRead(ctx, nclient6.AllDHCPRelayAgentsAndServers, msg, nclient6.IsMessageType(dhcpv6.MessageTypeReply)); err != nil {
		return fmt.Errorf("release dhcpv6 lease on %s: %w", l.Interface, err)
	}
	return nil
}

func (l lease6) kept() KeptLease {
	return KeptLease{
		Interface: l.Interface, Family: 6,
		Reply: l.reply.ToBytes(), AcquiredBoot: l.acquiredBoot,
		Address: l.Address.String(), Server: serverDUID(l.reply),
	}
}

func serverDUID(m *dhcpv6.Message) string {
	if d := m.Options.ServerID(); d != nil {
		return fmt.Sprintf("%x", d.ToBytes())
	}
	return ""
}

// readKept reads a lease back from the state file's messages.
func readKept(kl KeptLease) (keptLease, error) {
	switch kl.Family {
	case 4:
		if len(kl.ACK) == 0 {
			return nil, nil // lost
		}
		ack, err := dhcpv4.FromBytes(kl.ACK)
		if err != nil {
			return nil, fmt.Errorf("read the kept ACK: %w", err)
		}
		offer := ack
		if len(kl.Offer) > 0 {
			if offer, err = dhcpv4.FromBytes(kl.Offer); err != nil {
				return nil, fmt.Errorf("read the kept offer: %w", err)
			}
		}
		l, err := FromACK(kl.Interface, ack)
		if l == nil {
			return nil, err
		}
		l.raw = &nclient4.Lease{Offer: offer, ACK: ack}
		l.acquiredBoot = kl.AcquiredBoot
		return lease4{l}, nil
	case 6:
		if len(kl.Reply) == 0 {
			return nil, nil
		}
		reply, err := dhcpv6.MessageFromBytes(kl.Reply)
		if err != nil {
			return nil, fmt.Errorf("read the kept reply: %w", err)
		}
		l, err := FromReply6(kl.Interface, reply, true)
		if l == nil {
			return nil, err
		}
		l.acquiredBoot = kl.AcquiredBoot
		return lease6{l}, nil
	}
	return nil, fmt.Errorf("family %d is neither 4 nor 6", kl.Family)
}

// acquireKept asks for a new lease of the family on iface.
func acquireKept(ctx context.Context, iface string, family int, opts Options) (keptLease, error) {
	if family == 6 {
		l, err := Acquire6(ctx, iface, opts)
		if l == nil {
			return nil, err
		}
		return lease6{l}, nil
	}
	l, err := Acquire(ctx, iface, opts)
	if l == nil {
		return nil, err
	}
	return lease4{l}, nil
}
