package link

import (
	"errors"
	"time"

	"github.com/vishvananda/netlink"
)

// RetryDump runs a netlink dump again while the kernel says it was
// interrupted (ErrDumpInterrupted: an address or route changed during it,
// as IPv6 autoconfiguration does on a NIC just brought up), a few times
// at most.
func RetryDump[T any](list func() ([]T, error)) ([]T, error) {
	var out []T
	var err error
	for try := 0; try < 5; try++ {
		if out, err = list(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out, err
}

// Addrs lists link's addresses of family (netlink.FAMILY_*), the dump run
// again when the kernel interrupted it.
func Addrs(link netlink.Link, family int) ([]netlink.Addr, error) {
	return RetryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(link, family) })
}
