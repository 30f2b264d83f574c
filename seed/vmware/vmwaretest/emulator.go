// Package vmwaretest emulates VMware's side of the backdoor's port layer
// in process, for tests: the RPCI message channel as the VMX implements
// it (channels with ids and cookies, a request sent in four-byte words
// after its size, the reply received the same way and acknowledged),
// serving "info-get" and "info-set" of guestinfo keys. QEMU has no
// backdoor; this is what the protocol is tested against.
package vmwaretest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/seed/vmware"
)

// The protocol's constants, as the VMX knows them (open-vm-tools'
// backdoor_def.h and guest_msg_def.h), written out again here so that
// the emulation does not share the client's mistakes.
const (
	magic      = 0x564D5868
	port       = 0x5658
	cmdMessage = 0x1E
	rpciProto  = 0x49435052
	flagCookie = 0x80000000

	success    = 0x0001
	doRecv     = 0x0002
	checkpoint = 0x0010
	highBW     = 0x0080
)

// Hypervisor is an emulated VMX: its guestinfo keys (without the
// "guestinfo." prefix) and what it has seen.
type Hypervisor struct {
	mu        sync.Mutex
	GuestInfo map[string]string
	// Requests are the RPCI requests received, in order.
	Requests []string
	// Calls counts the port calls.
	Calls int
	// CheckpointAt makes the Nth reply payload call (from 1) answer with a
	// checkpoint once, as a VM suspended mid-reply does.
	CheckpointAt int
	// NoCookies refuses channels opened with a cookie, as VMware before
	// Workstation 5 did.
	NoCookies bool
	// Fail makes every call fail with this error (the port faulted).
	Fail error
	// ReplySize, when set, is the size announced for every reply (a
	// hypervisor that lies).
	ReplySize uint32

	channels map[uint16]*chanState
	nextID   uint16
	payloads int
}

type chanState struct {
	cookieHigh, cookieLow uint32
	cookies               bool
	want                  int
	req                   []byte
	reply                 []byte
	sent                  int
	haveReply             bool
}

// New is a hypervisor with these guestinfo keys.
func New(guestinfo map[string]string) *Hypervisor {
	return &Hypervisor{GuestInfo: guestinfo}
}

var _ vmware.Port = (*Hypervisor)(nil)

func status(s uint32, typ uint32) vmware.Regs {
	return vmware.Regs{CX: s<<16 | cmdMessage, DX: typ << 16}
}

// Call answers one backdoor call as the VMX does.
func (h *Hypervisor) Call(in vmware.Regs) (vmware.Regs, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Calls++
	if h.Fail != nil {
		return vmware.Regs{}, h.Fail
	}
	if in.AX != magic || in.DX&0xFFFF != port || in.CX&0xFFFF != cmdMessage {
		// Not a message call on the port: nothing changes.
		return in, nil
	}
	if h.channels == nil {
		h.channels = map[uint16]*chanState{}
	}
	typ := in.CX >> 16
	if typ == 0 { // open
		if in.BX&^flagCookie != rpciProto || h.NoCookies && in.BX&flagCookie != 0 {
			return status(0, 0), nil
		}
		h.nextID++
		c := &chanState{cookies: in.BX&flagCookie != 0}
		if c.cookies {
			c.cookieHigh, c.cookieLow = 0x1234_5678^uint32(h.nextID), 0x9abc_def0^uint32(h.nextID)<<8
		}
		h.channels[h.nextID] = c
		out := status(success, 0)
		out.DX = uint32(h.nextID) << 16
		out.SI, out.DI = c.cookieHigh, c.cookieLow
		return out, nil
	}
	id := uint16(in.DX >> 16)
	c, ok := h.channels[id]
	if !ok || c.cookies && (in.SI != c.cookieHigh || in.DI != c.cookieLow) {
		return status(0, 0), nil
	}
	switch typ {
	case 1: // send size
		c.want, c.req, c.haveReply = int(in.BX), nil, false
		if c.want == 0 {
			h.process(c)
		}
		return status(success|highBW, 0), nil
	case 2: // send payload
		if len(c.req) >= c.want {
			return status(0, 0), nil
		}
		for j := 0; j < 4 && len(c.req) < c.want; j++ {
			c.req = append(c.req, byte(in.BX>>(8*j)))
		}
		if len(c.req) == c.want {
			h.process(c)
		}
		return status(success, 0), nil
	case 3: // receive size
		if !c.haveReply {
			return status(success, 0), nil
		}
		c.sent = 0
		out := status(success|doRecv|highBW, 1)
		out.BX = uint32(len(c.reply))
		if h.ReplySize != 0 {
			out.BX = h.ReplySize
		}
		return out, nil
	case 4: // receive payload
		if !c.haveReply || in.BX != success {
			return status(0, 0), nil
		}
		if c.sent >= len(c.reply) {
			return status(0, 0), nil // nothing more to send
		}
		h.payloads++
		if h.payloads == h.CheckpointAt {
			return status(checkpoint, 0), nil
		}
		var w uint32
		for j := 0; j < 4 && c.sent < len(c.reply); j++ {
			w |= uint32(c.reply[c.sent]) << (8 * j)
			c.sent++
		}
		out := status(success, 2)
		out.BX = w
		return out, nil
	case 5: // receive status
		if in.BX == success {
			c.haveReply = false
		}
		return status(success, 0), nil
	case 6: // close
		delete(h.channels, id)
		return status(success, 0), nil
	}
	return status(0, 0), nil
}

// process answers a whole request as the VMX's RPCI handlers do.
func (h *Hypervisor) process(c *chanState) {
	req := string(c.req)
	h.Requests = append(h.Requests, req)
	c.haveReply = true
	cmd, rest, _ := strings.Cut(req, " ")
	switch cmd {
	case "info-get":
		key, ok := strings.CutPrefix(rest, "guestinfo.")
		v, found := h.GuestInfo[key]
		if !ok || !found {
			c.reply = []byte("0 No value found")
			return
		}
		c.reply = []byte("1 " + v)
	case "info-set":
		kv, ok := strings.CutPrefix(rest, "guestinfo.")
		key, value, ok2 := strings.Cut(kv, " ")
		if !ok || !ok2 {
			c.reply = []byte("0 Two and exactly two arguments expected")
			return
		}
		if h.GuestInfo == nil {
			h.GuestInfo = map[string]string{}
		}
		h.GuestInfo[key] = value
		c.reply = []byte("1 ")
	default:
		c.reply = []byte(fmt.Sprintf("0 Unknown command %q", cmd))
	}
}

// Open channels still open.
func (h *Hypervisor) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.channels)
}
