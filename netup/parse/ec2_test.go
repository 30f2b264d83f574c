package parse

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ec2Fixture is one file of testdata/ec2: the "network" tree of EC2's
// metadata and the machine's NICs (MAC to name).
type ec2Fixture struct {
	MACs    map[string]string `json:"macs"`
	Network json.RawMessage   `json:"network"`
}

// ec2Oracle is what cloud-init's convert_ec2_metadata_network_config
// returns for every fixture, with the order of its ethernets.
const ec2Oracle = `
import json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit.sources.DataSourceEc2 import convert_ec2_metadata_network_config
out = {}
for name, fixture in json.load(sys.stdin).items():
    cfg = convert_ec2_metadata_network_config(fixture["network"], macs_to_nics=fixture["macs"])
    out[name] = {"config": cfg, "order": list(cfg["ethernets"])}
json.dump(out, sys.stdout)
`

type ec2OracleResult struct {
	Config map[string]any `json:"config"`
	Order  []string       `json:"order"`
}

func runEC2Oracle(t *testing.T, fixtures map[string]ec2Fixture) map[string]ec2OracleResult {
	t.Helper()
	var out map[string]ec2OracleResult
	runOracle(t, "convert_ec2_metadata_network_config", ec2Oracle, fixtures, &out)
	return out
}

// TestEC2MatchesCloudInit feeds every fixture to cloud-init 22.4.2's
// convert_ec2_metadata_network_config and to EC2NetworkConfig and
// compares the v2 documents (and the order of their ethernets); then it
// checks that the model EC2 builds renders (ENI, networkd, netplan) as
// cloud-init's document does through the v2 parser.
func TestEC2MatchesCloudInit(t *testing.T) {
	forEachOracleAnswer(t, "ec2", runEC2Oracle, func(t *testing.T, f ec2Fixture, want ec2OracleResult) {
		var network map[string]any
		if err := json.Unmarshal(f.Network, &network); err != nil {
			t.Fatal(err)
		}
		got, order, err := EC2NetworkConfig(network, f.MACs)
		if err != nil {
			t.Fatalf("EC2NetworkConfig: %v", err)
		}
		if diff := cmp.Diff(any(want.Config), asJSON(t, got)); diff != "" {
			t.Errorf("v2 config differs (-cloud-init +seedinit):\n%s", diff)
		}
		if diff := cmp.Diff(want.Order, order, cmpEmptyEqual); diff != "" {
			t.Errorf("ethernets order differs (-cloud-init +seedinit):\n%s", diff)
		}

		ours, err := EC2(f.Network, Options{MACs: f.MACs})
		if err != nil {
			t.Fatalf("EC2: %v", err)
		}
		theirs := parseCloudInitConfig(t, "v2", want.Config, Options{MACs: f.MACs})
		compareRenders(t, theirs, ours)
	})
}

