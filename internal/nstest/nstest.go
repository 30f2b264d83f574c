// Package nstest runs a test inside a fresh network namespace (with its
// own mount namespace and /sys, so /sys/class/net shows that namespace's
// links), so tests can create, rename and address links without ever
// touching the machine's own network. It is for tests only: netup's, and
// the datasources' that need a link of their own (seed/ds).
package nstest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

const childEnv = "SEEDINIT_NSTEST"

// Enter runs the calling top-level test again, in a child test binary that
// lives in new network and mount namespaces, and returns false in the
// parent (which reports the child's result); it returns true in the child,
// where the test body goes on with loopback up and /sys remounted. The
// test is skipped when not root or when namespaces are unavailable.
func Enter(t *testing.T) bool {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("nstest.Enter must be called from a top-level test, not %s", t.Name())
	}
	if os.Getenv(childEnv) == t.Name() {
		if err := setupChild(); err != nil {
			t.Fatalf("set up the test namespace: %v", err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to create network namespaces")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(err.Error(), "operation not permitted") || strings.Contains(err.Error(), "invalid argument") {
			testenv.Skipf(t, "network namespaces are unavailable here: %v", err)
		}
		t.Fatalf("test in a network namespace failed: %v\n%s", err, out)
	}
	t.Logf("ran in a fresh network namespace:\n%s", out)
	if strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		// The child's reason is in the log above; in CI only an optional
		// one gets here (a required one failed the child).
		if strings.Contains(string(out), testenv.OptionalPrefix) {
			testenv.SkipOptional(t, "skipped inside the namespace (see log)")
		}
		testenv.Skip(t, "skipped inside the namespace (see log)")
	}
	return false
}

func setupChild() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}

// Veth creates a veth pair, name with the given MAC and its peer with a
// kernel-chosen one (dummy links need a module this kernel may not have).
func Veth(t *testing.T, name, peer, mac string) netlink.Link {
	t.Helper()
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatal(err)
	}
	l := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw}, PeerName: peer}
	if err := netlink.LinkAdd(l); err != nil {
		t.Fatalf("add veth %s/%s: %v", name, peer, err)
	}
	got, err := netlink.LinkByName(name)
	if err == nil {
		return got
	}
	// The code under test may have renamed it by its MAC already (the
	// lease keeper's hotplug does, as soon as the link appears).
	links, lerr := netlink.LinkList()
	if lerr != nil {
		t.Fatalf("find veth %s: %v; list links: %v", name, err, lerr)
	}
	for _, l := range links {
		if l.Type() == "veth" && l.Attrs().HardwareAddr.String() == hw.String() {
			return l
		}
	}
	t.Fatalf("find veth %s (%s): %v", name, mac, err)
	return nil
}

// Up gives the link name the address cidr ("192.0.2.1/24") and sets it
// up: the server's end of a veth.
func Up(t *testing.T, name, cidr string) {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("find link %s: %v", name, err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(l, a); err != nil {
		t.Fatalf("add %s to %s: %v", cidr, name, err)
	}
	if err := netlink.LinkSetUp(l); err != nil {
		t.Fatalf("set %s up: %v", name, err)
	}
}

// Dnsmasq starts dnsmasq as a DHCP server in the test's namespace with
// what every such test wants (in the foreground, as root, no DNS, no
// config file, authoritative, no ping, each exchange logged; its lease
// and pid files in dir) and args (the interfaces, the ranges). It is
// killed, and what it logged shown, when the test ends; the test may
// kill it sooner. It skips the test (fails it in CI) when dnsmasq is not
// installed.
func Dnsmasq(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	dnsmasq := testenv.NeedCommand(t, "dnsmasq", "apt-get install dnsmasq-base")
	server := exec.Command(dnsmasq, append([]string{"--keep-in-foreground", "--no-daemon", "--conf-file=/dev/null",
		"--user=root", "--port=0", "--no-resolv", "--no-hosts", "--dhcp-authoritative", "--no-ping", "--log-dhcp",
		"--dhcp-leasefile=" + filepath.Join(dir, "leases"), "--pid-file=" + filepath.Join(dir, "pid")}, args...)...)
	var out testenv.Buffer
	server.Stdout, server.Stderr = &out, &out
	if err := server.Start(); err != nil {
		t.Fatalf("start dnsmasq: %v", err)
	}
	t.Cleanup(func() {
		server.Process.Kill()
		server.Wait()
		t.Logf("dnsmasq %s:\n%s", strings.Join(args, " "), out.String())
	})
	return server
}

// WaitUp waits until every named link (set up by the test) has carrier and
// is operationally up: a veth end reports carrier only once its peer is
// up, and the first neighbour solicitation or SYN sent before that is lost
// and retried a second or more later, which a test's short fetch timeout
// may not outlast on a loaded machine.
func WaitUp(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range names {
		for {
			l, err := netlink.LinkByName(name)
			if err != nil {
				t.Fatalf("find link %s: %v", name, err)
			}
			a := l.Attrs()
			if a.RawFlags&unix.IFF_LOWER_UP != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("link %s not up after 5 s (state %s)", name, a.OperState)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Addrs lists a link's addresses of one family (netlink.FAMILY_V4 or
// FAMILY_V6) as "ip/prefix", sorted; IPv6 link-local addresses, which every
// link has, are left out.
func Addrs(t *testing.T, name string, family int) []string {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("find link %s: %v", name, err)
	}
	addrs, err := netlink.AddrList(l, family)
	if err != nil {
		t.Fatalf("list addresses of %s: %v", name, err)
	}
	var out []string
	for _, a := range addrs {
		if family == netlink.FAMILY_V6 && a.IP.IsLinkLocalUnicast() {
			continue
		}
		out = append(out, a.IPNet.String())
	}
	sort.Strings(out)
	return out
}

// Routes lists a link's routes of one family as "dst" or "dst via gw",
// sorted, the default route spelled 0.0.0.0/0 (or ::/0).
func Routes(t *testing.T, name string, family int) []string {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("find link %s: %v", name, err)
	}
	routes, err := netlink.RouteList(l, family)
	if err != nil {
		t.Fatalf("list routes of %s: %v", name, err)
	}
	var out []string
	for _, r := range routes {
		dst := "0.0.0.0/0"
		if family == netlink.FAMILY_V6 {
			dst = "::/0"
		}
		if r.Dst != nil {
			dst = r.Dst.String()
		}
		if r.Gw != nil {
			dst += " via " + r.Gw.String()
		}
		out = append(out, dst)
	}
	sort.Strings(out)
	return out
}
