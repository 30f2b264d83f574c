package parse

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// digitalOceanFixture is one file of testdata/digitalocean: the network
// metadata as the datasource keeps it and the machine's NICs (MAC to
// name). Metadata stays raw so that its key order reaches both sides.
//
// A fixture with a Deviation is one cloud-init refuses (it raises): the
// oracle checks that it does, then converts the metadata with the
// unusable items taken out, which is what seedinit must configure, and
// Errors lists what seedinit's error must mention.
type digitalOceanFixture struct {
	MACs      map[string]string    `json:"macs"`
	Metadata  json.RawMessage      `json:"metadata"`
	Deviation *digitalOceanDropped `json:"deviation,omitempty"`
	Errors    []string             `json:"errors,omitempty"`
}

type digitalOceanDropped struct {
	// DropInterfaces are "interfaces" keys whose NIC seedinit leaves out.
	DropInterfaces []string `json:"drop_interfaces,omitempty"`
	// DNSNone stands for an absent or null "dns", which seedinit reads as
	// no nameservers.
	DNSNone bool `json:"dns_none,omitempty"`
}

// digitalOceanOracle runs cloud-init's own DataSourceDigitalOcean
// .network_config on every fixture, with the machine's NICs taken from
// the fixture instead of /sys. Nothing is fetched: the metadata is set
// on the datasource directly.
const digitalOceanOracle = `
import copy, json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit import helpers
from cloudinit.sources import DataSourceDigitalOcean as do_source
from cloudinit.sources.helpers import digitalocean as do_helper

def network_config(metadata, macs):
    do_helper.cloudnet.get_interfaces_by_mac = lambda: dict(macs)
    paths = helpers.Paths({"run_dir": sys.argv[1], "cloud_dir": sys.argv[1]})
    ds = do_source.DataSourceDigitalOcean({}, None, paths)
    ds.metadata_full = metadata
    ds.metadata = metadata
    return ds.network_config

out = {}
for name, fixture in json.load(sys.stdin).items():
    result = {"raised": None, "config": None}
    try:
        result["config"] = network_config(fixture["metadata"], fixture["macs"])
    except Exception as e:
        result["raised"] = "%s: %s" % (type(e).__name__, e)
    deviation = fixture.get("deviation")
    if deviation:
        metadata = copy.deepcopy(fixture["metadata"])
        for key in deviation.get("drop_interfaces") or []:
            del metadata["interfaces"][key]
        if deviation.get("dns_none"):
            metadata["dns"] = {"nameservers": None}
        result["config"] = network_config(metadata, fixture["macs"])
    out[name] = result
json.dump(out, sys.stdout)
`

type digitalOceanOracleResult struct {
	Raised *string        `json:"raised"`
	Config map[string]any `json:"config"`
}

// runDigitalOceanOracle gives the script a scratch folder (sys.argv[1])
// for the datasource's run and cloud dirs, so that cloud-init writes
// nothing on the machine.
func runDigitalOceanOracle(t *testing.T, fixtures map[string]digitalOceanFixture) map[string]digitalOceanOracleResult {
	t.Helper()
	var out map[string]digitalOceanOracleResult
	runOracle(t, "DataSourceDigitalOcean.network_config", digitalOceanOracle, fixtures, &out, t.TempDir())
	return out
}

// checkDigitalOceanErrors fails unless err mentions each of want, or is nil when want
// is empty.
func checkDigitalOceanErrors(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if len(want) == 0 && err != nil {
		t.Errorf("%s: unexpected error: %v", what, err)
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error = %v, want it to mention %q", what, err, w)
		}
	}
}