// TestEC2BadItems checks that metadata cloud-init cannot use is reported
// by MAC and key while the other NICs are still configured.
func TestEC2BadItems(t *testing.T) {
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
			wantErrs: []string{"decode EC2 network metadata"},
			wantNil:  true,
		},
		{
			name:     "not an object",
			input:    `["x"]`,
			wantErrs: []string{"expected an object, got a list"},
			wantNil:  true,
		},
		{
			name:     "no NIC known",
			input:    `{"interfaces": {"macs": {"06:00:00:00:00:01": {"device-number": "0"}}}}`,
			wantErrs: []string{"no NIC of this machine is known by MAC"},
			wantNil:  true,
		},
		{
			name:     "no macs",
			input:    `{"interfaces": {}}`,
			macs:     map[string]string{"06:00:00:00:00:01": "eth0"},
			wantErrs: []string{`key "interfaces.macs": expected an object, got null`},
			wantNil:  true,
		},
		{
			name: "bad device-number and a NIC that is not an object",
			input: `{"interfaces": {"macs": {
				"06:00:00:00:00:01": {"device-number": "zero", "local-ipv4s": "10.0.0.5"},
				"06:00:00:00:00:02": "eth1",
				"06:00:00:00:00:03": {"device-number": "1"}}}}`,
			macs: map[string]string{"06:00:00:00:00:01": "eth0", "06:00:00:00:00:02": "eth1", "06:00:00:00:00:03": "eth2"},
			wantErrs: []string{
				`interfaces.macs.06:00:00:00:00:01: key "device-number": "zero" is not an integer`,
				`interfaces.macs.06:00:00:00:00:02: expected an object, got a string`,
			},
			wantIface: []string{"eth0", "eth2"},
		},
		{
			name: "bad prefix in the subnet block",
			input: `{"interfaces": {"macs": {"06:00:00:00:00:01": {"device-number": "0",
				"local-ipv4s": ["10.0.0.5", "10.0.0.6"], "subnet-ipv4-cidr-block": "10.0.0.0/xx"}}}}`,
			macs: map[string]string{"06:00:00:00:00:01": "eth0"},
			// cloud-init's v2 parser raises on the address; so does ours,
			// refusing the whole config.
			wantErrs: []string{`"10.0.0.6/xx": not an IP address`},
			wantNil:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := EC2([]byte(tc.input), Options{MACs: tc.macs})
			checkErrorsMention(t, err, tc.wantErrs)
			checkBadItemInterfaces(t, n, tc.wantIface, tc.wantNil)
		})
	}
}

// TestEC2DeviceNumbers checks the route metrics for the spellings of
// device-number that Python's int() accepts, and that the MACs map's
// case does not matter.
func TestEC2DeviceNumbers(t *testing.T) {
	tests := []struct {
		name         string
		deviceNumber string
		wantMetric   int64
	}{
		{"string", `"1"`, 200},
		{"spaces and plus", `" +2 "`, 300},
		{"number", `3`, 400},
		{"integral float", `1.0`, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input := `{"interfaces": {"macs": {"06:00:00:00:00:01": {"device-number": "0"},
				"06:00:00:00:00:02": {"device-number": ` + tc.deviceNumber + `}}}}`
			dec := json.NewDecoder(strings.NewReader(input))
			dec.UseNumber()
			var network map[string]any
			if err := dec.Decode(&network); err != nil {
				t.Fatal(err)
			}
			cfg, _, err := EC2NetworkConfig(network, map[string]string{"06:00:00:00:00:01": "eth0", "06:00:00:00:00:02": "ETH1"})
			if err != nil {
				t.Fatalf("EC2NetworkConfig: %v", err)
			}
			eth1, _ := cfg["ethernets"].(map[string]any)["ETH1"].(map[string]any)
			got := eth1["dhcp4-overrides"]
			if diff := cmp.Diff(map[string]any{"route-metric": tc.wantMetric}, got); diff != "" {
				t.Errorf("dhcp4-overrides (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzEC2(f *testing.F) {
	for _, fx := range readFixtures[ec2Fixture](f, "ec2") {
		f.Add([]byte(fx.Network), "06:00:00:00:00:01")
	}
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": {"device-number": "-1", "ipv6s": [1, null, {}]}}}}`), "06:00:00:00:00:01")
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": {"local-ipv4s": ["a", "b"], "subnet-ipv4-cidr-block": "/"}}}}`), "06:00:00:00:00:01")
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": []}}}`), "06:00:00:00:00:01")
	// The machine has the hostile MAC, as a --mac can say.
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01\n  up touch /tmp/pwned": {"device-number": "0"}}}}`), "06:00:00:00:00:01\n  up touch /tmp/PWNED")
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": {"local-ipv4s": ["10.0.0.5", "10.0.0.6\nDNS1=x"], "subnet-ipv4-cidr-block": "10.0.0.0/24"}}}}`), "06:00:00:00:00:01")
	f.Fuzz(func(t *testing.T, data []byte, mac string) {
		n, err := EC2(data, Options{MACs: map[string]string{mac: "eth0", "06:1d:2e:3f:4a:5b": "eth1", "0a:00:00:00:00:02": "ens6"}})
		if n == nil && err == nil {
			t.Fatal("nil network without an error")
		}
		checkParsed(t, n, err)
	})
}
