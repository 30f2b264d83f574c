package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var leaseNow = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// dnsmasq's lease file: IPv4 lines, a duid line and IPv6 lines whose
// second field is an IAID, not a MAC.
const dnsmasqLeases = `1796040000 52:54:00:00:00:0a 10.99.0.10 waf-010 01:52:54:00:00:00:0a
0 52:54:00:00:00:0b 10.99.0.11 * *
1700000000 52:54:00:00:00:0c 10.99.0.12 old *
duid 00:01:00:01:2c:5e:4f:3a:52:54:00:00:00:01
1796040000 1234567 fd00::10 waf-010 00:01:00:01:aa
garbage line
`

// ISC dhcpd.leases: the later block for an address wins; a freed lease
// is none; comments and the header are passed over.
const iscLeases = `# The format of this file is documented in the dhcpd.leases(5) manual page.
# This lease file was written by isc-dhcp-4.4.3
authoring-byte-order little-endian;

lease 10.99.0.20 {
  starts 4 2026/11/26 10:00:00;
  ends 6 2026/11/28 22:00:00;
  binding state active;
  next binding state free;
  hardware ethernet 52:54:00:00:00:14;
  client-hostname "waf-{020}";
}
lease 10.99.0.21 {
  ends 1 2026/11/23 10:00:00;
  binding state active;
  hardware ethernet 52:54:00:00:00:15;
}
lease 10.99.0.22 {
  ends never;
  binding state active;
  hardware ethernet 52:54:00:00:00:16;
}
lease 10.99.0.22 {
  ends never;
  binding state free;
  hardware ethernet 52:54:00:00:00:16;
}
lease 10.99.0.23 {
  ends epoch 1796040000; # Fri Nov 30 00:00:00 2026
  binding state active;
  hardware ethernet 52:54:00:00:00:17;
}
lease 10.99.0.24 {
  ends never;
  binding state active;
  hardware ethernet 52:54:00:00:00:99;
}
lease 10.99.0.24 {
  ends never;
  binding state active;
  hardware ethernet 52:54:00:00:00:18;
}
`

func TestLeases(t *testing.T) {
	dir := t.TempDir()
	dm, isc := filepath.Join(dir, "dnsmasq.leases"), filepath.Join(dir, "dhcpd.leases")
	for p, c := range map[string]string{dm: dnsmasqLeases, isc: iscLeases} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLeases([]string{dm, isc, filepath.Join(dir, "missing.leases")}, func() time.Time { return leaseNow })
	got := map[string]string{}
	for _, a := range []string{"10.99.0.10", "10.99.0.11", "10.99.0.12", "fd00::10", "10.99.0.20", "10.99.0.21", "10.99.0.22", "10.99.0.23", "10.99.0.24", "10.99.0.99"} {
		mac, _ := l.MAC(mustAddr(a))
		got[a] = mac
	}
	want := map[string]string{
		"10.99.0.10": "52:54:00:00:00:0a",
		"10.99.0.11": "52:54:00:00:00:0b", // expiry 0: never
		"10.99.0.12": "",                  // expired
		"fd00::10":   "",
		"10.99.0.20": "52:54:00:00:00:14",
		"10.99.0.21": "", // ended
		"10.99.0.22": "", // freed by the later block
		"10.99.0.23": "52:54:00:00:00:17",
		"10.99.0.24": "52:54:00:00:00:18", // the later block wins
		"10.99.0.99": "",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("leases (-want +got):\n%s", d)
	}
	// A lease given since is found: the file is read again when it
	// changes.
	if err := os.WriteFile(dm, []byte(dnsmasqLeases+"0 52:54:00:00:00:0d 10.99.0.13 new *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(dm, leaseNow, leaseNow.Add(time.Minute))
	if mac, ok := l.MAC(mustAddr("10.99.0.13")); !ok || mac != "52:54:00:00:00:0d" {
		t.Errorf("a lease added to the file: %q %v", mac, ok)
	}
}

func FuzzParseLeases(f *testing.F) {
	f.Add([]byte(dnsmasqLeases))
	f.Add([]byte(iscLeases))
	f.Add([]byte("lease 1.2.3.4 {\nhardware ethernet zz;\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for a, le := range ParseLeases(data) {
			if a != le.Addr || le.MAC == "" {
				t.Fatalf("lease %v: %+v", a, le)
			}
		}
	})
}

// A request from an address whose lease is not in the file yet waits
// for it (dnsmasq writes the file a moment after its ACK) rather than
// costing the instance its seed.
func TestLeaseShowsLate(t *testing.T) {
	f := start(t, Config{LeaseWait: 5 * time.Second})
	go func() {
		time.Sleep(300 * time.Millisecond)
		line := "0 " + mac1 + " 127.0.0.7 waf-001 *\n"
		os.WriteFile(f.leases+".new", []byte(line), 0o644)
		os.Rename(f.leases+".new", f.leases)
	}()
	// waf-001 asks from 127.0.0.7, which no address selector names.
	if code, body := get(t, clientFrom("127.0.0.7"), f.url+"/nocloud/meta-data", nil); code != 200 || !strings.Contains(body, "waf-001") {
		t.Errorf("lease written after the request: %d %q", code, body)
	}
}
