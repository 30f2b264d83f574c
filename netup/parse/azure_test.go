package parse

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// azureFixture is one file of testdata/azure: the "network" object of
// Azure's IMDS instance document and the drivers bound to the machine's
// NICs (NIC name to driver).
type azureFixture struct {
	Drivers map[string]string `json:"drivers"`
	Network json.RawMessage   `json:"network"`
}

// azureOracle is what cloud-init's
// generate_network_config_from_instance_network_metadata returns (or
// raises) for every fixture. device_driver, the one question it asks the
// running system, answers from the fixture; sockets are disabled so that
// nothing can reach the network. Its telemetry decorator only reports to
// the registered handlers: the script checks that the log handler is the
// only one, and logging is disabled.
const azureOracle = `
import json, logging, socket, sys, warnings
warnings.simplefilter("ignore")
logging.disable(logging.CRITICAL)
def no_network(*args, **kwargs):
    raise RuntimeError("the oracle must not use the network")
socket.socket.connect = no_network
socket.create_connection = no_network
socket.getaddrinfo = no_network
from cloudinit.reporting import instantiated_handler_registry
from cloudinit.reporting.handlers import LogHandler
import cloudinit.sources.DataSourceAzure as azure
for handler in instantiated_handler_registry.registered_items.values():
    if not isinstance(handler, LogHandler):
        sys.exit("unexpected reporting handler %r" % handler)
out = {}
for name, fixture in json.load(sys.stdin).items():
    drivers = fixture.get("drivers") or {}
    azure.device_driver = lambda devname, drivers=drivers: drivers.get(devname)
    try:
        cfg = azure.generate_network_config_from_instance_network_metadata(fixture["network"])
    except Exception as e:
        out[name] = {"error": "%s: %s" % (type(e).__name__, e)}
        continue
    out[name] = {"config": cfg, "order": list(cfg["ethernets"])}
json.dump(out, sys.stdout)
`

type azureOracleResult struct {
	Config map[string]any `json:"config"`
	Order  []string       `json:"order"`
	Error  string         `json:"error"`
}

func runAzureOracle(t *testing.T, fixtures map[string]azureFixture) map[string]azureOracleResult {
	t.Helper()
	var out map[string]azureOracleResult
	runOracle(t, "generate_network_config_from_instance_network_metadata", azureOracle, fixtures, &out)
	return out
}

// TestAzureMatchesCloudInit feeds every fixture to cloud-init 22.4.2's
// generate_network_config_from_instance_network_metadata and to
// AzureIMDSNetworkConfig and compares the v2 documents (and the order of
// their ethernets); then it checks that the model AzureIMDS builds
// renders (ENI, networkd, netplan) as cloud-init's document does through
// the v2 parser.
func TestAzureMatchesCloudInit(t *testing.T) {
	forEachOracleAnswer(t, "azure", runAzureOracle, func(t *testing.T, f azureFixture, want azureOracleResult) {
		if want.Error != "" {
			t.Fatalf("cloud-init raised: %s", want.Error)
		}
		got, order, err := AzureIMDSNetworkConfig(f.Network, f.Drivers)
		if err != nil {
			t.Fatalf("AzureIMDSNetworkConfig: %v", err)
		}
		if diff := cmp.Diff(any(want.Config), asJSON(t, got)); diff != "" {
			t.Errorf("v2 config differs (-cloud-init +seedinit):\n%s", diff)
		}
		if diff := cmp.Diff(want.Order, order, cmpEmptyEqual); diff != "" {
			t.Errorf("ethernets order differs (-cloud-init +seedinit):\n%s", diff)
		}

		opts := Options{Drivers: f.Drivers}
		ours, err := AzureIMDS(f.Network, opts)
		if err != nil {
			t.Fatalf("AzureIMDS: %v", err)
		}
		// Python's json.dump keeps the dict order, which YAML records.
		theirs := parseCloudInitConfig(t, "v2", want.Config, opts)
		compareRenders(t, theirs, ours)
	})
}

