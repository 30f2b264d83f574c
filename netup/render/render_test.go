package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// TestNetplanQuotesYAML11Scalars checks that strings a YAML 1.1 reader
// would take for numbers or booleans survive a round trip.
func TestNetplanQuotesYAML11Scalars(t *testing.T) {
	n := &model.Network{Version: 2, V2: map[string]any{
		"version": int64(2),
		"ethernets": map[string]any{"eth0": map[string]any{
			"match":    map[string]any{"macaddress": "52:54:00:12:34:56"},
			"set-name": "on",
			"mtu":      int64(1500),
		}},
	}}
	content, err := NetplanContent(n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := yaml11.Load([]byte(content))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"network": n.V2}, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\n%s", diff, content)
	}
}

func TestENIRoute(t *testing.T) {
	metric := 5
	tests := []struct {
		name  string
		route model.Route
		want  string
	}{
		{"default v4", model.Route{Network: "0.0.0.0", Prefix: 0, Netmask: "0.0.0.0", Gateway: "10.0.0.1"}, "post-up route add default gw 10.0.0.1 || true"},
		{"default v6", model.Route{Network: "::", Prefix: 0, Gateway: "fe80::1"}, "post-up route add -A inet6 default gw fe80::1 || true"},
		{"host", model.Route{Network: "10.1.1.1", Prefix: 32, Netmask: "255.255.255.255", Gateway: "10.0.0.1", Metric: &metric}, "post-up route add -host 10.1.1.1/32 gw 10.0.0.1 metric 5 || true"},
		{"net v6", model.Route{Network: "2001:db8::", Prefix: 48, Gateway: "2001:db8::1"}, "post-up route add -A inet6 2001:db8::/48 gw 2001:db8::1 || true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eniRoute(tt.route, "")
			if diff := cmp.Diff(tt.want, got[0]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(got[1], "pre-down route del") {
				t.Errorf("second line %q is not the pre-down", got[1])
			}
		})
	}
}

func TestResolvConfLimits(t *testing.T) {
	n := &model.Network{DNS: model.DNS{
		Nameservers: []string{"1.1.1.1", "1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"},
		Search:      []string{"a", "b", "c", "d", "e", "f", "g"},
	}}
	got, err := resolvConf(n)
	if err == nil {
		t.Error("no error for a seventh search domain")
	}
	want := "; Created by cloud-init on instance boot automatically, do not edit.\n;\n" +
		"nameserver 1.1.1.1\nnameserver 2.2.2.2\nnameserver 3.3.3.3\nsearch a b c d e f\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