// TestDigitalOceanMatchesCloudInit feeds every fixture to cloud-init
// 22.4.2's DataSourceDigitalOcean.network_config and to
// DigitalOceanNetworkConfig and compares the v1 documents; then it checks
// that the model DigitalOcean builds renders (ENI, networkd, netplan) as
// cloud-init's document does through the v1 parser. For a fixture
// cloud-init refuses, it checks that cloud-init does refuse it and that
// seedinit configures what cloud-init would without the unusable items.
func TestDigitalOceanMatchesCloudInit(t *testing.T) {
	forEachOracleAnswer(t, "digitalocean", runDigitalOceanOracle, func(t *testing.T, f digitalOceanFixture, want digitalOceanOracleResult) {
		switch {
		case f.Deviation != nil && want.Raised == nil:
			t.Fatal("the fixture claims cloud-init refuses this metadata, but cloud-init accepts it")
		case f.Deviation == nil && want.Raised != nil:
			t.Fatalf("cloud-init raised: %s", *want.Raised)
		}

		got, err := DigitalOceanNetworkConfig(f.Metadata, f.MACs)
		checkDigitalOceanErrors(t, "DigitalOceanNetworkConfig", err, f.Errors)
		if diff := cmp.Diff(any(want.Config), asJSON(t, got)); diff != "" {
			t.Errorf("v1 config differs (-cloud-init +seedinit):\n%s", diff)
		}

		ours, err := DigitalOcean(f.Metadata, Options{MACs: f.MACs})
		checkDigitalOceanErrors(t, "DigitalOcean", err, f.Errors)
		if ours == nil {
			t.Fatal("DigitalOcean returned no network")
		}
		theirs := parseCloudInitConfig(t, "v1", want.Config, Options{MACs: f.MACs})
		compareRenders(t, theirs, ours)
	})
}

