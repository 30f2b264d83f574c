package boot

import (
	"io"
	"os"
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
