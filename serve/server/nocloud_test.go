package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/seed/ds"
)

// seedinit's own NoCloud source, given the command line one image
// carries for the whole fleet, names itself by its SMBIOS system UUID
// and gets its own seed, signed and bound to it.
func TestNoCloudSeedFromByUUID(t *testing.T) {
	f := start(t, signing)
	env := &ds.Env{
		Cmdline: "console=ttyS0 ds=nocloud;s=" + f.url + "/nocloud/__dmi.system-uuid__/",
		DMI:     ds.MapDMI{"product_uuid": strings.ToUpper(uuid2)},
		Fetcher: fetcherFrom(t, "127.0.0.9"),
		Log:     testLog(t),
	}
	s := fetch(t, "NoCloud", env)
	if s.InstanceID != "waf-002" || s.LocalHostname != "waf-002" {
		t.Errorf("instance-id %q, hostname %q; want waf-002's", s.InstanceID, s.LocalHostname)
	}
	if !strings.Contains(string(s.UserData), "/etc/appliance/role") || !strings.Contains(string(s.VendorData), "ntp") {
		t.Errorf("user-data %q, vendor-data %q: not the fleet's", s.UserData, s.VendorData)
	}
	if !strings.Contains(string(s.NetworkConfig), mac2) {
		t.Errorf("network-config %q: not filled with waf-002's MAC", s.NetworkConfig)
	}
	applied, d := f.decide(s, uuid2, mac2)
	if d.Refused() || applied == nil || d.SignedBy == "" {
		t.Fatalf("require refused waf-002's own signed seed: %+v", d)
	}
	for _, p := range d.Parts {
		if p.Verdict != "trusted" {
			t.Errorf("part %s: %s (%s)", p.Part, p.Verdict, p.Detail)
		}
	}
	// The same seed on another machine (waf-001's UUID and MAC): the
	// manifest's bindings refuse it.
	_, d = f.decide(s, uuid1, mac1)
	if !d.Refused() {
		t.Errorf("waf-002's seed accepted on waf-001: %+v", d)
	}
}

// By MAC, serial and name in the URL, and by source address with no
// selector at all (/nocloud/): address selector first, then the lease.
func TestNoCloudSelectorsAndAddress(t *testing.T) {
	f := start(t, Config{})
	for _, tc := range []struct{ from, base, want string }{
		{"127.0.0.9", "/nocloud/52-54-00-00-00-01/", "waf-001"},
		{"127.0.0.9", "/nocloud/CZ0001/", "waf-001"},
		{"127.0.0.9", "/nocloud/waf-002/", "waf-002"},
		{addr1, "/nocloud/", "waf-001"},
		{addr2, "/nocloud/", "waf-002"},
	} {
		env := &ds.Env{Cmdline: "ds=nocloud;s=" + f.url + tc.base, Fetcher: fetcherFrom(t, tc.from), Log: testLog(t)}
		if s := fetch(t, "NoCloud", env); s.InstanceID != tc.want {
			t.Errorf("%s from %s: instance-id %q, want %s", tc.base, tc.from, s.InstanceID, tc.want)
		}
	}
	// Unsigned: no manifest is there to fetch.
	if code, _ := get(t, clientFrom(addr1), f.url+"/nocloud/seed-manifest", nil); code != http.StatusNotFound {
		t.Errorf("seed-manifest without a key: %d, want 404", code)
	}
}

// A selector or an address no instance has is refused with a 404, told
// to the observer and logged with why.
func TestNoCloudRefusals(t *testing.T) {
	f := start(t, Config{})
	for _, tc := range []struct{ from, path, why string }{
		{"127.0.0.9", "/nocloud/4c4c4544-0042-3510-8052-000000000000/meta-data", "no instance has selector"},
		{"127.0.0.9", "/nocloud/meta-data", "no lease gave it"},
		{addr1, "/nocloud/waf-001/secrets", "no NoCloud file"},
	} {
		code, body := get(t, clientFrom(tc.from), f.url+tc.path, nil)
		if code != http.StatusNotFound || !strings.Contains(body, tc.why) {
			t.Errorf("%s from %s: %d %q, want 404 saying %q", tc.path, tc.from, code, body, tc.why)
		}
		if !strings.Contains(f.obs.refusals(), tc.why) {
			t.Errorf("%s: observer heard %q, not why", tc.path, f.obs.refusals())
		}
	}
}
