package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/serve/inventory"
	"github.com/seedinit/seedinit/serve/server"
	"github.com/seedinit/seedinit/serve/state"
)

const serveUsage = "serve: usage: seedinit serve [run] [--listen ADDR] [--sign-key FILE] [--leases FILE]... [--lease-wait D] [--dhcp FIRST-LAST/PREFIX --dhcp-interface IFACE [--dhcp-router A] [--dhcp-dns A]...] [--imdsv1] [--vendor-prefix /PATH/] [--state DIR | --db DSN] [--report-url URL] [--access-log FILE] DIR | seedinit serve --db DSN [options] | seedinit serve load --db DSN DIR | seedinit serve check [--show INSTANCE] DIR | seedinit serve export --format iso|vfat|configdrive [--report-url URL] --out DIR INVENTORY | seedinit serve status (--state DIR | --db DSN | --url URL)"

// runServe is `seedinit serve`: the fleet's side. Its verbs: check an
// inventory (check), serve it (run, or no verb).
func runServe(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return runServeCheck(args[1:], stdout, stderr)
		case "run":
			return runServeRun(args[1:], stdout, stderr)
		case "export":
			return runServeExport(args[1:], stdout, stderr)
		case "status":
			return runServeStatus(args[1:], stdout, stderr)
		case "load":
			return runServeLoad(args[1:], stdout, stderr)
		}
	}
	if len(args) == 0 {
		return fail(stderr, serveUsage)
	}
	return runServeRun(args, stdout, stderr)
}

// runServeRun is `seedinit serve [run] DIR`: serve the inventory in
// every layout until SIGINT or SIGTERM; SIGHUP rereads it (as does an
// edit, seen within --reload). With --db it is one replica of many over
// PostgreSQL (serve_db.go): DIR, when given, is loaded into the database
// for all of them.
func runServeRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve", flag.ContinueOnError)
	listen := fs.String("listen", ":8080", "address to listen on")
	signKey := fs.String("sign-key", "", "Ed25519 private key (OpenSSH format, unencrypted) to sign each instance's seed with")
	var leases stringList
	fs.Var(&leases, "leases", "dnsmasq or ISC dhcpd lease file, to find an instance by the address it asks from (repeatable)")
	leaseWait := fs.Duration("lease-wait", 3*time.Second, "how long a request from an address no lease names yet waits for one")
	dhcpRange := fs.String("dhcp", "", "also serve DHCPv4 to the inventory's MACs from this range, FIRST-LAST/PREFIX (needs --dhcp-interface)")
	dhcpIface := fs.String("dhcp-interface", "", "the link to serve DHCP on; its IPv4 address in the range's subnet is the server's")
	dhcpRouter := fs.String("dhcp-router", "", "the router DHCP gives (none unless set)")
	var dhcpDNS stringList
	fs.Var(&dhcpDNS, "dhcp-dns", "a DNS server DHCP gives (repeatable)")
	imdsv1 := fs.Bool("imdsv1", false, "answer EC2 GETs without an IMDSv2 token")
	vendorPrefix := fs.String("vendor-prefix", "/vendor/", "where the VendorHTTP layout is served")
	reload := fs.Duration("reload", 2*time.Second, "how often the inventory's files are checked for edits (0: only on SIGHUP)")
	verbose := fs.Bool("verbose", false, "log every part served")
	accessLog := fs.String("access-log", "", "append a line per request (time, source, instance, method, path, status, ms) to this file")
	stateDir := fs.String("state", "/var/lib/seedinit/serve", "where each instance's state (waiting, fetched, provisioned, failed) is kept")
	reportURL := fs.String("report-url", "", "this server as instances reach it (http://HOST:PORT): each instance's meta-data that names no seedinit-report-url gets URL/report/NAME, where seedinit reports after its final stage")
	dsn := fs.String("db", "", "PostgreSQL connection string: the inventory, state and token secret replicas share (DIR is then optional: loaded into it when given)")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 && (*dsn == "" || len(rest) != 0) {
		return fail(stderr, serveUsage)
	}
	if *dsn != "" && flagSet(fs, "state") {
		return fail(stderr, "serve: --state and --db: with --db the state is kept in the database")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var priv ed25519.PrivateKey
	if *signKey != "" {
		var err error
		if priv, err = trust.ReadSigningKey(*signKey); err != nil {
			return fail(stderr, "serve: --sign-key: %v", err)
		}
	}
	if *leaseWait <= 0 {
		*leaseWait = -1 // the flag's 0 is "do not wait", Config's is the default
	}
	var srv *server.Server
	var dhcp *server.DHCP
	var sources []server.LeaseSource
	if *dhcpRange != "" {
		cfg, err := dhcpConfig(*dhcpRange, *dhcpIface, *dhcpRouter, dhcpDNS)
		if err != nil {
			return fail(stderr, "serve: %v", err)
		}
		dhcp = server.NewDHCP(cfg, func() *inventory.Inventory { return srv.Inventory() }, log, nil)
		sources = append(sources, dhcp)
	}
	var access io.Writer
	if *accessLog != "" {
		f, err := os.OpenFile(*accessLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return fail(stderr, "serve: --access-log: %v", err)
		}
		defer f.Close()
		access = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := server.Config{SignKey: priv, Leases: leases, LeaseWait: *leaseWait, LeaseSources: sources,
		IMDSv1: *imdsv1, VendorPrefix: *vendorPrefix, ReportURL: *reportURL, AccessLog: access, Log: log}
	// reread is SIGHUP's: the folder again.
	var reread func()
	var interval time.Duration
	if *dsn != "" {
		var dir string
		if len(rest) == 1 {
			dir = rest[0]
		}
		r, code, ok := serveReplica(ctx, *dsn, dir, *reload, cfg, log, stderr)
		if !ok {
			return code
		}
		defer r.db.Close()
		srv, reread = r.srv, r.reread
	} else {
		inv, err := inventory.Load(rest[0])
		var problems inventory.Problems
		if errors.As(err, &problems) {
			for _, p := range problems {
				fmt.Fprintln(stderr, p)
			}
			return fail(stderr, "serve: %s: %d problems (seedinit serve check %s)", rest[0], len(problems), rest[0])
		}
		if err != nil {
			return fail(stderr, "serve: %v", err)
		}
		store, err := state.OpenFileStore(*stateDir)
		if err != nil {
			return fail(stderr, "serve: --state: %v", err)
		}
		defer store.Close()
		for _, p := range store.Problems {
			log.Warn("state folder", "problem", p)
		}
		tracker := state.NewTracker(state.Config{Store: store, Inventory: func() *inventory.Inventory { return srv.Inventory() }, Log: log})
		cfg.Dir, cfg.Inventory, cfg.Observer, cfg.Extra = rest[0], inv, tracker, tracker.Handlers()
		if srv, err = server.New(cfg); err != nil {
			return fail(stderr, "serve: %v", err)
		}
		reread, interval = func() { srv.Reload() }, *reload
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reread()
			}
		}
	}()
	if dhcp != nil {
		conn, err := dhcp.Listen(*dhcpIface)
		if err != nil {
			return fail(stderr, "serve: %v", err)
		}
		defer conn.Close()
		go func() {
			if err := dhcp.Serve(conn); err != nil && ctx.Err() == nil {
				log.Error("DHCP server stopped", "error", err.Error())
			}
		}()
	}
	if err := srv.ListenAndServe(ctx, *listen, interval); err != nil {
		return fail(stderr, "serve: %v", err)
	}
	return exitOK
}

