package parse

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
)

// vultrFixture is one file of testdata/vultr: the network part of Vultr's
// metadata as the datasource stores it, the machine's NICs (MAC to name),
// and, for metadata cloud-init raises on, what we report (Errors) and the
// metadata cloud-init would have to be given to build what we build
// (OracleMetadata).
type vultrFixture struct {
	MACs           map[string]string `json:"macs"`
	Metadata       json.RawMessage   `json:"metadata"`
	Errors         []string          `json:"errors,omitempty"`
	OracleMetadata json.RawMessage   `json:"oracle_metadata,omitempty"`
}

// vultrOracle runs cloud-init's generate_network_config on each fixture's
// metadata and, when there is one, on its oracle_metadata, with the
// machine's NICs replaced by the fixture's (lower-case MACs, as
// get_interfaces_by_mac gives them). An exception is returned as its
// message.
const vultrOracle = `
import json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit.sources.helpers import vultr

def generate(metadata, macs):
    vultr.get_interface_map = lambda: macs
    try:
        return {"config": vultr.generate_network_config(metadata["interfaces"])}
    except Exception as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}

out = {}
for name, fixture in json.load(sys.stdin).items():
    macs = {mac.lower(): nic for mac, nic in fixture["macs"].items()}
    result = {"metadata": generate(fixture["metadata"], macs)}
    if fixture.get("oracle_metadata"):
        result["oracle_metadata"] = generate(fixture["oracle_metadata"], macs)
    out[name] = result
json.dump(out, sys.stdout)
`

type vultrOracleAnswer struct {
	Config map[string]any `json:"config"`
	Error  string         `json:"error"`
}

type vultrOracleResult struct {
	Metadata       vultrOracleAnswer  `json:"metadata"`
	OracleMetadata *vultrOracleAnswer `json:"oracle_metadata"`
}

func runVultrOracle(t *testing.T, fixtures map[string]vultrFixture) map[string]vultrOracleResult {
	t.Helper()
	var out map[string]vultrOracleResult
	runOracle(t, "vultr generate_network_config", vultrOracle, fixtures, &out)
	return out
}

// TestVultrMatchesCloudInit feeds every fixture to cloud-init 22.4.2's
// generate_network_config and to VultrNetworkConfig and compares the v1
// documents; where cloud-init raises, it checks that it does and compares
// with its document for the repaired metadata instead, and checks our
// errors. Then it checks that the model Vultr builds renders (ENI,
// networkd, netplan) as cloud-init's document does through the v1 parser.
func TestVultrMatchesCloudInit(t *testing.T) {
	forEachOracleAnswer(t, "vultr", runVultrOracle, func(t *testing.T, f vultrFixture, answer vultrOracleResult) {
		want := answer.Metadata
		if f.OracleMetadata != nil {
			if want.Error == "" {
				t.Fatalf("cloud-init takes the metadata as it is (%v): drop oracle_metadata", want.Config)
			}
			t.Logf("cloud-init raises %s; comparing with its config for oracle_metadata", want.Error)
			if answer.OracleMetadata == nil {
				t.Fatal("no answer from the oracle for oracle_metadata")
			}
			want = *answer.OracleMetadata
		}
		if want.Error != "" {
			t.Fatalf("cloud-init raises %s", want.Error)
		}

		got, err := VultrNetworkConfig(f.Metadata, f.MACs)
		checkVultrErrors(t, err, f.Errors)
		if got == nil {
			t.Fatal("VultrNetworkConfig returned no config")
		}
		if diff := cmp.Diff(any(want.Config), asJSON(t, got)); diff != "" {
			t.Errorf("v1 config differs (-cloud-init +seedinit):\n%s", diff)
		}

		ours, err := Vultr(f.Metadata, Options{MACs: f.MACs})
		checkVultrErrors(t, err, f.Errors)
		if ours == nil {
			t.Fatal("Vultr returned no network")
		}
		theirs := parseCloudInitConfig(t, "v1", want.Config, Options{MACs: f.MACs})
		compareRenders(t, theirs, ours)
	})
}

// checkVultrErrors wants err to mention each of want, and to be nil when
// want is empty.
func checkVultrErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	checkErrorsMention(t, err, want)
}

