package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/netup/model"
)

// baseNetwork is a small valid network that each case below spoils in one
// place, as a parser that checked nothing would hand it over.
func baseNetwork() *model.Network {
	return &model.Network{
		Version: 1,
		Interfaces: []*model.Interface{
			{Name: "eth0", Type: model.TypePhysical, MACAddress: "52:54:00:12:34:56", Subnets: []model.Subnet{
				{Type: model.SubnetStatic, Address: "10.0.0.2", Prefix: 24, Netmask: "255.255.255.0", Gateway: "10.0.0.1",
					DNSNameservers: []string{"10.0.0.53"}, DNSSearch: []string{"example.com"}},
			}, BondMaster: "bond0"},
			{Name: "bond0", Type: model.TypeBond, IsBondMaster: true, Params: []model.Param{{Key: "bond-mode", Value: "active-backup"}}},
		},
		DNS: model.DNS{Nameservers: []string{"10.0.0.53"}, Search: []string{"example.com"}},
	}
}

// TestRenderersRefuseUnsafeValues is the second line of defence: whatever
// a parser lets through, no renderer writes a value that would start a
// line of its own or end the quoted string or shell word it is in.
func TestRenderersRefuseUnsafeValues(t *testing.T) {
	all := []string{"eni", "networkd", "netplan", "sysconfig"}
	tests := []struct {
		name  string
		spoil func(n *model.Network)
		// refusedBy lists the renderers that must refuse; the others
		// may write the value, which their format carries safely.
		refusedBy []string
	}{
		{"MAC with a newline", func(n *model.Network) { n.Interfaces[0].MACAddress = "52:54:00:12:34:56\n  up touch /tmp/PWNED" }, all},
		{"name with a NUL", func(n *model.Network) { n.Interfaces[0].Name = "eth\x000" }, all},
		{"name with a slash", func(n *model.Network) { n.Interfaces[0].Name = "../../tmp/X" }, []string{"networkd", "sysconfig"}},
		{"name with a space", func(n *model.Network) { n.Interfaces[0].Name = "eth0 inet dhcp\n" }, all},
		{"gateway with a newline", func(n *model.Network) { n.Interfaces[0].Subnets[0].Gateway = "10.0.0.1\nDNS1=6.6.6.6" }, all},
		{"gateway with a command substitution", func(n *model.Network) { n.Interfaces[0].Subnets[0].Gateway = "$(reboot)" }, []string{"sysconfig"}},
		{"search domain with a backquote", func(n *model.Network) { n.DNS.Search = []string{"`reboot`"} }, []string{"sysconfig"}},
		{"search domain with a newline", func(n *model.Network) { n.DNS.Search = []string{"a\nnameserver 6.6.6.6"} }, all},
		{"parameter value ending a networkd line", func(n *model.Network) { n.Interfaces[1].Params[0].Value = `active-backup\` }, []string{"networkd", "sysconfig"}},
		{"parameter value with a DEL", func(n *model.Network) { n.Interfaces[1].Params[0].Value = "a\x7f" }, all},
		{"parameter list item with a newline", func(n *model.Network) { n.Interfaces[1].Params[0].Value = []string{"a", "b\nc"} }, all},
		{"route gateway with a carriage return", func(n *model.Network) {
			n.Routes = []model.Route{{Network: "10.1.0.0", Prefix: 16, Netmask: "255.255.0.0", Gateway: "10.0.0.1\r"}}
		}, all},
		{"driver closing a udev string", func(n *model.Network) { n.Interfaces[0].Driver = `virtio",RUN+="/bin/sh` }, []string{"eni", "sysconfig"}},
		{"driver with a udev substitution", func(n *model.Network) { n.Interfaces[0].Driver = "virtio%k" }, []string{"eni", "sysconfig"}},
	}
	for _, tc := range tests {
		for _, r := range []struct {
			name string
			fn   func(*model.Network) (Files, error)
		}{{"eni", ENI}, {"networkd", Networkd}, {"netplan", Netplan}, {"sysconfig", Sysconfig}} {
			t.Run(tc.name+"/"+r.name, func(t *testing.T) {
				n := baseNetwork()
				if _, err := r.fn(n); err != nil {
					t.Fatalf("the unspoilt network: %v", err)
				}
				tc.spoil(n)
				files, err := r.fn(n)
				want := false
				for _, name := range tc.refusedBy {
					want = want || name == r.name
				}
				if want {
					if !errors.Is(err, ErrUnsafeValue) {
						t.Fatalf("error = %v, want ErrUnsafeValue", err)
					}
					if files != nil {
						t.Errorf("files came back beside the refusal: %v", files)
					}
					if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
						t.Errorf("the error echoes a control character: %q", err)
					}
					return
				}
				if errors.Is(err, ErrUnsafeValue) {
					t.Errorf("refused, though %s carries the value safely: %v", r.name, err)
				}
			})
		}
	}
}

// TestNetplanRefusesControlInPassthrough checks the v2 document that
// netplan gets as it is: a newline in a key seedinit never reads would
// reach netplan's generators.
func TestNetplanRefusesControlInPassthrough(t *testing.T) {
	for _, doc := range []map[string]any{
		{"version": int64(2), "wifis": map[string]any{"wlan0": map[string]any{"access-points": map[string]any{"home\n": map[string]any{}}}}},
		{"version": int64(2), "ethernets": map[string]any{"eth0": map[string]any{"optional": "yes\x00"}}},
		{"version": int64(2), "ethernets": map[string]any{"eth0": map[string]any{"routes": []any{map[string]any{"to": "default", "via": "10.0.0.1\n"}}}}},
	} {
		_, err := Netplan(&model.Network{Version: 2, V2: doc})
		if !errors.Is(err, ErrUnsafeValue) {
			t.Errorf("Netplan(%v) error = %v, want ErrUnsafeValue", doc, err)
		}
	}
}

// TestNetworkdRefusesUnsafeOverrides checks the DHCP overrides the
// networkd renderer reads from the v2 document itself.
func TestNetworkdRefusesUnsafeOverrides(t *testing.T) {
	n := &model.Network{Version: 2,
		Interfaces: []*model.Interface{{Name: "eth0", Type: model.TypePhysical, Subnets: []model.Subnet{{Type: model.SubnetDHCP4}}}},
		V2: map[string]any{"version": int64(2), "ethernets": map[string]any{"eth0": map[string]any{
			"dhcp4": true, "dhcp4-overrides": map[string]any{"hostname": "h\n[Match]\nName=*"}}}},
	}
	if _, err := Networkd(n); !errors.Is(err, ErrUnsafeValue) {
		t.Errorf("error = %v, want ErrUnsafeValue", err)
	}
}

func TestCheckPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"etc/systemd/network/10-cloud-init-eth0.network":              true,
		"etc/sysconfig/network-scripts/ifcfg-..x":                     true,
		"etc/systemd/network/10-cloud-init-../../../../tmp/X.network": false,
		"/etc/passwd": false,
		"etc/../../x": false,
		"etc//x":      false,
		"etc/x\n":     false,
		`etc\x`:       false,
		"":            false,
		"..":          false,
	} {
		if err := CheckPath(p); (err == nil) != ok {
			t.Errorf("CheckPath(%q) = %v, want ok %v", p, err, ok)
		}
	}
}
