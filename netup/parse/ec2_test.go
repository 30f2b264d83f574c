package parse

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/render"
)

// ec2Fixture is one file of testdata/ec2: the "network" tree of EC2's
// metadata and the machine's NICs (MAC to name).
type ec2Fixture struct {
	MACs    map[string]string `json:"macs"`
	Network json.RawMessage   `json:"network"`
}

func readEC2Fixtures(t testing.TB) map[string]ec2Fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "ec2", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures under testdata/ec2 (%v)", err)
	}
	out := map[string]ec2Fixture{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f ec2Fixture
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("decode %s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = f
	}
	return out
}

// cloudInitPython returns /usr/bin/python3 when it can import cloudinit.
func cloudInitPython(t testing.TB) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("cloud-init oracle unavailable: /usr/bin/python3 not found")
	}
	if err := exec.Command(py, "-c", "import cloudinit").Run(); err != nil {
		t.Skip("cloud-init oracle unavailable: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init package)")
	}
	return py
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
	py := cloudInitPython(t)
	input, err := json.Marshal(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", ec2Oracle)
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run cloud-init's convert_ec2_metadata_network_config: %v\n%s", err, stderr.String())
	}
	var out map[string]ec2OracleResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("decode the oracle's output: %v\n%s", err, stdout.String())
	}
	return out
}

// asJSON gives a value the shape encoding/json decodes it to, so that our
// int64 and cloud-init's numbers compare equal.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEC2MatchesCloudInit feeds every fixture to cloud-init 22.4.2's
// convert_ec2_metadata_network_config and to EC2NetworkConfig and
// compares the v2 documents (and the order of their ethernets); then it
// checks that the model EC2 builds renders (ENI, networkd, netplan) as
// cloud-init's document does through the v2 parser.
func TestEC2MatchesCloudInit(t *testing.T) {
	fixtures := readEC2Fixtures(t)
	if len(fixtures) < 8 {
		t.Fatalf("%d fixtures, want at least 8", len(fixtures))
	}
	oracle := runEC2Oracle(t, fixtures)
	for name, f := range fixtures {
		t.Run(name, func(t *testing.T) {
			want, ok := oracle[name]
			if !ok {
				t.Fatal("no answer from the oracle")
			}
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
			theirsDoc, err := json.Marshal(want.Config)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := YAML(theirsDoc, Options{MACs: f.MACs})
			if err != nil {
				t.Fatalf("parse cloud-init's v2 config: %v", err)
			}
			if diff := cmp.Diff(render.ENIContent(theirs), render.ENIContent(ours)); diff != "" {
				t.Errorf("ENI differs (-cloud-init's config +seedinit's):\n%s", diff)
			}
			for kind, fn := range map[string]func(*model.Network) (render.Files, error){"networkd": render.Networkd, "netplan": render.Netplan} {
				w, werr := fn(theirs)
				g, gerr := fn(ours)
				if werr != nil || gerr != nil {
					t.Fatalf("render %s: cloud-init's config: %v, ours: %v", kind, werr, gerr)
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s differs (-cloud-init's config +seedinit's):\n%s", kind, diff)
				}
			}
		})
	}
}

var cmpEmptyEqual = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Comparer(func(_, _ []string) bool { return true }))

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
			macs:      map[string]string{"06:00:00:00:00:01": "eth0"},
			wantErrs:  []string{"10.0.0.6/xx"},
			wantIface: []string{"eth0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := EC2([]byte(tc.input), Options{MACs: tc.macs})
			for _, want := range tc.wantErrs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v, want it to mention %q", err, want)
				}
			}
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
			for _, iface := range n.Interfaces {
				names = append(names, iface.Name)
			}
			if diff := cmp.Diff(tc.wantIface, names); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
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
	for _, fx := range readEC2Fixtures(f) {
		f.Add([]byte(fx.Network), "06:00:00:00:00:01")
	}
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": {"device-number": "-1", "ipv6s": [1, null, {}]}}}}`), "06:00:00:00:00:01")
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": {"local-ipv4s": ["a", "b"], "subnet-ipv4-cidr-block": "/"}}}}`), "06:00:00:00:00:01")
	f.Add([]byte(`{"interfaces": {"macs": {"06:00:00:00:00:01": []}}}`), "06:00:00:00:00:01")
	f.Fuzz(func(t *testing.T, data []byte, mac string) {
		n, err := EC2(data, Options{MACs: map[string]string{mac: "eth0", "06:1d:2e:3f:4a:5b": "eth1", "0a:00:00:00:00:02": "ens6"}})
		if n == nil && err == nil {
			t.Fatal("nil network without an error")
		}
		if n != nil {
			render.ENIContent(n)
			if _, err := render.Netplan(n); err != nil {
				t.Logf("render netplan: %v", err)
			}
		}
	})
}
