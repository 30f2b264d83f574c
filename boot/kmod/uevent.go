package kmod

import (
	"bytes"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/safego"
)

// Rescan is sent on a Uevents channel when the kernel's events overflowed
// the socket: some were lost, and sysfs must be read again.
const Rescan = "\x00rescan"

// Uevents listens to the kernel's uevents and sends the MODALIAS of each
// device added, until stop is called (the channel is then closed, within
// a tenth of a second). Only the kernel's own messages are read.
func Uevents() (events <-chan string, stop func(), err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	// A bus's probe announces its devices in a burst.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	}
	tv := unix.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	ch := make(chan string, 256)
	var stopped atomic.Bool
	safego.Go("uevents", func() {
		defer close(ch)
		defer unix.Close(fd)
		buf := make([]byte, 64<<10)
		for !stopped.Load() {
			n, from, err := unix.Recvfrom(fd, buf, 0)
			switch {
			case errors.Is(err, unix.ENOBUFS):
				ch <- Rescan
				continue
			case err != nil:
				continue // the timeout, to look at stopped; EINTR
			}
			if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
				continue
			}
			if alias, ok := addedModalias(buf[:n]); ok {
				ch <- alias
			}
		}
	}, nil)
	return ch, func() { stopped.Store(true) }, nil
}

// addedModalias reads a kernel uevent ("add@/devices/...\0ACTION=add\0
// ...\0MODALIAS=...\0") and returns the modalias of an added device.
func addedModalias(msg []byte) (string, bool) {
	var add bool
	var alias string
	for i, field := range bytes.Split(msg, []byte{0}) {
		switch {
		case i == 0:
			if !bytes.HasPrefix(field, []byte("add@")) {
				return "", false
			}
		case bytes.Equal(field, []byte("ACTION=add")):
			add = true
		case bytes.HasPrefix(field, []byte("MODALIAS=")):
			alias = string(field[len("MODALIAS="):])
		}
	}
	if !add || alias == "" {
		return "", false
	}
	return alias, true
}
