package apply

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AddRandom mixes data into the kernel's pool (uncredited, as cloud-init's
// seed_random writes /dev/urandom): metadata is not trusted enough to
// count as entropy.
func (h *HostSystem) AddRandom(data []byte) error {
	if !h.Live() {
		return errors.New("add to the random pool: the target is not the running system")
	}
	f, err := os.OpenFile("/dev/urandom", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("add to the random pool: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("add to the random pool: %w", err)
	}
	return nil
}

// RejectRoute adds a prohibit route for one address, as
// `ip route add prohibit ADDR` does, so the metadata service is no longer
// reachable from the instance.
func (h *HostSystem) RejectRoute(ctx context.Context, dst netip.Addr) error {
	if !h.Live() {
		return errors.New("add a reject route: the target is not the running system")
	}
	bits := 32
	if dst.Is6() {
		bits = 128
	}
	p := netip.PrefixFrom(dst, bits)
	route := &netlink.Route{Dst: prefixToIPNet(p), Type: unix.RTN_PROHIBIT}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("add a reject route for %s: %w", dst, err)
	}
	return nil
}

// SchedulePowerState records the request; RunPendingPower carries it out
// once the stages are over, as cloud-init does after its final stage.
func (h *HostSystem) SchedulePowerState(ctx context.Context, req PowerRequest) error {
	if !h.Live() {
		return fmt.Errorf("power_state %s: the target %s is not the running system", req.Mode, h.Root.Dir())
	}
	h.pendingPower = &req
	return nil
}

// RunPendingPower changes the power state if a module asked for it, once
// the stages are over: with the target's own shutdown command when it has
// one (it waits the delay itself, and the init runs its shutdown scripts),
// else after the delay by signalling PID 1 the way busybox init
// understands (SIGTERM reboot, SIGUSR1 halt, SIGUSR2 poweroff). It returns
// nil when nothing was asked; a failed shutdown command is reported even
// when the signal served instead.
func (h *HostSystem) RunPendingPower(ctx context.Context) error {
	req := h.pendingPower
	if req == nil {
		return nil
	}
	h.pendingPower = nil
	var cmdErr error
	if len(req.Command) > 0 {
		if cmdErr = h.Run(ctx, Command{Argv: req.Command}); cmdErr == nil {
			return nil
		}
		cmdErr = fmt.Errorf("power_state %s: %s failed, signalling init instead: %w", req.Mode, strings.Join(req.Command, " "), cmdErr)
	}
	select {
	case <-ctx.Done():
		return errors.Join(cmdErr, ctx.Err())
	case <-time.After(req.Delay):
	}
	sig := map[string]syscall.Signal{"reboot": syscall.SIGTERM, "halt": syscall.SIGUSR1, "poweroff": syscall.SIGUSR2}[req.Mode]
	if sig == 0 {
		return fmt.Errorf("power_state: unknown mode %q", req.Mode)
	}
	unix.Sync()
	if err := syscall.Kill(1, sig); err != nil {
		return errors.Join(cmdErr, fmt.Errorf("power_state %s: signal init: %w", req.Mode, err))
	}
	return cmdErr
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