// TestVultrBadItems checks that metadata cloud-init cannot use is reported
// by NIC (index and MAC) and key while everything else is configured.
func TestVultrBadItems(t *testing.T) {
	twoNICs := map[string]string{"56:00:00:00:00:01": "eth0", "5a:00:00:00:00:02": "eth1"}
	tests := []struct {
		name      string
		input     string
		macs      map[string]string
		wantErrs  []string
		wantIface []string
		wantNil   bool
	}{
		{
			name:     "not JSON",
			input:    `{"interfaces":`,
			macs:     twoNICs,
			wantErrs: []string{"decode Vultr network metadata"},
			wantNil:  true,
		},
		{
			name:     "a bare list",
			input:    `[{"mac": "56:00:00:00:00:01"}]`,
			macs:     twoNICs,
			wantErrs: []string{"expected an object, got a list"},
			wantNil:  true,
		},
		{
			name:     "no interfaces",
			input:    `{}`,
			macs:     twoNICs,
			wantErrs: []string{`key "interfaces": expected a list, got null`},
			wantNil:  true,
		},
		{
			name:     "interfaces not a list",
			input:    `{"interfaces": {"mac": "56:00:00:00:00:01"}}`,
			macs:     twoNICs,
			wantErrs: []string{`key "interfaces": expected a list, got an object`},
			wantNil:  true,
		},
		{
			name:     "cloud_interfaces",
			input:    `{"cloud_interfaces": [{"mac": "56:00:00:00:00:01", "type": "physical"}], "interfaces": []}`,
			macs:     twoNICs,
			wantErrs: []string{`key "cloud_interfaces" is not supported`},
			wantNil:  true,
		},
		{
			name:     "no NIC known",
			input:    `{"interfaces": [{"mac": "56:00:00:00:00:01"}]}`,
			wantErrs: []string{"no NIC of this machine is known by MAC"},
			wantNil:  true,
		},
		{
			name: "public NIC not on the machine",
			input: `{"interfaces": [{"mac": "56:00:00:00:00:09"},
				{"mac": "5a:00:00:00:00:02", "ipv4": {"address": "10.1.0.5", "netmask": "255.255.0.0"}}]}`,
			macs:      twoNICs,
			wantErrs:  []string{"interfaces[0] (MAC 56:00:00:00:00:09): no NIC with this MAC on the machine"},
			wantIface: []string{"eth1"},
		},
		{
			name: "NICs that are not objects or have no usable MAC",
			input: `{"interfaces": [{"mac": "56:00:00:00:00:01"}, "eth1", {"ipv4": {}},
				{"mac": 5, "ipv4": {"address": "10.1.0.5", "netmask": "255.255.0.0"}}]}`,
			macs: twoNICs,
			wantErrs: []string{
				"interfaces[1]: expected an object, got a string",
				`interfaces[2]: missing key "mac"`,
				`interfaces[3]: key "mac": expected a string, got a number`,
			},
			wantIface: []string{"eth0"},
		},
		{
			name: "private NIC without ipv4 or netmask",
			input: `{"interfaces": [{"mac": "56:00:00:00:00:01"}, {"mac": "5a:00:00:00:00:02", "ipv4": "10.1.0.5"},
				{"mac": "5a:00:00:00:00:03", "ipv4": {"address": "10.3.0.5"}}]}`,
			macs: map[string]string{"56:00:00:00:00:01": "eth0", "5a:00:00:00:00:02": "eth1", "5a:00:00:00:00:03": "eth2"},
			wantErrs: []string{
				`interfaces[1] (MAC 5a:00:00:00:00:02): key "ipv4": expected an object with the private address, got a string`,
				"interfaces[2] (MAC 5a:00:00:00:00:03): no netmask for the private address (ipv4.netmask)",
			},
			wantIface: []string{"eth0"},
		},
		{
			name: "additional lists of the wrong type",
			input: `{"interfaces": [{"mac": "56:00:00:00:00:01", "ipv4": {"additional": "45.77.10.20"}, "ipv6": 6,
				"mtu": 1400}]}`,
			macs: twoNICs,
			wantErrs: []string{
				`interfaces[0] (MAC 56:00:00:00:00:01): key "ipv4.additional": expected a list, got a string`,
				`interfaces[0] (MAC 56:00:00:00:00:01): key "ipv6": expected an object, got a number`,
			},
			wantIface: []string{"eth0"},
		},
		{
			name: "bad private address reported by the v1 parser",
			input: `{"interfaces": [{"mac": "56:00:00:00:00:01"},
				{"mac": "5a:00:00:00:00:02", "ipv4": {"address": "10.1.0.500", "netmask": "255.255.0.0"}}]}`,
			macs: twoNICs,
			// cloud-init's v1 parser raises on the address; the whole
			// config is refused.
			wantErrs: []string{`config[2] (physical eth1): subnets[0]: key "address": "10.1.0.500": not an IP address`},
			wantNil:  true,
		},
		{
			name:      "upper-case MAC in the metadata",
			input:     `{"interfaces": [{"mac": "56:00:00:00:00:01"}, {"mac": "5A:00:00:00:00:02", "ipv4": {"address": "10.1.0.5", "netmask": "255.255.0.0"}}]}`,
			macs:      twoNICs,
			wantIface: []string{"eth0", "eth1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Vultr([]byte(tc.input), Options{MACs: tc.macs})
			checkVultrErrors(t, err, tc.wantErrs)
			if !checkBadItemInterfaces(t, n, tc.wantIface, tc.wantNil) {
				return
			}
			if diff := cmp.Diff([]string{"108.61.10.10", "2001:19f0:300:1704::6"}, n.DNS.Nameservers); diff != "" {
				t.Errorf("nameservers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVultrNICSettings checks what the model keeps of a public and a
// private NIC: subnets in cloud-init's order, MTU, accept-ra.
func TestVultrNICSettings(t *testing.T) {
	input := `{"interfaces": [
		{"mac": "56:00:00:00:00:01", "accept-ra": 0, "ipv6": {"additional": [{"network": "2001:db8:1::", "prefix": 64}]}},
		{"mac": "5a:00:00:00:00:02", "mtu": 1450, "routes": [{"network": "10.9.0.0/16", "gateway": "10.1.0.1"}],
		 "ipv4": {"address": "10.1.0.5", "netmask": "255.255.0.0", "additional": [{"address": "10.2.0.5", "netmask": "255.255.255.0"}]}}]}`
	n, err := Vultr([]byte(input), Options{MACs: map[string]string{"56:00:00:00:00:01": "eth0", "5A:00:00:00:00:02": "eth1"}})
	if err != nil {
		t.Fatalf("Vultr: %v", err)
	}
	if len(n.Interfaces) != 2 {
		t.Fatalf("%d interfaces, want 2", len(n.Interfaces))
	}
	type subnet struct {
		Type, Address string
		Prefix        int
		Routes        int
	}
	summary := func(iface *model.Interface) []subnet {
		var out []subnet
		for _, s := range iface.Subnets {
			out = append(out, subnet{s.Type, s.Address, s.Prefix, len(s.Routes)})
		}
		return out
	}
	public, private := n.Interfaces[0], n.Interfaces[1]
	if diff := cmp.Diff([]subnet{{"dhcp", "", 0, 0}, {"ipv6_slaac", "", 0, 0}, {"static6", "2001:db8:1::", 64, 0}}, summary(public)); diff != "" {
		t.Errorf("eth0 subnets (-want +got):\n%s", diff)
	}
	if public.AcceptRA == nil || *public.AcceptRA {
		t.Errorf("eth0 accept-ra = %v, want false (the metadata's 0 replaces cloud-init's 1)", public.AcceptRA)
	}
	if public.MACAddress != "56:00:00:00:00:01" {
		t.Errorf("eth0 MAC = %q", public.MACAddress)
	}
	if diff := cmp.Diff([]subnet{{"static", "10.1.0.5", 16, 1}, {"static", "10.2.0.5", 24, 0}}, summary(private)); diff != "" {
		t.Errorf("eth1 subnets (-want +got):\n%s", diff)
	}
	if private.MTU != 1450 || private.AcceptRA != nil {
		t.Errorf("eth1 MTU %d accept-ra %v, want 1450 and unset", private.MTU, private.AcceptRA)
	}
	if !n.UseIPv6 {
		t.Error("UseIPv6 is false with a static6 subnet")
	}
}

func FuzzVultr(f *testing.F) {
	for _, fx := range readFixtures[vultrFixture](f, "vultr") {
		f.Add([]byte(fx.Metadata), "56:00:00:00:00:01")
	}
	f.Add([]byte(`{"interfaces": [{"mac": "56:00:00:00:00:01", "routes": "x", "mtu": "big", "ipv6": {"additional": [{"network": null, "prefix": []}]}}]}`), "56:00:00:00:00:01")
	f.Add([]byte(`{"interfaces": [{"mac": "a"}, {"mac": "a", "ipv4": {"address": 1, "netmask": 1e400}}]}`), "A")
	f.Add([]byte(`{"cloud_interfaces": null}`), "")
	f.Add([]byte(`{"interfaces": [{"mac": "56:00:00:00:00:01\n  up touch /tmp/PWNED"}]}`), "56:00:00:00:00:01\n  up touch /tmp/PWNED")
	f.Add([]byte(`{"interfaces": [{"mac": "56:00:00:00:00:01", "mtu": "1500\n", "routes": [{"network": "10.0.0.0", "netmask": "255.0.0.0", "gateway": "10.0.0.1\u0000"}]}]}`), "56:00:00:00:00:01")
	f.Fuzz(func(t *testing.T, data []byte, mac string) {
		n, err := Vultr(data, Options{MACs: map[string]string{mac: "eth0", "5a:00:00:00:00:02": "eth1", "56:00:03:1b:4e:ca": "ens3"}})
		if n == nil && err == nil {
			t.Fatal("nil network without an error")
		}
		checkParsed(t, n, err)
	})
}
