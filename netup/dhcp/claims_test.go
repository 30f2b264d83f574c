package dhcp

import (
	"slices"
	"testing"
)

// The root's network service is judged to have a DHCPv4 client by the
// same list the keeper stands aside for: a client missing from one but
// not the other would keep a lease twice or leave a NIC without one.
func TestIPv4ClientsAreTheClientsThatTakeIPv4(t *testing.T) {
	got := IPv4Clients()
	want := []string{"dhclient", "dhclient3", "dhcpcd", "pump", "udhcpc"}
	if !slices.Equal(got, want) {
		t.Fatalf("IPv4Clients() = %q, want %q", got, want)
	}
	for _, name := range got {
		if !nicClients[name] {
			t.Errorf("%s is not a client the keeper stands aside for", name)
		}
		if !slices.Contains(familiesOf(name, []string{"eth0"}), 4) {
			t.Errorf("%s eth0 does not take IPv4", name)
		}
	}
}