// TestDigitalOceanNetworkConfig pins the document for DigitalOcean's own
// example metadata, so the rules are checked where the oracle is missing:
// document order, names by type, subnet order, gateways on the public
// NIC's non-anchor subnets only, IPv6 as address/cidr, nameservers last.
func TestDigitalOceanNetworkConfig(t *testing.T) {
	input := `{"interfaces": {
		"private": [{"mac": "04:01:58:27:7f:02", "type": "private",
			"ipv4": {"ip_address": "10.132.75.35", "netmask": "255.255.0.0", "gateway": "10.132.0.1"}}],
		"public": [{"mac": "04:01:58:27:7F:01", "type": "public",
			"anchor_ipv4": {"ip_address": "10.17.0.9", "netmask": "255.255.0.0", "gateway": "10.17.0.1"},
			"ipv6": {"ip_address": "2604:a880:800:a1::1337:6001", "cidr": 64, "gateway": "2604:a880:800:a1::1"},
			"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0"}}]},
		"dns": {"nameservers": ["2001:4860:4860::8844", "8.8.8.8"]}}`
	macs := map[string]string{"04:01:58:27:7f:01": "ens3", "04:01:58:27:7F:02": "ens4"}
	got, err := DigitalOceanNetworkConfig([]byte(input), macs)
	if err != nil {
		t.Fatalf("DigitalOceanNetworkConfig: %v", err)
	}
	want := map[string]any{"version": int64(1), "config": []any{
		map[string]any{"type": "physical", "mac_address": "04:01:58:27:7f:02", "name": "eth1", "subnets": []any{
			map[string]any{"type": "static", "control": "auto", "address": "10.132.75.35", "netmask": "255.255.0.0"},
		}},
		map[string]any{"type": "physical", "mac_address": "04:01:58:27:7f:01", "name": "eth0", "subnets": []any{
			map[string]any{"type": "static", "control": "auto", "address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": nil},
			map[string]any{"type": "static", "control": "auto", "address": "2604:a880:800:a1::1337:6001/64", "gateway": "2604:a880:800:a1::1"},
			map[string]any{"type": "static", "control": "auto", "address": "10.17.0.9", "netmask": "255.255.0.0"},
		}},
		map[string]any{"type": "nameserver", "address": []any{"2001:4860:4860::8844", "8.8.8.8"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("v1 config (-want +got):\n%s", diff)
	}

	n, err := DigitalOcean([]byte(input), Options{MACs: macs})
	if err != nil {
		t.Fatalf("DigitalOcean: %v", err)
	}
	var names []string
	for _, iface := range n.Interfaces {
		names = append(names, iface.Name+" "+iface.MACAddress)
	}
	if diff := cmp.Diff([]string{"eth1 04:01:58:27:7f:02", "eth0 04:01:58:27:7f:01"}, names); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"2001:4860:4860::8844", "8.8.8.8"}, n.DNS.Nameservers); diff != "" {
		t.Errorf("nameservers (-want +got):\n%s", diff)
	}
}

// TestDigitalOceanBadItems checks that metadata cloud-init cannot use is
// reported by interfaces key, index and subnet key while the usable NICs
// and subnets are still configured.
func TestDigitalOceanBadItems(t *testing.T) {
	machine := map[string]string{"04:01:58:27:7f:01": "ens3", "04:01:58:27:7f:02": "ens4", "04:01:58:27:7f:03": "ens5"}
	tests := []struct {
		name        string
		input       string
		macs        map[string]string
		wantErrs    []string
		wantIface   []string
		wantSubnets map[string]int
		wantDNS     []string
		wantNil     bool
	}{
		{
			name:     "not JSON",
			input:    `{"interfaces":`,
			macs:     machine,
			wantErrs: []string{"decode DigitalOcean network metadata"},
			wantNil:  true,
		},
		{
			name:     "not an object",
			input:    `["public"]`,
			macs:     machine,
			wantErrs: []string{"expected an object, got a list"},
			wantNil:  true,
		},
		{
			name:     "no interfaces",
			input:    `{"dns": {"nameservers": ["8.8.8.8"]}}`,
			macs:     machine,
			wantErrs: []string{`key "interfaces": missing or empty (null)`},
			wantNil:  true,
		},
		{
			name:     "interfaces is a list",
			input:    `{"interfaces": [{"mac": "04:01:58:27:7f:01"}]}`,
			macs:     machine,
			wantErrs: []string{`key "interfaces": expected an object, got a list`},
			wantNil:  true,
		},
		{
			name:     "no NIC known",
			input:    `{"interfaces": {"public": [{"mac": "04:01:58:27:7f:01", "type": "public"}]}}`,
			wantErrs: []string{"no NIC of this machine is known by MAC"},
			wantNil:  true,
		},
		{
			name: "bad NICs beside good ones",
			input: `{"interfaces": {
				"public": [{"mac": "04:01:58:27:7f:01", "type": "public",
					"ipv4": "45.55.50.93",
					"ipv6": {"cidr": 64},
					"anchor_ipv4": {"ip_address": 10, "netmask": "255.255.0.0"},
					"anchor_ipv6": {"ip_address": "fd00::5", "cidr": 64}}],
				"private": ["04:01:58:27:7f:02"],
				"floating": {"mac": "04:01:58:27:7f:03"},
				"reserved": [],
				"ghost": [{"mac": "04:01:58:27:7f:99", "type": "private"}],
				"numbered": [{"mac": 4, "type": "private"}],
				"odd": [{"mac": "04:01:58:27:7f:03", "type": ["public"],
					"ipv4": {"ip_address": "192.0.2.10", "netmask": "255.255.255.0", "gateway": "192.0.2.1"}}]},
				"dns": {"nameservers": 8}}`,
			macs: machine,
			wantErrs: []string{
				`interfaces.public[0].ipv4: expected an object, got a string`,
				`interfaces.public[0].ipv6: key "ip_address": expected a string, got null`,
				`interfaces.public[0].anchor_ipv4: key "ip_address": expected a string, got a number`,
				`interfaces.private[0]: expected an object, got a string`,
				`interfaces.floating: expected a list of NICs, got an object`,
				`interfaces.reserved: empty list`,
				`interfaces.ghost[0]: MAC 04:01:58:27:7f:99: no NIC of this machine has it`,
				`interfaces.numbered[0]: key "mac": expected a string, got a number`,
				`interfaces.odd[0]: key "type": expected a string, got a list; keeping the name ens5`,
				`key "dns.nameservers": expected a list, got a number`,
			},
			wantIface:   []string{"eth0", "ens5"},
			wantSubnets: map[string]int{"eth0": 1, "ens5": 1},
			wantDNS:     []string{},
		},
		{
			name: "IPv6 without cidr and dns of the wrong type",
			input: `{"interfaces": {"public": [{"mac": "04:01:58:27:7f:01", "type": "public",
				"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1"},
				"ipv6": {"ip_address": "2604:a880:800:a1::1337:6001", "gateway": "2604:a880:800:a1::1"}}]},
				"dns": ["8.8.8.8"]}`,
			macs: machine,
			// The address is invalid: the whole config is refused, as
			// cloud-init's v1 parser raises on it.
			wantErrs: []string{"subnets[1]", "2604:a880:800:a1::1337:6001/None", `key "dns": expected an object, got a list`},
			wantNil:  true,
		},
		{
			name: "MACs in upper case on both sides",
			input: `{"interfaces": {"public": [{"mac": "04:01:58:27:7F:0A", "type": "public",
				"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1"}}]},
				"dns": {"nameservers": "8.8.8.8"}}`,
			macs:        map[string]string{"04:01:58:27:7F:0A": "ens3"},
			wantIface:   []string{"eth0"},
			wantSubnets: map[string]int{"eth0": 1},
			wantDNS:     []string{"8.8.8.8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := DigitalOcean([]byte(tc.input), Options{MACs: tc.macs})
			checkDigitalOceanErrors(t, "DigitalOcean", err, tc.wantErrs)
			if tc.wantNil {
				if n != nil {
					t.Errorf("network = %+v, want nil", n)
				}
				return
			}
			if n == nil {
				t.Fatal("network is nil")
			}
			var names []string
			subnets := map[string]int{}
			for _, iface := range n.Interfaces {
				names = append(names, iface.Name)
				subnets[iface.Name] = len(iface.Subnets)
				if iface.MACAddress != strings.ToLower(iface.MACAddress) {
					t.Errorf("%s: MAC %s is not in lower case", iface.Name, iface.MACAddress)
				}
			}
			if diff := cmp.Diff(tc.wantIface, names); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSubnets, subnets); diff != "" {
				t.Errorf("subnets per interface (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDNS, n.DNS.Nameservers); diff != "" {
				t.Errorf("nameservers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDigitalOceanKeyOrder checks that the NICs come in the order the
// document writes the interfaces keys, a key written twice keeping its
// first place and its last value, as Python's json module does.
func TestDigitalOceanKeyOrder(t *testing.T) {
	input := `{"interfaces": {"zulu": [{"mac": "04:01:58:27:7f:03", "type": "zulu"}],
		"private": [{"mac": "04:01:58:27:7f:99"}],
		"alpha": [{"mac": "04:01:58:27:7f:01", "type": "alpha"}],
		"private": [{"mac": "04:01:58:27:7f:02", "type": "private"}]}}`
	macs := map[string]string{"04:01:58:27:7f:01": "ens3", "04:01:58:27:7f:02": "ens4", "04:01:58:27:7f:03": "ens5"}
	cfg, err := DigitalOceanNetworkConfig([]byte(input), macs)
	if err != nil {
		t.Fatalf("DigitalOceanNetworkConfig: %v", err)
	}
	var names []string
	for _, item := range cfg["config"].([]any) {
		names = append(names, item.(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"ens5", "eth1", "ens3"}, names); diff != "" {
		t.Errorf("NIC order (-want +got):\n%s", diff)
	}
}

func FuzzDigitalOcean(f *testing.F) {
	for _, fx := range readFixtures[digitalOceanFixture](f, "digitalocean") {
		f.Add([]byte(fx.Metadata), "04:01:58:27:7f:01")
	}
	f.Add([]byte(`{"interfaces": {"public": [{"mac": "04:01:58:27:7f:01", "type": "public", "ipv6": {"ip_address": ":", "cidr": [1]}}]}, "dns": {"nameservers": [{}]}}`), "04:01:58:27:7f:01")
	f.Add([]byte(`{"interfaces": {"public": [{"mac": "04:01:58:27:7f:01", "ipv4": {"ip_address": "", "netmask": 33}}], "public": null}}`), "04:01:58:27:7f:01")
	f.Add([]byte(`{"interfaces": {"a": [{"mac": "x", "type": {}}], "b": [[]]}, "dns": 0}`), "X")
	f.Add([]byte(`{"interfaces": {"public": [{"mac": "04:01:58:27:7f:01\n  up touch /tmp/PWNED", "type": "public",
		"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1"}}]}}`), "04:01:58:27:7f:01\n  up touch /tmp/PWNED")
	f.Add([]byte(`{"interfaces": {"../x": [{"mac": "04:01:58:27:7f:01", "type": "../../tmp/X",
		"ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1\nDNS1=x"}}]}, "dns": {"nameservers": ["8.8.8.8\nnameserver 6.6.6.6"]}}`), "04:01:58:27:7f:01")
	f.Fuzz(func(t *testing.T, data []byte, mac string) {
		n, err := DigitalOcean(data, Options{MACs: map[string]string{mac: "ens3", "04:01:58:27:7f:02": "ens4"}})
		if n == nil && err == nil {
			t.Fatal("nil network without an error")
		}
		checkParsed(t, n, err)
	})
}