// runServeCheck is `seedinit serve check DIR`: load the inventory as
// serving would, and say everything wrong with it.
func runServeCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit serve check", flag.ContinueOnError)
	show := fs.String("show", "", "also print this instance's parts as they are served")
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return fail(stderr, "serve check: usage: seedinit serve check [--show INSTANCE] DIR")
	}
	inv, err := inventory.Load(rest[0])
	var problems inventory.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		fmt.Fprintf(stdout, "%s: %d problems\n", rest[0], len(problems))
		return exitError
	}
	if err != nil {
		return fail(stderr, "serve check: %v", err)
	}
	for _, w := range inv.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	if *show != "" {
		inst, ok := inv.Instance(*show)
		if !ok {
			return fail(stderr, "serve check: no instance %s in %s", *show, rest[0])
		}
		showInstance(stdout, inst)
	}
	fmt.Fprintf(stdout, "%s: %d instances, %d groups: ok\n", rest[0], len(inv.Instances), len(inv.Groups))
	return exitOK
}

// showInstance prints an instance's selectors and parts, for an operator
// to see what a template made.
func showInstance(w io.Writer, inst *inventory.Instance) {
	fmt.Fprintf(w, "instance %s (%s)\n", inst.Name, inst.File)
	fmt.Fprintf(w, "selectors: mac %v, system-uuid %v, serial %v, address %v\n", inst.MACs, inst.SystemUUIDs, inst.Serials, inst.Addresses)
	for _, p := range []struct {
		name    string
		content []byte
	}{
		{"meta-data", inventory.MarshalYAML(inst.MetaData)},
		{"user-data", inst.UserData},
		{"vendor-data", inst.VendorData},
		{"network-config", inst.NetworkConfig},
	} {
		if p.content == nil {
			continue
		}
		fmt.Fprintf(w, "--- %s\n%s", p.name, p.content)
		if len(p.content) > 0 && p.content[len(p.content)-1] != '\n' {
			fmt.Fprintln(w)
		}
	}
}

// dhcpConfig is --dhcp's: the range, and the server's own address, which
// is the interface's in the range's subnet.
func dhcpConfig(rangeSpec, iface, router string, dns []string) (server.DHCPConfig, error) {
	var cfg server.DHCPConfig
	first, last, prefix, err := server.ParseDHCPRange(rangeSpec)
	if err != nil {
		return cfg, err
	}
	cfg.First, cfg.Last, cfg.Prefix = first, last, prefix
	if iface == "" {
		return cfg, errors.New("--dhcp needs --dhcp-interface")
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return cfg, fmt.Errorf("--dhcp-interface %s: %w", iface, err)
	}
	addrs, _ := ifi.Addrs()
	subnet := netip.PrefixFrom(first, prefix).Masked()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && subnet.Contains(ip) {
				cfg.ServerIP = ip
				break
			}
		}
	}
	if !cfg.ServerIP.IsValid() {
		return cfg, fmt.Errorf("--dhcp-interface %s has no IPv4 address in %s", iface, subnet)
	}
	if router != "" {
		if cfg.Router, err = netip.ParseAddr(router); err != nil || !cfg.Router.Is4() {
			return cfg, fmt.Errorf("--dhcp-router %q: want an IPv4 address", router)
		}
	}
	for _, d := range dns {
		a, err := netip.ParseAddr(d)
		if err != nil || !a.Is4() {
			return cfg, fmt.Errorf("--dhcp-dns %q: want an IPv4 address", d)
		}
		cfg.DNS = append(cfg.DNS, a)
	}
	return cfg, nil
}
