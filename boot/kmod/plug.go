package kmod

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seedinit/seedinit/internal/safego"
)

// Plug loads the modules of the machine's devices as udev would, without
// udev: those of the devices there when it starts (Scan) and those of the
// devices the kernel announces afterwards (hotplug events, which the
// modules it loads cause: virtio_pci's probe makes the virtio disks). A
// device's module is loaded the moment the device is known, beside the
// others, so the root disk's driver does not wait for a slow bus; Settle
// says when the machine has gone quiet.
type Plug struct {
	l     *Loader
	sem   chan struct{}
	sysfs string // what Scan read, read again when events were lost

	mu       sync.Mutex
	seen     map[string]bool // modaliases and "module:" names
	pending  int             // loads under way
	stopped  bool
	activity time.Time // the last event or finished load
	loaded   []string
	errs     []error
}

// NewPlug starts loading the modules of the devices whose modaliases come
// from events (the kernel's add uevents; nil for none) until events is
// closed.
func (l *Loader) NewPlug(events <-chan string) *Plug {
	p := &Plug{l: l, sem: make(chan struct{}, coldplugParallel), seen: map[string]bool{}, activity: time.Now()}
	if events != nil {
		safego.Go("hotplug events", func() {
			for alias := range events {
				p.mu.Lock()
				p.activity = time.Now()
				sysfs := p.sysfs
				p.mu.Unlock()
				if alias == Rescan {
					if sysfs != "" {
						p.Scan(sysfs)
					}
					continue
				}
				p.Add(alias)
			}
		}, nil)
	}
	return p
}

// Scan adds the modaliases of the devices sysfs (/sys) lists now: every
// bus's devices, the CPU's features and the DMI identity: a few dozen
// files, where a walk of all of /sys/devices reads thousands of
// directories (half a second of a TCG machine, and a boot walked three
// times). Every device with a driver to load sits on a bus. Each
// device's modalias is opened where it would be, without a stat first
// (sysfs path walks are most of the scan's time), and the buses whose
// devices have none (systemBuses) are not listed at all.
// It returns how many modules it started loading.
func (p *Plug) Scan(sysfs string) (started int) {
	p.mu.Lock()
	p.sysfs = sysfs
	p.mu.Unlock()
	var paths []string
	buses, _ := os.ReadDir(filepath.Join(sysfs, "bus"))
	for _, bus := range buses {
		if systemBuses[bus.Name()] {
			continue
		}
		dir := filepath.Join(sysfs, "bus", bus.Name(), "devices")
		devices, _ := os.ReadDir(dir)
		for _, d := range devices {
			paths = append(paths, filepath.Join(dir, d.Name(), "modalias"))
		}
	}
	paths = append(paths,
		filepath.Join(sysfs, "devices", "system", "cpu", "modalias"),
		filepath.Join(sysfs, "devices", "virtual", "dmi", "id", "modalias"))
	for _, path := range paths {
		if b, err := os.ReadFile(path); err == nil {
			started += p.Add(strings.TrimSpace(string(b)))
		}
	}
	return started
}

// systemBuses are the kernel's buses of system devices, which carry no
// modalias: a CPU's (its features are the one cpu modalias Scan reads),
// memory blocks (thousands on a large machine), NUMA nodes, workqueues,
// clocks and perf's event sources.
var systemBuses = map[string]bool{
	"cpu": true, "memory": true, "node": true, "memory_tiering": true, "workqueue": true,
	"clockevents": true, "clocksource": true, "event_source": true, "machinecheck": true,
}

// Add loads, in the background, the modules the index gives for a
// modalias or a module name, unless it was added before, and returns how
// many it started loading.
func (p *Plug) Add(alias string) (started int) {
	if alias == "" {
		return 0
	}
	p.mu.Lock()
	if p.seen[alias] || p.stopped {
		p.mu.Unlock()
		return 0
	}
	p.seen[alias] = true
	p.mu.Unlock()
	mods, _ := p.l.Index.Lookup(alias)
	for _, m := range mods {
		p.mu.Lock()
		if p.seen["module:"+m] {
			p.mu.Unlock()
			continue
		}
		p.seen["module:"+m] = true
		p.pending++
		p.mu.Unlock()
		if p.l.Kernel.Loaded(m) {
			p.done(m, nil, false)
			continue
		}
		started++
		safego.Go("load module "+m, func() {
			p.sem <- struct{}{}
			defer func() { <-p.sem }()
			err := p.l.loadWithDeps(m)
			p.done(m, err, true)
		}, func(err error) { p.done(m, err, false) })
	}
	return started
}

func (p *Plug) done(m string, err error, tried bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending--
	p.activity = time.Now()
	switch {
	case err != nil:
		p.errs = append(p.errs, err)
	case tried:
		p.loaded = append(p.loaded, m)
	}
}

// Stop makes the Plug start no more loads; those under way go on.
func (p *Plug) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// Settle waits until no load is under way and nothing has happened for
// quiet (events from a probe can trail the load that caused them, and a
// bus scanned asynchronously, as libata's, announces its disks later), or
// until max has passed, and returns what was loaded and what failed so
// far. Loads go on after it returns, for devices that come later.
func (p *Plug) Settle(quiet, max time.Duration) (loaded []string, errs []error, settled bool) {
	deadline := time.Now().Add(max)
	for {
		p.mu.Lock()
		idle := p.pending == 0 && time.Since(p.activity) >= quiet
		if idle || time.Now().After(deadline) {
			loaded = append([]string(nil), p.loaded...)
			errs = append([]error(nil), p.errs...)
			p.mu.Unlock()
			sort.Strings(loaded)
			return loaded, errs, idle
		}
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}
