package ds

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/nstest"
)

// addV6 puts an address on a link, without duplicate address detection
// (a tentative address cannot be bound for a second or two), and brings
// the link up.
func addV6(t *testing.T, name, cidr string) {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	a.Flags = unix.IFA_F_NODAD
	if err := netlink.AddrAdd(l, a); err != nil {
		t.Fatalf("add %s to %s: %v", cidr, name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
}

// knowNeighbour tells link the peer link's MAC for ip, so the test's
// first SYN does not wait on neighbour discovery: on a loaded machine its
// solicitations were seen to go unanswered for the three seconds the
// kernel gives them, and the fetch failed with "no route to host".
func knowNeighbour(t *testing.T, link, ip, peer string) {
	t.Helper()
	l, err := netlink.LinkByName(link)
	if err != nil {
		t.Fatal(err)
	}
	p, err := netlink.LinkByName(peer)
	if err != nil {
		t.Fatal(err)
	}
	n := &netlink.Neigh{LinkIndex: l.Attrs().Index, Family: netlink.FAMILY_V6, State: netlink.NUD_PERMANENT, IP: net.ParseIP(ip), HardwareAddr: p.Attrs().HardwareAddr}
	if err := netlink.NeighSet(n); err != nil {
		t.Fatalf("neighbour %s on %s: %v", ip, link, err)
	}
}

// serveOn serves handler on addr (an address of the test's namespace)
// until the test ends.
func serveOn(t *testing.T, addr string, handler http.Handler) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// On a link with IPv6 only, in a namespace of its own, EC2's default
// metadata addresses are both asked: 169.254.169.254 cannot be reached,
// fd00:ec2::254 answers, and the seed comes from it.
func TestEC2OverIPv6OnlyLink(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "imds", "52:54:00:ec:20:01")
	addV6(t, "eth0", "fd00:ec2::10/64")
	addV6(t, "imds", "fd00:ec2::254/64")
	nstest.WaitUp(t, "eth0", "imds")
	knowNeighbour(t, "eth0", "fd00:ec2::254", "imds")
	knowNeighbour(t, "imds", "fd00:ec2::10", "eth0")
	if got := nstest.Addrs(t, "eth0", netlink.FAMILY_V4); len(got) != 0 {
		t.Fatalf("eth0 has IPv4 addresses: %v", got)
	}
	imds := newFakeIMDS(t, "ec2/imds.json")
	imds.requireToken = true
	serveOn(t, "[fd00:ec2::254]:80", imds)

	env := testEnv("", nil, nil)
	env.Config.Fetch.Timeout = 5 * time.Second
	if got := baseURLs(env, nil, "metadata_urls", EC2MetadataURL, EC2MetadataURLIPv6); len(got) != 2 {
		t.Fatalf("default URLs %v, want IPv4 and IPv6", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := ec2Datasource{}.Fetch(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "i-0a1b2c3d4e5f60718" || s.Subplatform != "metadata ("+EC2MetadataURLIPv6+")" {
		t.Errorf("seed from %q: %q", s.Subplatform, s.InstanceID)
	}
	if !imds.requested(imdsTokenPath) {
		t.Error("no IMDSv2 token was asked for over IPv6")
	}
}

// OpenStack's link-local metadata address, fe80::a9fe:a9fe on the link
// the ephemeral lease came up on, is read when IPv4 cannot be.
func TestOpenStackOverIPv6OnlyLink(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "meta", "52:54:00:05:20:01")
	addV6(t, "eth0", "fe80::10/64")
	addV6(t, "meta", "fe80::a9fe:a9fe/64")
	nstest.WaitUp(t, "eth0", "meta")
	knowNeighbour(t, "eth0", "fe80::a9fe:a9fe", "meta")
	knowNeighbour(t, "meta", "fe80::10", "eth0")
	good := openStackServer(t, "2018-08-27", "latest")
	serveOn(t, "[fe80::a9fe:a9fe%meta]:80", good.Config.Handler)

	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova"}, "")
	env.Interface = "eth0"
	env.Config.Fetch.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := openStack{}.Fetch(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "b0fa911b-69d4-4476-bbe2-1c92bff6535c" || s.Subplatform != "metadata (http://[fe80::a9fe:a9fe%25eth0])" {
		t.Errorf("seed from %q: %q", s.Subplatform, s.InstanceID)
	}
}

// Scaleway's IPv6 metadata address, fd00:42::42, serves an IPv6-only
// instance.
func TestScalewayOverIPv6OnlyLink(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	nstest.Veth(t, "eth0", "scw", "52:54:00:5c:00:01")
	addV6(t, "eth0", "fd00:42::10/64")
	addV6(t, "scw", "fd00:42::42/64")
	nstest.WaitUp(t, "eth0", "scw")
	knowNeighbour(t, "eth0", "fd00:42::42", "scw")
	knowNeighbour(t, "scw", "fd00:42::10", "eth0")
	good := fixtureServer(t, map[string]route{
		"/conf?format=json":     {file: "scaleway/conf.json"},
		"/user_data/cloud-init": {file: "scaleway/user_data"},
	})
	serveOn(t, "[fd00:42::42]:80", good.Config.Handler)

	env := testEnv("", nil, nil)
	env.Config.Fetch.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := scalewayDatasource{}.Fetch(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "3b7a1c6e-9d2f-4e8a-b1c0-5f6e7d8c9a0b" || !strings.HasPrefix(s.Subplatform, "metadata (http://[fd00:42::42]/conf") || len(s.UserData) == 0 {
		t.Errorf("seed from %q: %q, user-data %q", s.Subplatform, s.InstanceID, s.UserData)
	}
}