// TestAzureNetworkConfigDocument spells out the document for metadata
// that exercises every rule, so that the rules are checked where the
// oracle cannot run.
func TestAzureNetworkConfigDocument(t *testing.T) {
	input := `{"interface": [
		{"macAddress": "000D3A047598",
		 "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"privateIpAddress": "10.0.0.5"}],
		          "subnet": [{"address": "10.0.0.0", "prefix": "22"}]},
		 "ipv6": {"ipAddress": [{"privateIpAddress": "fd00::4"}, {"privateIpAddress": "fd00::5"}],
		          "subnet": [{"address": "fd00::"}]}},
		{"macAddress": "000D3A0475AA", "ipv4": {"ipAddress": []}},
		{"macAddress": "00:0D:3A:04:75:AB",
		 "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.2.4"}, {"privateIpAddress": "10.0.2.5"}],
		          "subnet": [{"address": "10.0.2.0"}]}}]}`
	cfg, order, err := AzureIMDSNetworkConfig([]byte(input), map[string]string{"eth0": "hv_netvsc", "eth2": "mlx5_core"})
	if err != nil {
		t.Fatalf("AzureIMDSNetworkConfig: %v", err)
	}
	metric := func(m int64) map[string]any { return map[string]any{"route-metric": m} }
	want := map[string]any{
		"version": int64(2),
		"ethernets": map[string]any{
			"eth0": map[string]any{
				"dhcp4":           true,
				"dhcp4-overrides": metric(100),
				"dhcp6":           true,
				"dhcp6-overrides": metric(100),
				"addresses":       []any{"10.0.0.5/22", "fd00::5/128"},
				"match":           map[string]any{"macaddress": "00:0d:3a:04:75:98", "driver": "hv_netvsc"},
				"set-name":        "eth0",
			},
			"eth2": map[string]any{
				"dhcp4":           true,
				"dhcp4-overrides": metric(300),
				"dhcp6":           false,
				"addresses":       []any{"10.0.2.5/24"},
				"match":           map[string]any{"macaddress": "00:0d:3a:04:75:ab"},
				"set-name":        "eth2",
			},
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("v2 config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"eth0", "eth2"}, order); diff != "" {
		t.Errorf("ethernets order (-want +got):\n%s", diff)
	}

	n, err := AzureIMDS([]byte(input), Options{Drivers: map[string]string{"eth0": "hv_netvsc"}})
	if err != nil {
		t.Fatalf("AzureIMDS: %v", err)
	}
	var names []string
	for _, iface := range n.Interfaces {
		names = append(names, strings.TrimSpace(iface.Name+" "+iface.MACAddress+" "+iface.Driver))
	}
	if diff := cmp.Diff([]string{"eth0 00:0d:3a:04:75:98 hv_netvsc", "eth2 00:0d:3a:04:75:ab"}, names); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
}

// azureBadItems are metadata cloud-init cannot use. cloudInitRaises says
// whether cloud-init raises on it (configuring nothing) rather than
// building a document that our v2 parser then rejects in part.
var azureBadItems = []struct {
	name            string
	input           string
	drivers         map[string]string
	wantErrs        []string
	wantIface       []string
	wantNil         bool
	cloudInitRaises bool
}{
	{
		name:     "not JSON",
		input:    `{"interface":`,
		wantErrs: []string{"decode Azure IMDS network metadata"},
		wantNil:  true,
	},
	{
		name:     "not an object",
		input:    `["x"]`,
		wantErrs: []string{"decode Azure IMDS network metadata: expected an object, got a list"},
		wantNil:  true,
	},
	{
		name:            "no interface key",
		input:           `{"interfaces": []}`,
		wantErrs:        []string{`key "interface": expected a list, got null`},
		wantNil:         true,
		cloudInitRaises: true,
	},
	{
		name:            "interface is a number",
		input:           `{"interface": 3}`,
		wantErrs:        []string{`key "interface": expected a list, got a number`},
		wantNil:         true,
		cloudInitRaises: true,
	},
	{
		name: "item not an object",
		input: `{"interface": ["000D3A000001",
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}}]}`,
		wantErrs:        []string{"interface[0] (eth0): expected an object, got a string"},
		wantIface:       []string{"eth1"},
		cloudInitRaises: true,
	},
	{
		name: "macAddress missing or not a string",
		input: `{"interface": [
			{"ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}]}},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}},
			{"macAddress": ["000D3A000003"], "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.2.4"}]}}]}`,
		wantErrs: []string{
			`interface[0] (eth0): missing key "macAddress"`,
			`interface[2] (eth2): key "macAddress": expected a string, got a list`,
		},
		wantIface:       []string{"eth1"},
		cloudInitRaises: true,
	},
	{
		name: "family not an object",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}]}, "ipv6": null},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}}]}`,
		wantErrs:        []string{`interface[0] (eth0): key "ipv6": expected an object, got null`},
		wantIface:       []string{"eth1"},
		cloudInitRaises: true,
	},
	{
		name: "ipAddress neither a list nor empty",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv4": {"ipAddress": "10.0.0.4"}},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}, "ipv6": {"ipAddress": true}}]}`,
		wantErrs: []string{
			`interface[0] (eth0): key "ipv4.ipAddress": expected a list, got a string`,
			`interface[1] (eth1): key "ipv6.ipAddress": expected a list, got a boolean`,
		},
		wantIface:       nil,
		cloudInitRaises: true,
	},
	{
		name: "secondary address without privateIpAddress",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"publicIpAddress": "20.0.0.1"}],
			 "subnet": [{"prefix": "24"}]}},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}}]}`,
		wantErrs:        []string{`interface[0] (eth0): key "ipv4.ipAddress[1]": missing key "privateIpAddress"`},
		wantIface:       []string{"eth1"},
		cloudInitRaises: true,
	},
	{
		name: "secondary address not an object",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv6": {"ipAddress": [{"privateIpAddress": "fd00::4"}, "fd00::5"],
			 "subnet": [{"prefix": "64"}]}},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}]}}]}`,
		wantErrs:        []string{`interface[0] (eth0): key "ipv6.ipAddress[1]": expected an object, got a string`},
		wantIface:       []string{"eth1"},
		cloudInitRaises: true,
	},
	{
		name: "secondary addresses without a usable subnet",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"privateIpAddress": "10.0.0.5"}]}},
			{"macAddress": "000D3A000002", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.1.4"}, {"privateIpAddress": "10.0.1.5"}], "subnet": []}},
			{"macAddress": "000D3A000003", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.2.4"}, {"privateIpAddress": "10.0.2.5"}], "subnet": ["10.0.2.0/24"]}},
			{"macAddress": "000D3A000004", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.3.4"}, {"privateIpAddress": "10.0.3.5"}], "subnet": [{"prefix": "24"}]}}]}`,
		wantErrs: []string{
			`interface[0] (eth0): key "ipv4.subnet": missing`,
			`interface[1] (eth1): key "ipv4.subnet": expected a non-empty list, got a list`,
			`interface[2] (eth2): key "ipv4.subnet[0]": expected an object, got a string`,
		},
		wantIface:       []string{"eth3"},
		cloudInitRaises: true,
	},
	{
		// cloud-init builds the document and its v2 parser raises on the
		// address: an invalid value refuses the whole config here too.
		name: "prefix that is not one",
		input: `{"interface": [
			{"macAddress": "000D3A000001", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"privateIpAddress": "10.0.0.5"}],
			 "subnet": [{"prefix": "xx"}]}}]}`,
		wantErrs: []string{`"10.0.0.5/xx": not an IP address`},
		wantNil:  true,
	},
}

// TestAzureBadItems checks that metadata cloud-init cannot use is
// reported by index and key while the other NICs are still configured,
// under the names their positions give them.
func TestAzureBadItems(t *testing.T) {
	for _, tc := range azureBadItems {
		t.Run(tc.name, func(t *testing.T) {
			n, err := AzureIMDS([]byte(tc.input), Options{Drivers: tc.drivers})
			checkErrorsMention(t, err, tc.wantErrs)
			checkBadItemInterfaces(t, n, tc.wantIface, tc.wantNil)
		})
	}
}

// TestAzureBadItemsCloudInitRaises checks the claim behind
// TestAzureBadItems: cloud-init raises on every item we report, so it
// configures nothing from that metadata where we configure the rest.
func TestAzureBadItemsCloudInitRaises(t *testing.T) {
	fixtures := map[string]azureFixture{}
	for _, tc := range azureBadItems {
		if json.Valid([]byte(tc.input)) && strings.HasPrefix(tc.input, "{") {
			fixtures[tc.name] = azureFixture{Drivers: tc.drivers, Network: json.RawMessage(tc.input)}
		}
	}
	oracle := runAzureOracle(t, fixtures)
	for _, tc := range azureBadItems {
		if _, ok := fixtures[tc.name]; !ok {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got := oracle[tc.name]
			if raised := got.Error != ""; raised != tc.cloudInitRaises {
				t.Errorf("cloud-init raised: %v (%q), want %v", raised, got.Error, tc.cloudInitRaises)
			}
		})
	}
}

