package export

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
	"github.com/seedinit/seedinit/seed/ds"
)

// oracleScript reads a seed tree with cloud-init's own readers:
// read_config_drive for a config drive, NoCloud's pathprefix2dict for
// cidata; and prints what an instance would be given.
const oracleScript = `
import json, sys
from cloudinit import util
from cloudinit.sources import normalize_pubkey_data
kind, d = sys.argv[1], sys.argv[2]
def text(v):
    return v.decode() if isinstance(v, bytes) else v
if kind == "configdrive":
    from cloudinit.sources import DataSourceConfigDrive as cd
    from cloudinit.sources.helpers import openstack
    r = cd.read_config_drive(d)
    md = r["metadata"]
    out = {
        "instance-id": md.get("instance-id"),
        "local-hostname": md.get("local-hostname"),
        "public-keys": sorted(normalize_pubkey_data(md.get("public_keys"))),
        "user-data": text(r.get("userdata")),
        "network": openstack.convert_net_json(r.get("networkdata"), known_macs={}),
    }
else:
    s = util.pathprefix2dict(d, required=["user-data", "meta-data"], optional=["vendor-data", "network-config"])
    md = util.load_yaml(s["meta-data"])
    out = {
        "instance-id": md.get("instance-id"),
        "local-hostname": md.get("local-hostname"),
        "public-keys": sorted(normalize_pubkey_data(md.get("public-keys"))),
        "user-data": text(s["user-data"]),
        "vendor-data": text(s.get("vendor-data")),
        "network": util.load_yaml(s["network-config"]),
    }
print(json.dumps(out, sort_keys=True))
`

func cloudInitPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceConfigDrive").Run(); err != nil {
		testenv.Skipf(t, "cloud-init is not importable by %s (apt-get install cloud-init): %v", py, err)
	}
	return py
}

// extractImage copies an image's files into a folder with seedinit's own
// reader, for cloud-init to read as it reads a mounted disk.
func extractImage(t *testing.T, img string) string {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	fsys, err := ds.OpenImage(f, st.Size())
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	entries, err := fsys.Tree("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		if e.Dir {
			os.MkdirAll(p, 0o755)
			continue
		}
		b, err := e.Read()
		if err != nil {
			t.Fatalf("read %s of %s: %v", e.Path, img, err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// cloud-init reads each exported image as the instance's parts: the same
// identity, keys, user-data and, for a config drive, the network that
// convert_net_json makes of network_data.json, the inventory's own.
func TestCloudInitReadsExport(t *testing.T) {
	py := cloudInitPython(t)
	inv := loadFleet(t, fleet)
	for _, inst := range inv.Instances {
		inst.VendorData = nil // vendor_data.json is cloud-init's to convert; not what is compared here
	}
	for _, format := range []Format{ISO, VFAT, ConfigDrive} {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Export(context.Background(), inv, dir, Options{Format: format}); err != nil {
				t.Fatal(err)
			}
			inst := inv.Instances[0]
			tree := extractImage(t, filepath.Join(dir, format.FileName(inst.Name)))
			kind := "nocloud"
			if format == ConfigDrive {
				kind = "configdrive"
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(py, "-c", oracleScript, kind, tree)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("cloud-init: %v\n%s", err, stderr.Bytes())
			}
			var got map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("cloud-init printed %q: %v", stdout.Bytes(), err)
			}
			if got["instance-id"] != inst.InstanceID || got["local-hostname"] != inst.Hostname || got["user-data"] != string(inst.UserData) {
				t.Errorf("cloud-init read %v", got)
			}
			if diff := cmp.Diff([]any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGroupKey ops"}, got["public-keys"]); diff != "" {
				t.Errorf("public keys (-want +got):\n%s", diff)
			}
			if format != ConfigDrive {
				var want any
				json.Unmarshal(mustJSON(t, inst.NetworkDoc), &want)
				if diff := cmp.Diff(want, got["network"]); diff != "" {
					t.Errorf("network-config (-want +got):\n%s", diff)
				}
				return
			}
			// cloud-init's v1 from network_data.json: the one NIC named
			// mgmt with its MAC, its static address and gateway.
			net, _ := json.Marshal(got["network"])
			for _, want := range []string{`"name":"mgmt"`, `"mac_address":"52:54:00:00:00:07"`, `"address":"10.20.0.7"`, `"gateway":"10.20.0.1"`} {
				if !bytes.Contains(net, []byte(want)) {
					t.Errorf("cloud-init's network lacks %s: %s", want, net)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eniScript renders a network config as cloud-init renders ENI: from
// network_data.json through convert_net_json, or from v1/v2 YAML.
const eniScript = `
import json, sys
from cloudinit import util
from cloudinit.net import network_state, eni
from cloudinit.sources.helpers import openstack
kind, data = sys.argv[1], sys.argv[2]
if kind == "network_data.json":
    cfg = openstack.convert_net_json(json.loads(data), known_macs={})
else:
    cfg = util.load_yaml(data)
print(eni.Renderer({})._render_interfaces(network_state.parse_net_config_data(cfg)))
`

// cloud-init makes the same network of the network_data.json an export
// writes as of the network config it was converted from.
func TestCloudInitNetworkDataJSON(t *testing.T) {
	py := cloudInitPython(t)
	render := func(kind, data string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(py, "-c", eniScript, kind, data)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("cloud-init on %s %q: %v\n%s", kind, data, err, stderr.Bytes())
		}
		return sameBondSpelling(stdout.String())
	}
	for name, config := range networkShapes {
		t.Run(name, func(t *testing.T) {
			b, err := networkDataJSON([]byte(config))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := render("network_data.json", string(b)), render("yaml", config); got != want {
				t.Errorf("cloud-init renders network_data.json %s as\n%s\nand the config as\n%s", b, got, want)
			}
		})
	}
}
