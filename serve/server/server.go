// Package server is `seedinit serve`'s HTTP side: one inventory served
// in the layouts cloud-init's and seedinit's datasources read, side by
// side from one listener —
//
//	/nocloud/[SELECTOR/]meta-data ...   NoCloud's seedfrom (nocloud.go)
//	/openstack/VERSION/meta_data.json   OpenStack's metadata service (openstack.go)
//	/latest/meta-data/..., api/token    EC2's IMDS, IMDSv2 tokens (ec2.go)
//	/vendor/latest/meta_data.json ...   seedinit's VendorHTTP layout (vendor.go)
//
// An instance names itself by a selector in the URL (NoCloud, with
// cloud-init's __dmi.system-uuid__ placeholders) or is found by the
// address it asks from: an inventory address selector, else the DHCP
// lease that gave that address (leases.go). With a signing key, every
// layout whose client reads a seed manifest gets one, bound to the
// instance (sign.go).
//
// The status store, pages and metrics are not here: they plug in through
// Observer and Config.Extra.
package server

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seedinit/seedinit/serve/inventory"
)

// Observer hears what the server does: a status store or metrics plug
// in here. Its methods are called on the request's goroutine and must not
// block for long.
type Observer interface {
	// Served: a part of instance's seed went to remote in layout.
	Served(instance, layout, part, remote string)
	// Refused: a request from remote for path got nothing, and why.
	Refused(remote, path, why string)
	// Request: one request of layout ("" when none) answered with
	// status after elapsed.
	Request(layout string, status int, elapsed time.Duration)
}

// Config is what a Server serves and how.
type Config struct {
	// Dir is the inventory's folder; Inventory, when set, is the one
	// loaded from it already (Load is not run again at New). With
	// Inventory and no Dir, the inventory comes from elsewhere (a
	// database replicas share) and is replaced by Use; InventoryAt is
	// then when that one was made, which signed manifests say.
	Dir         string
	Inventory   *inventory.Inventory
	InventoryAt time.Time
	// SignKey signs a manifest for each instance and layout; nil serves
	// unsigned seeds.
	SignKey ed25519.PrivateKey
	// Leases are dnsmasq or ISC dhcpd lease files, for instances found
	// by the address they ask from.
	Leases []string
	// LeaseSources are more places to find an address's MAC, asked
	// before the lease files: the server's own DHCP (NewDHCP).
	LeaseSources []LeaseSource
	// LeaseWait is how long a request from an address no lease names
	// waits for one to show: dnsmasq writes its file a moment after the
	// ACK, and the instance asks at once. 3s unless set; negative does
	// not wait.
	LeaseWait time.Duration
	// IMDSv1 lets EC2 GETs through without a session token.
	IMDSv1 bool
	// TokenSecret keys the IMDSv2 tokens (MinTokenSecret bytes at
	// least): replicas given the same secret accept each other's
	// tokens. Nil is a random secret of this server's own.
	TokenSecret []byte
	// VendorPrefix is where the VendorHTTP layout is served:
	// "/vendor/" unless set.
	VendorPrefix string
	// ReportURL, when set, is where instances reach this server: each
	// instance's meta-data that names no report URL gets
	// ReportURL/report/NAME (inventory.AddReportURL), on every load.
	ReportURL string
	// Observer hears every request; nil hears nothing.
	Observer Observer
	// Extra are more handlers on the mux, by ServeMux pattern
	// ("/status", "GET /metrics").
	Extra map[string]http.Handler
	// RemoteAddr is the address a request comes from; nil takes
	// http.Request.RemoteAddr. A server behind a proxy it trusts sets
	// it; nothing here believes X-Forwarded-For.
	RemoteAddr func(*http.Request) (netip.Addr, bool)
	// AccessLog, when set, gets a line per request of a layout, as
	// `UNIX-TIME REMOTE INSTANCE|- METHOD PATH STATUS MS`: what an
	// operator counts requests and latency by, per instance.
	AccessLog io.Writer
	// Log receives what is served and refused; nil discards.
	Log *slog.Logger
	// Now is the clock (tokens, leases, signed-at); nil is time.Now.
	Now func() time.Time
}

// LeaseSource finds the MAC an address is leased to: Leases (files) and
// DHCP (the server's own) are two.
type LeaseSource interface {
	MAC(netip.Addr) (string, bool)
}

