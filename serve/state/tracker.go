package state

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

// storeTimeout bounds one store call made for a request: a store that
// hangs (a database gone) must not hold the request that is being
// served, nor pile up goroutines behind it.
const storeTimeout = 5 * time.Second

// Config is what a Tracker works from.
type Config struct {
	Store Store
	// Inventory returns the inventory as currently loaded (the server may
	// reload it); nil lists and resolves no instance.
	Inventory func() *inventory.Inventory
	// Log gets a line for each refusal and store failure; nil discards.
	Log *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Tracker records what the server does: it is the server's observer
// (Served, Refused, Request), keeps each instance's state in the Store,
// counts for /metrics, and serves the report, status and metrics
// handlers (Handlers).
type Tracker struct {
	cfg Config
	m   metrics

	// index finds instances by instance-id in the inventory it was made
	// from, remade when the server loads another.
	indexMu sync.Mutex
	index   *instanceIndex
}

// NewTracker returns a Tracker over c.Store.
func NewTracker(c Config) *Tracker {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Inventory == nil {
		c.Inventory = func() *inventory.Inventory { return nil }
	}
	return &Tracker{cfg: c, m: newMetrics()}
}

// Served is told that instance was served part in layout, asking from
// remote (host:port or an address): a waiting instance becomes fetched.
func (t *Tracker) Served(instance, layout, part, remote string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	f := Fetch{Layout: layout, Part: part, Source: hostOf(remote), At: t.cfg.Now().UTC()}
	if err := t.cfg.Store.Fetched(ctx, instance, f); err != nil {
		t.m.storeError()
		t.cfg.Log.Error("state: record a fetch", "instance", instance, "layout", layout, "part", part, "err", err)
	}
}

// Refused is told that the server refused a request, and why: it is
// counted by reason (why up to its first colon, so that the instance or
// the address a reason names does not make a metric of its own). The
// server logged it already.
func (t *Tracker) Refused(remote, path, why string) {
	t.m.refused(reasonOf(why))
}

// Request is told that a request of layout was answered with status in
// elapsed.
func (t *Tracker) Request(layout string, status int, elapsed time.Duration) {
	t.m.request(layout, status, elapsed)
}

// hostOf is the address of remote, without the port a RemoteAddr has.
func hostOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}

func reasonOf(why string) string {
	r, _, _ := strings.Cut(why, ":")
	r = strings.TrimSpace(r)
	if r == "" {
		r = "unknown"
	}
	return clip(r, 80)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// instanceIndex is an inventory's instances by instance-id.
type instanceIndex struct {
	inv  *inventory.Inventory
	byID map[string]*inventory.Instance
}

// resolve finds the instance a report names: by name, by instance-id
// (phone_home's $INSTANCE_ID) or by selector (MAC, system UUID).
func (t *Tracker) resolve(key string) (*inventory.Instance, bool) {
	inv := t.cfg.Inventory()
	if inv == nil || key == "" {
		return nil, false
	}
	if inst, ok := inv.Instance(key); ok {
		return inst, true
	}
	t.indexMu.Lock()
	idx := t.index
	if idx == nil || idx.inv != inv {
		idx = &instanceIndex{inv: inv, byID: map[string]*inventory.Instance{}}
		for _, inst := range inv.Instances {
			idx.byID[inst.InstanceID] = inst
		}
		t.index = idx
	}
	t.indexMu.Unlock()
	if inst, ok := idx.byID[key]; ok {
		return inst, true
	}
	if inst, _, ok := inv.Lookup(key); ok {
		return inst, true
	}
	return nil, false
}
