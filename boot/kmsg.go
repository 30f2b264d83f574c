package boot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// kmsgWriter writes each record to /dev/kmsg as one message, so the
// kernel's log (dmesg, the serial console with loglevel) carries seedinit's
// lines in order with the kernel's own.
type kmsgWriter struct {
	mu sync.Mutex
	f  *os.File
}

func openKmsg() io.Writer {
	f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return &kmsgWriter{f: f}
}

func (k *kmsgWriter) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// <7> is KERN_DEBUG: kept in the kernel log but not echoed to a console
	// that already shows the line. The kernel caps one message near 1 KiB.
	msg := append([]byte("<7>seedinit: "), p...)
	if len(msg) > 1000 {
		msg = append(msg[:996], "...\n"...)
	}
	if _, err := k.f.Write(msg); err != nil {
		return 0, err
	}
	return len(p), nil
}

// printkDevkmsg is the sysctl by which the kernel limits what writers of
// /dev/kmsg get into its log. Its default, "ratelimit", keeps a writer's
// first 10 lines in any 5 s and drops the others: on a Debian root 20 of
// PID 1's 74 lines reached dmesg ("printk: init: 54 output lines
// suppressed due to ratelimiting"). A variable for the tests.
var printkDevkmsg = "/proc/sys/kernel/printk_devkmsg"

// keepAllKmsg turns the rate limit off ("on": every line kept) while PID
// 1 logs, and returns what puts the setting back, for the handoff: the
// real init's own writers are the kernel's to limit again. Where it
// cannot (printk.devkmsg= on the command line locks the setting; no
// /proc), note says what the kernel log keeps of seedinit's lines.
func keepAllKmsg() (restore func() error, note string) {
	nothing := func() error { return nil }
	b, err := os.ReadFile(printkDevkmsg)
	if err != nil {
		return nothing, fmt.Sprintf("cannot read %s (%v): the kernel log may keep only 10 of seedinit's lines in 5 s; the console has them all", printkDevkmsg, err)
	}
	was := strings.TrimSpace(string(b))
	switch was {
	case "on":
		return nothing, ""
	case "off":
		return nothing, "printk_devkmsg is off: the kernel log keeps none of seedinit's lines; the console has them all"
	}
	if err := os.WriteFile(printkDevkmsg, []byte("on\n"), 0o644); err != nil {
		return nothing, fmt.Sprintf("cannot set %s to on (%v; printk.devkmsg= on the kernel command line locks it): the kernel log keeps only 10 of seedinit's lines in 5 s; the console has them all", printkDevkmsg, errors.Unwrap(err))
	}
	return func() error {
		if err := os.WriteFile(printkDevkmsg, []byte(was+"\n"), 0o644); err != nil {
			return fmt.Errorf("put %s back to %s: %w", printkDevkmsg, was, err)
		}
		return nil
	}, ""
}
