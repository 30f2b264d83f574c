package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/seed/ds"
)

// fakeLease replaces bringUpEphemeral for one test: it counts the
// bring-ups and removals and fails when err is set.
type fakeLease struct {
	up, removed atomic.Int32
	err         error
}

func (f *fakeLease) install(t *testing.T) {
	t.Helper()
	old := bringUpEphemeral
	t.Cleanup(func() { bringUpEphemeral = old })
	bringUpEphemeral = func(ctx context.Context, log *slog.Logger) (*dhcp.Lease, func() error, error) {
		f.up.Add(1)
		if f.err != nil {
			return nil, nil, f.err
		}
		l := &dhcp.Lease{Interface: "fleet-test0", Address: netip.MustParsePrefix("10.99.0.7/16"), ServerID: netip.MustParseAddr("10.99.0.1")}
		return l, func() error { f.removed.Add(1); return nil }, nil
	}
}

// vendorRoot is a root whose cloud.cfg.d names VendorHTTP at url (and
// NoCloud first when withNoCloud), with a NoCloud seed directory when
// seeded.
func vendorRoot(t *testing.T, url string, withNoCloud, seeded bool) *ds.Env {
	t.Helper()
	dir := newTargetRoot(t)
	list := "[VendorHTTP]"
	if withNoCloud {
		list = "[NoCloud, VendorHTTP]"
	}
	cfg := "datasource_list: " + list + "\ndatasource:\n  VendorHTTP:\n    base_url: " + url + "/acme/latest/\n"
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/cloud/cloud.cfg.d/90-fleet.cfg", cfg)
	if seeded {
		write("var/lib/cloud/seed/nocloud/meta-data", "instance-id: local-1\n")
		write("var/lib/cloud/seed/nocloud/user-data", "#cloud-config\n{}\n")
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	env, err := ds.HostEnv(root, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	env.Devices = nil // the host's disks are not this root's
	env.Cmdline = ""
	return env
}

// TestRunDHCPWiring checks `run --dhcp`'s order: the lease is taken
// only when no local source has the seed, before the first request to a
// network source, whose search sees the lease's interface; and a failed
// lease means no network request at all.
func TestRunDHCPWiring(t *testing.T) {
	var fake *fakeLease
	var early, requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if fake.up.Load() == 0 {
			early.Add(1)
		}
		switch r.URL.Path {
		case "/acme/latest/meta_data.json":
			w.Write([]byte(`{"instance-id": "i-fleet-7", "hostname": "waf-007"}`))
		case "/acme/latest/user_data":
			w.Write([]byte("#cloud-config\n{}\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	log := slog.New(slog.DiscardHandler)

	t.Run("network source after the lease", func(t *testing.T) {
		fake = &fakeLease{}
		fake.install(t)
		requests.Store(0)
		env := vendorRoot(t, srv.URL, false, false)
		res, takeDown, err := searchWithDHCP(context.Background(), env, log)
		if err != nil || res == nil || res.Seed == nil {
			t.Fatalf("search: %v", err)
		}
		if got := res.Seed.InstanceID; got != "i-fleet-7" {
			t.Errorf("instance-id %q, want i-fleet-7", got)
		}
		if fake.up.Load() != 1 || early.Load() != 0 {
			t.Errorf("bring-ups %d, requests before the lease %d; want 1 and 0", fake.up.Load(), early.Load())
		}
		if env.Interface != "fleet-test0" || env.DHCPServer != netip.MustParseAddr("10.99.0.1") {
			t.Errorf("env got interface %q, server %s from the lease", env.Interface, env.DHCPServer)
		}
		if fake.removed.Load() != 0 {
			t.Error("lease taken off before the stages")
		}
		takeDown()
		if fake.removed.Load() != 1 {
			t.Errorf("lease taken off %d times, want 1", fake.removed.Load())
		}
	})

	t.Run("local seed, no lease", func(t *testing.T) {
		fake = &fakeLease{}
		fake.install(t)
		requests.Store(0)
		env := vendorRoot(t, srv.URL, true, true)
		res, takeDown, err := searchWithDHCP(context.Background(), env, log)
		if err != nil || res == nil || res.Seed == nil || res.Seed.InstanceID != "local-1" {
			t.Fatalf("search: %v (result %+v)", err, res)
		}
		takeDown()
		if fake.up.Load() != 0 || requests.Load() != 0 {
			t.Errorf("bring-ups %d, requests %d; want none with a local seed", fake.up.Load(), requests.Load())
		}
	})

	t.Run("no lease, no network request", func(t *testing.T) {
		fake = &fakeLease{err: errors.New("dhcp on eth0: timed out")}
		fake.install(t)
		requests.Store(0)
		env := vendorRoot(t, srv.URL, false, false)
		res, takeDown, err := searchWithDHCP(context.Background(), env, log)
		takeDown()
		if err == nil || (res != nil && res.Seed != nil) {
			t.Fatalf("search found a seed without a lease: %v", err)
		}
		if !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "VendorHTTP") {
			t.Errorf("error %q names neither the DHCP failure nor the sources not tried", err)
		}
		if requests.Load() != 0 {
			t.Errorf("%d requests without a lease", requests.Load())
		}
	})
}

func TestRunDHCPFlag(t *testing.T) {
	code, _, errOut := run(t, "run", "--dhcp", "--stage", "local", "--root", t.TempDir())
	if code != exitError || !strings.Contains(errOut, "--dhcp is for the network search") {
		t.Errorf("run --dhcp --stage local: code %d, %q; want a refusal", code, errOut)
	}
	_, _, help := run(t, "run", "-h")
	if !strings.Contains(help, "-dhcp") {
		t.Errorf("run -h does not list --dhcp:\n%s", help)
	}
}
