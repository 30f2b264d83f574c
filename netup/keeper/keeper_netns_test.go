package keeper

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/internal/nstest"
	"github.com/seedinit/seedinit/netup/dhcp"
	"github.com/seedinit/seedinit/netup/model"
)

// The real thing, in a network namespace with dnsmasq: dhcp.Keep takes
// and holds eth0's lease, live.Hotplug configures late0 when it comes, and only the
// exec is a fake, which fails. Watched all along, late0 is always in the
// network file or in the state file, never in neither. At the handover
// nothing is released; the exec fails and the keeper starts over from
// the files: it holds late0's lease again though the network file no
// longer names it, and releases both leases when it is stopped.
func TestKeeperNamespace(t *testing.T) {
	if !nstest.Enter(t) {
		return
	}
	dir := t.TempDir()
	nstest.Veth(t, "eth0", "srv0", "52:54:00:00:0c:01")
	nstest.Up(t, "srv0", "192.0.2.1/24")
	nstest.Dnsmasq(t, dir, "--interface=srv0", "--interface=srv1", "--bind-dynamic",
		"--dhcp-range=192.0.2.50,192.0.2.50,255.255.255.0,2m",
		"--dhcp-range=198.51.100.50,198.51.100.50,255.255.255.0,2m")

	// eth0 has no lease yet (PID 1's exchange got no answer): the keeper
	// asks for one.
	state, network := filepath.Join(dir, "dhcp-leases.json"), filepath.Join(dir, "network-live.json")
	want := &dhcp.KeepState{}
	want.Want("eth0", 4)
	if err := want.Write(state); err != nil {
		t.Fatal(err)
	}
	if err := WriteNetwork(network, &model.Network{Version: 2, Interfaces: []*model.Interface{dhcpNIC("late0", "52:54:00:00:0c:02")}}); err != nil {
		t.Fatal(err)
	}
	held := func() map[string]string {
		st, err := dhcp.ReadKeepState(state)
		if err != nil {
			t.Errorf("read the state file: %v", err)
			return nil
		}
		m := map[string]string{}
		for _, l := range st.Leases {
			m[l.Interface] = l.State
		}
		return m
	}
	toCome := func() []string {
		n, err := ReadNetwork(network)
		if err != nil {
			t.Errorf("read the network file: %v", err)
			return nil
		}
		var out []string
		for _, i := range n.Interfaces {
			out = append(out, i.Name)
		}
		return out
	}

	// late0 in one file or the other, always: the network file is read
	// first, as a keeper started again would find them.
	watching := make(chan struct{})
	var watched sync.WaitGroup
	var lost atomic.Int32
	watched.Go(func() {
		for {
			select {
			case <-watching:
				return
			case <-time.After(time.Millisecond):
			}
			if !slices.Contains(toCome(), "late0") {
				if _, ok := held()["late0"]; !ok {
					lost.Add(1)
				}
			}
		}
	})
	stopWatching := sync.OnceFunc(func() { close(watching); watched.Wait() })
	defer stopWatching()

	var moveNow atomic.Bool
	ex := newExecs(1)
	log, logBuf := testLog(t)
	stop, done := run(t, Options{State: state, Network: network, MoveTo: "/var/lib/seedinit/seedinit", Log: log, Exec: ex.exec,
		IsSelf: func(string) (bool, error) { return moveNow.Load(), nil }, RunningFromDeletedFile: func() bool { return true },
		MovePoll: 20 * time.Millisecond})

	nstest.Veth(t, "eth5", "srv1", "52:54:00:00:0c:02")
	nstest.Up(t, "srv1", "198.51.100.1/24")
	deadline := time.Now().Add(60 * time.Second)
	for h := held(); h["eth0"] != "bound" || h["late0"] != "bound" || slices.Contains(toCome(), "late0"); h = held() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: eth0 and late0 not both kept (state %v, to come %q)", held(), toCome())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopWatching()
	if n := lost.Load(); n > 0 {
		t.Errorf("late0 was in neither file %d times: a keeper started then would have lost it", n)
	}

	// The handover, and an exec that fails.
	moveNow.Store(true)
	waitFor(t, "the failed exec logged", func() bool {
		return strings.Contains(logBuf.String(), "go on from the copy in the root; staying")
	})
	time.Sleep(time.Second) // the keeper started again; were it releasing, it would have
	for nic, addr := range map[string]string{"eth0": "192.0.2.50/24", "late0": "198.51.100.50/24"} {
		if got := nstest.Addrs(t, nic, netlink.FAMILY_V4); !slices.Equal(got, []string{addr}) {
			t.Errorf("after the failed exec %s's addresses are %q, want %s still", nic, got, addr)
		}
	}
	if got := held(); got["eth0"] != "bound" || got["late0"] != "bound" {
		t.Errorf("after the failed exec the state file says %v, want both bound", got)
	}

	// The shutdown: the keeper started again from the files holds both.
	stop()
	if err := result(t, done); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := held(); got["eth0"] != "released" || got["late0"] != "released" {
		t.Errorf("at the end the state file says %v; want both released by the keeper started again", got)
	}
	for _, nic := range []string{"eth0", "late0"} {
		if got := nstest.Addrs(t, nic, netlink.FAMILY_V4); len(got) != 0 {
			t.Errorf("%s still has %q after the release", nic, got)
		}
	}
	if n := ex.count(); n != 1 {
		t.Errorf("%d execs, want the one that failed", n)
	}
}
