package parse

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// oracleVNICsFixture is one file of testdata/oracle: the VNIC list as the
// datasource keeps it and the machine's NICs (MAC to name). Deviation
// marks a list cloud-init stops reading at a bad VNIC (keeping those
// before it); the oracle then reads the list without the VNICs in Drop,
// which is what seedinit must configure. Errors lists what seedinit's
// error must mention.
type oracleVNICsFixture struct {
	MACs      map[string]string `json:"macs"`
	VNICs     json.RawMessage   `json:"vnics"`
	Deviation *struct {
		Drop []int `json:"drop"`
	} `json:"deviation,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// oracleVNICsOracle runs cloud-init's own DataSourceOracle.network_config
// for an instance without an iSCSI root, the VNIC list set on the
// datasource and the machine's NICs taken from the fixture. Nothing is
// fetched. It reports whether cloud-init stopped at a bad VNIC (it logs
// and keeps what it had).
const oracleVNICsOracle = `
import json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit import helpers, util
from cloudinit.sources import DataSourceOracle as oracle

stopped = []
util.logexc = lambda *a, **k: stopped.append(True)

def network_config(vnics, macs):
    oracle.get_interfaces_by_mac = lambda: dict(macs)
    oracle.is_netfail_master = lambda *a, **k: False
    paths = helpers.Paths({"run_dir": sys.argv[1], "cloud_dir": sys.argv[1]})
    ds = oracle.DataSourceOracle({}, None, paths)
    # A class attribute that network_config mutates: each datasource
    # needs its own.
    ds._network_config = {"config": [], "version": 1}
    ds._vnics_data = vnics
    ds._is_iscsi_root = lambda: False
    return ds.network_config

out = {}
for name, fixture in json.load(sys.stdin).items():
    del stopped[:]
    result = {"config": network_config(fixture["vnics"], fixture["macs"])}
    result["stopped"] = bool(stopped)
    deviation = fixture.get("deviation")
    if deviation:
        drop = set(deviation["drop"])
        vnics = [v for i, v in enumerate(fixture["vnics"]) if i not in drop]
        result["config"] = network_config(vnics, fixture["macs"])
    out[name] = result
json.dump(out, sys.stdout)
`

type oracleVNICsResult struct {
	Config  map[string]any `json:"config"`
	Stopped bool           `json:"stopped"`
}

func runOracleVNICsOracle(t *testing.T, fixtures map[string]oracleVNICsFixture) map[string]oracleVNICsResult {
	t.Helper()
	var out map[string]oracleVNICsResult
	runOracle(t, "DataSourceOracle.network_config", oracleVNICsOracle, fixtures, &out, t.TempDir())
	return out
}

// TestOracleVNICsMatchesCloudInit feeds every fixture to cloud-init
// 22.4.2's DataSourceOracle.network_config and to OracleVNICsNetworkConfig
// and compares the v1 documents, then the ENI, networkd and netplan files
// both render. Where cloud-init stops at a bad VNIC, it checks that it
// does and that seedinit configures all the good ones.
func TestOracleVNICsMatchesCloudInit(t *testing.T) {
	forEachOracleAnswer(t, "oracle", runOracleVNICsOracle, func(t *testing.T, f oracleVNICsFixture, want oracleVNICsResult) {
		if (f.Deviation != nil) != want.Stopped {
			t.Fatalf("the fixture says cloud-init stops: %v; it stopped: %v", f.Deviation != nil, want.Stopped)
		}
		got, err := OracleVNICsNetworkConfig(f.VNICs, f.MACs)
		checkErrorsMention(t, err, f.Errors)
		if diff := cmp.Diff(any(want.Config), asJSON(t, got)); diff != "" {
			t.Errorf("v1 config differs (-cloud-init +seedinit):\n%s", diff)
		}
		ours, err := OracleVNICs(f.VNICs, Options{MACs: f.MACs})
		checkErrorsMention(t, err, f.Errors)
		if ours == nil {
			t.Fatal("OracleVNICs returned no network")
		}
		theirs := parseCloudInitConfig(t, "v1", want.Config, Options{MACs: f.MACs})
		compareRenders(t, theirs, ours)
	})
}

func TestOracleVNICsRefuses(t *testing.T) {
	for input, macs := range map[string]map[string]string{
		`{"not": "a list"}`:                  {"02:00:17:05:d1:db": "ens3"},
		`[`:                                  {"02:00:17:05:d1:db": "ens3"},
		`[{"macAddr": "02:00:17:05:d1:db"}]`: nil,
	} {
		if cfg, err := OracleVNICsNetworkConfig([]byte(input), macs); cfg != nil || err == nil {
			t.Errorf("OracleVNICsNetworkConfig(%s, %v) = %v, %v; want nil and an error", input, macs, cfg, err)
		}
	}
}

func FuzzOracleVNICs(f *testing.F) {
	f.Add([]byte(`[{"macAddr": "02:00:17:05:d1:db", "subnetCidrBlock": "10.0.0.0/24"}, {"macAddr": "02:00:17:0d:6b:be", "privateIp": "10.0.4.5", "subnetCidrBlock": "10.0.4.0/24"}]`))
	f.Add([]byte(`[1, {"macAddr": 2}, {"macAddr": "02:00:17:0d:6b:be", "subnetCidrBlock": "::/0"}]`))
	// A machine MAC the fuzzer may spoil, as a --mac can.
	f.Add([]byte(`[{"macAddr": "02:00:17:05:d1:dc\n  up touch /tmp/PWNED", "subnetCidrBlock": "10.0.0.0/24"}]`))
	f.Add([]byte(`[{"macAddr": "02:00:17:05:d1:db", "subnetCidrBlock": "10.0.0.0/24"}, {"macAddr": "02:00:17:0d:6b:be", "privateIp": "10.0.4.5\n", "subnetCidrBlock": "10.0.4.0/24"}]`))
	macs := map[string]string{"02:00:17:05:d1:db": "ens3", "02:00:17:0d:6b:be": "ens5", "02:00:17:05:d1:dc\n  up touch /tmp/pwned": "ens6"}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := OracleVNICs(data, Options{MACs: macs})
		if n == nil && err == nil {
			t.Error("no network and no error")
		}
		checkParsed(t, n, err)
	})
}
