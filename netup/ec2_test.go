package netup

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEC2ConvertMatchesCloudInit takes each EC2 fixture of
// parse/testdata/ec2 through cloud-init 22.4.2 the way its EC2 datasource
// does (convert_ec2_metadata_network_config, then the renderer that
// net-convert uses) and through Convert with KindEC2, and compares the
// rendered files semantically.
func TestEC2ConvertMatchesCloudInit(t *testing.T) {
	bin := cloudInit(t)
	paths, err := filepath.Glob(filepath.Join("parse", "testdata", "ec2", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures under parse/testdata/ec2 (%v)", err)
	}
	for _, p := range paths {
		var fixture struct {
			MACs    map[string]string `json:"macs"`
			Network json.RawMessage   `json:"network"`
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &fixture); err != nil {
			t.Fatalf("decode %s: %v", p, err)
		}
		var macs []MAC
		for addr, name := range fixture.MACs {
			macs = append(macs, MAC{Name: name, Address: addr})
		}
		sort.Slice(macs, func(i, j int) bool { return macs[i].Address < macs[j].Address })
		v2 := ec2ToV2WithCloudInit(t, data)
		for _, out := range diffOutputs {
			t.Run(strings.TrimSuffix(filepath.Base(p), ".json")+"/"+out, func(t *testing.T) {
				want := netConvertFile(t, bin, v2, out, macs)
				got, err := Convert(fixture.Network, KindEC2, out, macs)
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}
				if diff := cmp.Diff(sortedPaths(want), sortedPaths(got)); diff != "" {
					t.Errorf("file sets differ (-cloud-init +seedinit):\n%s", diff)
				}
				for path, wantData := range want {
					gotData, ok := got[path]
					if !ok {
						continue
					}
					w, g := normalize(t, out, path, wantData), normalize(t, out, path, gotData)
					if diff := cmp.Diff(w, g); diff != "" {
						t.Errorf("%s differs (-cloud-init +seedinit):\n%s\ncloud-init wrote:\n%s\nseedinit wrote:\n%s", path, diff, wantData, gotData)
					}
				}
			})
		}
	}
}

// ec2ToV2WithCloudInit returns, as a file, the network config cloud-init's
// EC2 datasource makes of a fixture ({"macs": ..., "network": ...}).
func ec2ToV2WithCloudInit(t *testing.T, fixture []byte) string {
	t.Helper()
	const script = `
import json, logging, sys
logging.disable(logging.CRITICAL)
from cloudinit.sources.DataSourceEc2 import convert_ec2_metadata_network_config
fixture = json.load(sys.stdin)
json.dump({"network": convert_ec2_metadata_network_config(fixture["network"], macs_to_nics=fixture["macs"])}, sys.stdout)
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", script)
	cmd.Stdin = bytes.NewReader(fixture)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	v2, err := cmd.Output()
	if err != nil {
		t.Fatalf("run convert_ec2_metadata_network_config: %v\n%s", err, stderr.String())
	}
	file := filepath.Join(t.TempDir(), "network-config.json")
	if err := os.WriteFile(file, v2, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// netConvertFile runs `cloud-init devel net-convert -k yaml` on a file
// outside testdata/convert and returns the files it wrote.
func netConvertFile(t *testing.T, bin, input, out string, macs []MAC) map[string][]byte {
	t.Helper()
	rel, err := filepath.Rel(filepath.Join(mustGetwd(t), "testdata", "convert"), input)
	if err != nil {
		t.Fatal(err)
	}
	return netConvert(t, bin, convertCase{file: rel, kind: KindYAML, macs: macs}, out)
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
