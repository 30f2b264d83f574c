package ds

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
)

// EarlyLabels reads the label of each block device as the device appears,
// while the kernel's modules are still loading and the root is being
// mounted, so that the datasource search reads what was found instead of
// opening every device again. What it saves is waiting, not work: each
// open of an empty IDE CD-ROM waits about a tenth of a second for the
// drive (measured under QEMU, the vCPU idle meanwhile), and that wait now
// falls beside the module loads.
//
// It polls sysfs rather than listening to the kernel's events: a device's
// /dev node comes a moment after its sysfs entry, and a poll sees both.
// It stops when Stop is called (the search calls it before it reads the
// labels) or after earlyLabelsMax.
type EarlyLabels struct {
	sysBlock, dev string

	mu   sync.Mutex
	seen map[string]earlyLabel

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// earlyLabel is one device's answer, the device it came from and when.
type earlyLabel struct {
	id    deviceID
	probe labelProbe
	at    time.Time
}

// deviceID tells a device from the one that had its name before it, and
// a CD-ROM drive from the same drive with a disc the kernel has seen:
// its device number and its size, as sysfs gives them.
type deviceID struct{ dev, size string }

func readDeviceID(sysBlock, name string) (deviceID, bool) {
	dev, err := os.ReadFile(filepath.Join(sysBlock, name, "dev"))
	if err != nil {
		return deviceID{}, false
	}
	size, _ := os.ReadFile(filepath.Join(sysBlock, name, "size"))
	return deviceID{dev: strings.TrimSpace(string(dev)), size: strings.TrimSpace(string(size))}, true
}

// earlyLabelsMax bounds the polling when no search comes to stop it (a
// rescue shell, a boot that hands off without provisioning).
const earlyLabelsMax = 2 * time.Minute

// earlyLabelsInterval is the time between two looks at sysfs: one
// directory read when no device is new.
const earlyLabelsInterval = 20 * time.Millisecond

// unsureRetry is the time before a device whose answer was not sure is
// read again.
const unsureRetry = 250 * time.Millisecond

// StartEarlyLabels starts reading the labels of the block devices in
// sysBlock (/sys/class/block when "") through their nodes in dev (/dev
// when "").
func StartEarlyLabels(sysBlock, dev string) *EarlyLabels {
	if sysBlock == "" {
		sysBlock = "/sys/class/block"
	}
	if dev == "" {
		dev = "/dev"
	}
	e := &EarlyLabels{
		sysBlock: sysBlock, dev: dev,
		seen: map[string]earlyLabel{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	safego.Go("early block device labels", e.run, nil)
	return e
}

func (e *EarlyLabels) run() {
	defer close(e.done)
	limit := time.NewTimer(earlyLabelsMax)
	defer limit.Stop()
	for {
		e.pass()
		select {
		case <-e.stop:
			return
		case <-limit.C:
			return
		case <-time.After(earlyLabelsInterval):
		}
	}
}

// pass reads the label of each device that is new, or whose last answer
// was not sure (a node not made yet, a drive not ready) a moment ago. A
// device read surely is not looked at again: what changed since (another
// device under its name, a disc the kernel has seen) the search finds by
// its number and size.
func (e *EarlyLabels) pass() {
	entries, err := os.ReadDir(e.sysBlock)
	if err != nil {
		return
	}
	for _, ent := range entries {
		select {
		case <-e.stop:
			return
		default:
		}
		name := ent.Name()
		if skipDevice(name) {
			continue
		}
		e.mu.Lock()
		prev, known := e.seen[name]
		e.mu.Unlock()
		if known && (prev.probe.sure || time.Since(prev.at) < unsureRetry) {
			continue
		}
		id, ok := readDeviceID(e.sysBlock, name)
		if !ok {
			continue
		}
		probe := readLabel(filepath.Join(e.dev, name))
		e.mu.Lock()
		e.seen[name] = earlyLabel{id: id, probe: probe, at: time.Now()}
		e.mu.Unlock()
	}
}

// earlyLabelsStopWait bounds Stop's wait for the label being read: a
// read that takes longer is left to finish on its own (in PID 1 it runs
// in a helper it abandons after devprobe.Bound), and the search reads
// that device itself.
const earlyLabelsStopWait = 2 * time.Second

// Stop ends the polling and waits, at most earlyLabelsStopWait, for the
// label being read, if any, so that its answer is kept. It may be called
// more than once, and on nil.
func (e *EarlyLabels) Stop() {
	if e == nil {
		return
	}
	e.stopOnce.Do(func() { close(e.stop) })
	t := time.NewTimer(earlyLabelsStopWait)
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
	}
}

// lookup is the sure answer read early for the device name when the
// device is still the one that gave it.
func (e *EarlyLabels) lookup(name string, id deviceID) (labelProbe, bool) {
	if e == nil {
		return labelProbe{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.seen[name]
	if !ok || l.id != id || !l.probe.sure {
		return labelProbe{}, false
	}
	return l.probe, true
}