// Server serves one inventory, reloaded when it changes.
type Server struct {
	cfg    Config
	log    *slog.Logger
	obs    Observer
	mux    *http.ServeMux
	gen    atomic.Pointer[generation]
	leases []LeaseSource
	tokens *tokens
	// reloadMu keeps two reloads from racing; fingerprint is the
	// inventory files' state the current generation was loaded from.
	reloadMu    sync.Mutex
	fingerprint string
	accessMu    sync.Mutex
}

// generation is one loaded inventory and what is derived from it: the
// signed manifests, made once per instance and layout.
type generation struct {
	inv       *inventory.Inventory
	loadedAt  time.Time
	mu        sync.Mutex
	manifests map[manifestKey]*signed
	// netWarned are the instances whose network config was said not to
	// convert to network_data.json.
	netWarned sync.Map
}

type nopObserver struct{}

func (nopObserver) Served(string, string, string, string) {}
func (nopObserver) Refused(string, string, string)        {}
func (nopObserver) Request(string, int, time.Duration)    {}

// New loads the inventory (unless given) and makes the server.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LeaseWait == 0 {
		cfg.LeaseWait = 3 * time.Second
	}
	if cfg.VendorPrefix == "" {
		cfg.VendorPrefix = "/vendor/"
	}
	if !strings.HasPrefix(cfg.VendorPrefix, "/") || !strings.HasSuffix(cfg.VendorPrefix, "/") || cfg.VendorPrefix == "/" {
		return nil, fmt.Errorf("vendor prefix %q: want a path like /acme/", cfg.VendorPrefix)
	}
	for _, taken := range []string{"/nocloud/", "/openstack/", "/latest/"} {
		if cfg.VendorPrefix == taken {
			return nil, fmt.Errorf("vendor prefix %q: taken by another layout", cfg.VendorPrefix)
		}
	}
	if cfg.TokenSecret != nil && len(cfg.TokenSecret) < MinTokenSecret {
		return nil, fmt.Errorf("IMDSv2 token secret: %d bytes, want %d at least", len(cfg.TokenSecret), MinTokenSecret)
	}
	if cfg.Dir == "" && cfg.Inventory == nil {
		return nil, errors.New("no inventory: neither a folder nor one loaded")
	}
	s := &Server{cfg: cfg, log: cfg.Log, obs: cfg.Observer, tokens: newTokens(cfg.Now, cfg.TokenSecret)}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	s.leases = append(s.leases, cfg.LeaseSources...)
	if len(cfg.Leases) > 0 {
		s.leases = append(s.leases, NewLeases(cfg.Leases, cfg.Now))
	}
	inv := cfg.Inventory
	if inv == nil {
		var err error
		s.fingerprint, _ = fingerprint(cfg.Dir)
		if inv, err = inventory.Load(cfg.Dir); err != nil {
			return nil, err
		}
	} else if cfg.Dir != "" {
		s.fingerprint, _ = fingerprint(cfg.Dir)
	}
	if cfg.ReportURL != "" {
		if err := inv.AddReportURL(cfg.ReportURL); err != nil {
			return nil, err
		}
	}
	at := cfg.InventoryAt
	if at.IsZero() {
		at = cfg.Now()
	}
	s.gen.Store(&generation{inv: inv, loadedAt: at, manifests: map[manifestKey]*signed{}})
	s.mux = http.NewServeMux()
	s.mux.Handle("/nocloud/", s.layout("nocloud", s.serveNoCloud))
	s.mux.Handle("/openstack", s.layout("openstack", s.serveOpenStack))
	s.mux.Handle("/openstack/", s.layout("openstack", s.serveOpenStack))
	s.mux.Handle(cfg.VendorPrefix, s.layout("vendor", s.serveVendor))
	s.mux.Handle("/", s.layout("ec2", s.serveEC2))
	for pattern, h := range cfg.Extra {
		if err := handle(s.mux, pattern, h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// handle is mux.Handle with its panic (a pattern taken, or malformed)
// turned into an error naming the pattern.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("mount %q: %v", pattern, p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// Inventory is the inventory being served now.
func (s *Server) Inventory() *inventory.Inventory { return s.gen.Load().inv }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// statusWriter keeps the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// request is one request as a layout's handler sees it.
type request struct {
	*http.Request
	layout string
	remote netip.Addr
	gen    *generation
	// instance is the one the request was found to come from (a part
	// served or refused), for the access log.
	instance string
}

// layout wraps a layout's handler: the generation it answers from, the
// source address, the observer's Request.
func (s *Server) layout(name string, h func(http.ResponseWriter, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		req := &request{Request: r, layout: name, gen: s.gen.Load()}
		req.remote, _ = s.remoteAddr(r)
		h(sw, req)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.obs.Request(name, status, elapsed)
		if s.cfg.AccessLog != nil {
			s.accessLog(req, status, start, elapsed)
		}
	})
}

// accessLog writes r's line; one Write a line, so that lines of
// concurrent requests never interleave.
func (s *Server) accessLog(r *request, status int, start time.Time, elapsed time.Duration) {
	instance := r.instance
	if instance == "" {
		instance = "-"
	}
	// The escaped path has no space or control character to break the
	// line's fields.
	line := fmt.Sprintf("%.3f %s %s %s %s %d %.1f\n", float64(start.UnixMilli())/1000, r.remote, instance,
		r.Method, clip(r.URL.EscapedPath()), status, float64(elapsed.Microseconds())/1000)
	s.accessMu.Lock()
	defer s.accessMu.Unlock()
	s.cfg.AccessLog.Write([]byte(line))
}

func (s *Server) remoteAddr(r *http.Request) (netip.Addr, bool) {
	if s.cfg.RemoteAddr != nil {
		return s.cfg.RemoteAddr(r)
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// refuse answers status with a short reason and logs why (never a
// token or a part's content).
func (s *Server) refuse(w http.ResponseWriter, r *request, status int, why string) {
	remote := r.remote.String()
	s.log.Info("refused", "layout", r.layout, "remote", remote, "method", r.Method, "path", clip(r.URL.Path), "status", status, "why", why)
	s.obs.Refused(remote, clip(r.URL.Path), why)
	http.Error(w, http.StatusText(status)+": "+why, status)
}

// serve answers one part of inst's seed.
func (s *Server) serve(w http.ResponseWriter, r *request, inst *inventory.Instance, part, contentType string, body []byte) {
	s.log.Debug("served", "layout", r.layout, "instance", inst.Name, "part", part, "remote", r.remote.String())
	s.obs.Served(inst.Name, r.layout, part, r.remote.String())
	r.instance = inst.Name
	w.Header().Set("Content-Type", contentType)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// byAddress finds the instance that asks from r's source address: an
// inventory address selector, else the lease that gave the address and
// the instance with that MAC. why says what failed.
func (s *Server) byAddress(r *request) (inst *inventory.Instance, how, why string) {
	if !r.remote.IsValid() {
		return nil, "", "no source address"
	}
	if inst, ok := r.gen.inv.ByAddress(r.remote); ok {
		r.instance = inst.Name
		return inst, "address", ""
	}
	if len(s.leases) == 0 {
		return nil, "", fmt.Sprintf("no instance has address %s (and no --leases to look it up in)", r.remote)
	}
	leased := func() (string, bool) {
		for _, src := range s.leases {
			if mac, ok := src.MAC(r.remote); ok {
				return mac, true
			}
		}
		return "", false
	}
	deadline := time.Now().Add(s.cfg.LeaseWait)
	mac, ok := leased()
	for !ok && time.Now().Before(deadline) {
		select {
		case <-r.Context().Done():
			return nil, "", "gone while waiting for a lease of " + r.remote.String()
		case <-time.After(100 * time.Millisecond):
		}
		mac, ok = leased()
	}
	if !ok {
		return nil, "", fmt.Sprintf("no instance has address %s, and no lease gave it", r.remote)
	}
	inst, kind, ok := r.gen.inv.Lookup(mac)
	if !ok || kind != "mac" {
		return nil, "", fmt.Sprintf("address %s is leased to %s, which no instance has", r.remote, mac)
	}
	r.instance = inst.Name
	return inst, "lease " + mac, ""
}

// ListenAndServe serves on addr until ctx is done, reloading the
// inventory when its files change (every interval) and closing
// gracefully.
func (s *Server) ListenAndServe(ctx context.Context, addr string, interval time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln, interval)
}

// Serve is ListenAndServe on a listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener, interval time.Duration) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("serving", "listen", ln.Addr().String(), "inventory", s.Inventory().Dir, "instances", len(s.Inventory().Instances),
		"signed", s.cfg.SignKey != nil, "imdsv1", s.cfg.IMDSv1, "vendor_prefix", s.cfg.VendorPrefix)
	done := make(chan struct{})
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("inventory watch stopped", "panic", fmt.Sprint(p))
			}
		}()
		if interval <= 0 {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.ReloadIfChanged()
			}
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	err := hs.Serve(ln)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// clip keeps what a log line quotes of a request short.
func clip(s string) string {
	if len(s) <= 128 {
		return s
	}
	return s[:128] + "…"
}
