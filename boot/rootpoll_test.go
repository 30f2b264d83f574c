package boot

import (
	"errors"
	"testing"
)

// The root's scan runs again only when the block devices or their nodes
// changed since a scan found nothing, and always after a device was
// found without its node.
func TestRootPollerScansOnChange(t *testing.T) {
	devices := "vda\n"
	scans := 0
	result := ErrNoDevice
	p := &rootPoller{
		find: func(string) (string, error) {
			scans++
			if result == nil {
				return "/dev/vda1", nil
			}
			return "", result
		},
		devices: func() string { return devices },
	}
	poll := func(wantScans int) {
		t.Helper()
		if _, err := p.Find("PARTUUID=x"); err != nil && !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Find: %v", err)
		}
		if scans != wantScans {
			t.Fatalf("%d scans, want %d", scans, wantScans)
		}
	}
	poll(1)
	poll(1) // nothing new: no scan
	devices = "vda\nvda1 (no node)\n"
	result = errNodePending
	poll(2)
	poll(3) // the device is there without its node: scanned again
	devices = "vda\nvda1\n"
	result = nil
	poll(4)
	if dev, err := p.Find("PARTUUID=x"); err != nil || dev != "/dev/vda1" {
		t.Errorf("Find = %q, %v; want /dev/vda1", dev, err)
	}
}
