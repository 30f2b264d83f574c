package vmware

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// Regs are the registers a backdoor call passes in and gets back, their
// low 32 bits (all the protocol uses).
type Regs struct{ AX, BX, CX, DX, SI, DI uint32 }

// Port makes one backdoor call: an IN on the port DX's low half names,
// AX holding the magic, the hypervisor reading and writing the rest.
// Tests emulate it (vmwaretest); Open gives the machine's own.
type Port interface {
	Call(in Regs) (Regs, error)
}

// Open returns the machine's backdoor when Gate lets it, and never
// otherwise: the gate's error says why.
func Open(cpu CPU, dmi DMI) (Port, error) {
	if err := Gate(cpu, dmi); err != nil {
		return nil, err
	}
	return hostPort{}, nil
}

// hostPort is the real port.
type hostPort struct{}

// Call makes the call with the runtime told to turn a fault into a panic
// it recovers from: VMware set to refuse the backdoor to user space
// (monitor_control.restrict_backdoor) answers with the same fault as a
// machine without it, and PID 1 must survive that too.
func (hostPort) Call(in Regs) (Regs, error) {
	return guarded(func() Regs { return portIn(in) })
}

// guarded runs f, a fault in it (a general-protection fault, an access
// to a page it may not touch) an error rather than the end of the
// process.
func guarded(f func() Regs) (out Regs, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the VMware backdoor faulted: %v", r)
		}
	}()
	return f(), nil
}

// The backdoor's constants (open-vm-tools' backdoor_def.h and
// guest_msg_def.h).
const (
	magic      = 0x564D5868 // "VMXh"
	lowPort    = 0x5658
	cmdMessage = 0x1E
	rpciProto  = 0x49435052 // "RPCI"
	flagCookie = 0x80000000

	typeOpen        = 0
	typeSendSize    = 1
	typeSendPayload = 2
	typeRecvSize    = 3
	typeRecvPayload = 4
	typeRecvStatus  = 5
	typeClose       = 6

	statusSuccess    = 0x0001
	statusDoRecv     = 0x0002
	statusCheckpoint = 0x0010
)

// Bounds on what a hypervisor may make a call cost: a reply is a
// guestinfo value, kilobytes (the VMX keeps them in its config); a
// checkpoint (the VM suspended mid-reply) is retried a few times.
const (
	MaxReply       = 1 << 20
	maxRequest     = 1 << 20
	maxCheckpoints = 3
)

// channel is one RPCI channel.
type channel struct {
	port                  Port
	id                    uint16
	cookieHigh, cookieLow uint32
}

func status(r Regs) uint32 { return r.CX >> 16 }

// call makes one message call on the channel.
func (c *channel) call(typ uint32, bx uint32) (Regs, error) {
	return c.port.Call(Regs{
		AX: magic, BX: bx, CX: typ<<16 | cmdMessage,
		DX: uint32(c.id)<<16 | lowPort, SI: c.cookieHigh, DI: c.cookieLow,
	})
}

// openChannel opens an RPCI channel, with a cookie when the hypervisor
// gives one (every VMware since Workstation 5), else without.
func openChannel(p Port) (*channel, error) {
	for _, flags := range []uint32{flagCookie, 0} {
		out, err := p.Call(Regs{AX: magic, BX: rpciProto | flags, CX: typeOpen<<16 | cmdMessage, DX: lowPort})
		if err != nil {
			return nil, fmt.Errorf("open the RPCI channel: %w", err)
		}
		if status(out)&statusSuccess != 0 {
			return &channel{port: p, id: uint16(out.DX >> 16), cookieHigh: out.SI, cookieLow: out.DI}, nil
		}
	}
	return nil, errors.New("open the RPCI channel: the hypervisor refused")
}

func (c *channel) close() error {
	out, err := c.call(typeClose, 0)
	if err == nil && status(out)&statusSuccess == 0 {
		err = errors.New("refused")
	}
	if err != nil {
		return fmt.Errorf("close RPCI channel %d: %w", c.id, err)
	}
	return nil
}

// send sends msg four bytes at a time over the low-bandwidth port
// (little-endian, the last word short), whatever the hypervisor says of
// its high-bandwidth one: a few kilobytes take a few thousand calls.
func (c *channel) send(msg []byte) error {
	out, err := c.call(typeSendSize, uint32(len(msg)))
	if err != nil {
		return fmt.Errorf("send on RPCI channel %d: %w", c.id, err)
	}
	if status(out)&statusSuccess == 0 {
		return fmt.Errorf("send on RPCI channel %d: the size was refused", c.id)
	}
	for i := 0; i < len(msg); i += 4 {
		var w uint32
		for j := 0; j < 4 && i+j < len(msg); j++ {
			w |= uint32(msg[i+j]) << (8 * j)
		}
		out, err := c.call(typeSendPayload, w)
		if err != nil {
			return fmt.Errorf("send on RPCI channel %d: %w", c.id, err)
		}
		if status(out)&statusSuccess == 0 {
			return fmt.Errorf("send on RPCI channel %d: refused at byte %d of %d", c.id, i, len(msg))
		}
	}
	return nil
}