func FuzzAzureIMDS(f *testing.F) {
	for _, fx := range readFixtures[azureFixture](f, "azure") {
		f.Add([]byte(fx.Network), "hv_netvsc")
	}
	for _, tc := range azureBadItems {
		f.Add([]byte(tc.input), "")
	}
	f.Add([]byte(`{"interface": [{"macAddress": "ÅÅÅÅÅÅÅÅÅÅÅÅ", "ipv4": {"ipAddress": "é"}}]}`), "hv_netvsc")
	f.Add([]byte(`{"interface": [{"macAddress": "", "ipv6": {"ipAddress": [1, 2], "subnet": [{"prefix": null}]}}]}`), "mlx4_core")
	f.Add([]byte(`{"interface": [{"macAddress": "000D3A047598\n  up touch /tmp/PWNED", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}]}}]}`), "hv_netvsc")
	f.Add([]byte(`{"interface": [{"macAddress": "000D3A047598", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"privateIpAddress": "10.0.0.5\nx"}], "subnet": [{"prefix": "24\u0000"}]}}]}`), "hv_netvsc\"")
	f.Fuzz(func(t *testing.T, data []byte, driver string) {
		n, err := AzureIMDS(data, Options{Drivers: map[string]string{"eth0": driver, "eth1": "hv_netvsc"}})
		if n == nil && err == nil {
			t.Fatal("nil network without an error")
		}
		checkParsed(t, n, err)
	})
}