// receive reads the reply to what was sent; nil when there is none.
func (c *channel) receive() ([]byte, error) {
	for checkpoints := 0; ; checkpoints++ {
		out, err := c.call(typeRecvSize, 0)
		if err != nil {
			return nil, fmt.Errorf("receive on RPCI channel %d: %w", c.id, err)
		}
		if status(out)&statusSuccess == 0 {
			return nil, fmt.Errorf("receive on RPCI channel %d: refused", c.id)
		}
		if status(out)&statusDoRecv == 0 {
			return nil, nil
		}
		if out.DX>>16 != typeSendSize {
			return nil, fmt.Errorf("receive on RPCI channel %d: protocol error (a size announced as type %d)", c.id, out.DX>>16)
		}
		size := out.BX
		if size > MaxReply {
			c.call(typeRecvStatus, 0)
			return nil, fmt.Errorf("receive on RPCI channel %d: a reply of %d bytes, more than %d", c.id, size, MaxReply)
		}
		buf := make([]byte, 0, size)
		retry := false
		for uint32(len(buf)) < size {
			out, err := c.call(typeRecvPayload, statusSuccess)
			if err != nil {
				return nil, fmt.Errorf("receive on RPCI channel %d: %w", c.id, err)
			}
			if status(out)&statusSuccess == 0 {
				if status(out)&statusCheckpoint != 0 && checkpoints < maxCheckpoints {
					retry = true // the VM was suspended: the reply is sent again
					break
				}
				c.call(typeRecvStatus, 0)
				return nil, fmt.Errorf("receive on RPCI channel %d: refused at byte %d of %d", c.id, len(buf), size)
			}
			if out.DX>>16 != typeSendPayload {
				c.call(typeRecvStatus, 0)
				return nil, fmt.Errorf("receive on RPCI channel %d: protocol error (payload as type %d)", c.id, out.DX>>16)
			}
			for j := 0; j < 4 && uint32(len(buf)) < size; j++ {
				buf = append(buf, byte(out.BX>>(8*j)))
			}
		}
		if retry {
			continue
		}
		if _, err := c.call(typeRecvStatus, statusSuccess); err != nil {
			return nil, fmt.Errorf("receive on RPCI channel %d: %w", c.id, err)
		}
		return buf, nil
	}
}

// Request sends one RPCI request on a channel of its own and returns the
// reply: ok with what follows "1 ", or not ok with the hypervisor's
// message after "0 ". Neither the request nor the reply is logged or put
// in an error: they hold guestinfo values.
func Request(p Port, request []byte) (reply []byte, ok bool, err error) {
	if len(request) > maxRequest {
		return nil, false, fmt.Errorf("an RPCI request of %d bytes, more than %d", len(request), maxRequest)
	}
	c, err := openChannel(p)
	if err != nil {
		return nil, false, err
	}
	defer c.close()
	if err := c.send(request); err != nil {
		return nil, false, err
	}
	r, err := c.receive()
	if err != nil {
		return nil, false, err
	}
	switch {
	case bytes.HasPrefix(r, []byte("1 ")):
		return r[2:], true, nil
	case bytes.HasPrefix(r, []byte("0 ")):
		return r[2:], false, nil
	}
	return nil, false, fmt.Errorf("an RPCI reply of %d bytes without a status", len(r))
}

// GuestInfo reads guestinfo.KEY ("info-get"); found is false when the VM
// has no such key.
func GuestInfo(p Port, key string) (value []byte, found bool, err error) {
	if !validKey(key) {
		return nil, false, fmt.Errorf("guestinfo key %q: want letters, digits, . - _", key)
	}
	r, ok, err := Request(p, []byte("info-get guestinfo."+key))
	if err != nil {
		return nil, false, fmt.Errorf("read guestinfo.%s: %w", key, err)
	}
	if !ok {
		if string(r) == "No value found" {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read guestinfo.%s: the hypervisor says %q", key, clip(string(r)))
	}
	return r, true, nil
}

// SetGuestInfo sets guestinfo.KEY ("info-set"): cloud-init's redact
// clears the keys that held secrets once they are read.
func SetGuestInfo(p Port, key, value string) error {
	if !validKey(key) {
		return fmt.Errorf("guestinfo key %q: want letters, digits, . - _", key)
	}
	r, ok, err := Request(p, []byte("info-set guestinfo."+key+" "+value))
	if err != nil {
		return fmt.Errorf("set guestinfo.%s: %w", key, err)
	}
	if !ok {
		return fmt.Errorf("set guestinfo.%s: the hypervisor says %q", key, clip(string(r)))
	}
	return nil
}

// validKey keeps a key one word of the request.
func validKey(k string) bool {
	return k != "" && len(k) < 256 && strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}) < 0
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
