package server

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

// The oracle is Debian's cloud-init: its own readers, run against the
// loopback server, must read what seedinit serves as seedinit does.

func cloudInitPython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skipf(t, "cloud-init is not importable by %s (install Debian's cloud-init package): %v", python, err)
	}
	return python
}

// runOracle runs script with args and decodes the JSON it prints. Any
// URL cloud-init would reach beyond 127.0.0.1 goes to a proxy that is
// not there: the oracle talks to the loopback server and nothing else.
func runOracle(t *testing.T, script string, args ...string) map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cloudInitPython(t), append([]string{"-c", script}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9",
		"no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1"}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cloud-init oracle: %v\n%s", err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("cloud-init oracle printed %q: %v", stdout.String(), err)
	}
	return out
}

// jsonOf is v as JSON decodes it, for comparing with what Python
// printed.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

const noCloudOracle = `
import json, sys
from cloudinit import util
md, ud, vd = util.read_seeded(sys.argv[1], timeout=5, retries=0)
print(json.dumps({"md": md, "ud": ud.decode(), "vd": vd.decode() if vd is not None else None}))
`

// cloud-init's NoCloud seedfrom reader (util.read_seeded, what
// DataSourceNoCloud calls) reads an instance's seed by UUID as the
// inventory means it: meta-data is the same mapping, user-data and
// vendor-data the same bytes. (cloud-init 23.1 fills
// __dmi.system-uuid__ itself; Debian's 22.4 is given the URL filled.)
func TestNoCloudOracle(t *testing.T) {
	f := start(t, signing)
	inst, _, _ := f.srv.Inventory().Lookup(uuid1)
	got := runOracle(t, noCloudOracle, f.url+"/nocloud/"+uuid1+"/")
	want := map[string]any{"md": jsonOf(t, inst.MetaData), "ud": string(inst.UserData), "vd": string(inst.VendorData)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cloud-init read (-inventory +cloud-init):\n%s", d)
	}
}

const openStackOracle = `
import json, sys
from cloudinit.sources.helpers import ec2 as ec2_utils
from cloudinit.sources.helpers import openstack
base, mac = sys.argv[1], sys.argv[2]
# read_v2 also reads the EC2 tree, from 169.254.169.254 by default: here
# it is the same loopback server's.
openstack.MetadataReader._read_ec2_metadata = lambda self: ec2_utils.get_instance_metadata(
    metadata_address=base, timeout=5, retries=0)
r = openstack.MetadataReader(base, timeout=5, retries=0).read_v2()
from cloudinit import sources
print(json.dumps({
    "version": r["version"],
    "uuid": r["metadata"]["uuid"],
    "hostname": r["metadata"].get("hostname"),
    "availability_zone": r["metadata"].get("availability_zone"),
    "public_keys": r["metadata"].get("public_keys"),
    "userdata": r["userdata"].decode(),
    "vendordata": sources.convert_vendordata(r["vendordata"]),
    "ec2_instance_id": r["ec2-metadata"].get("instance-id"),
    "ec2_keys": r["ec2-metadata"].get("public-keys"),
    "net": [[c["type"], c.get("mac_address"), c.get("name"), [sn["type"] for sn in c.get("subnets", [])]]
            for c in openstack.convert_net_json(r["networkdata"], known_macs={mac: "mgmt"})["config"]],
}))
`

// cloud-init's OpenStack metadata reader (read_v2, what
// DataSourceOpenStack calls), asking from 127.0.0.1 (an address selector
// here), reads the instance's meta_data.json, user_data and
// vendor_data.json, network_data.json, and the EC2 tree beside them (IMDSv1, as cloud-init's
// OpenStack source asks).
func TestOpenStackOracle(t *testing.T) {
	f := start(t, Config{IMDSv1: true}, map[string]string{"instances/waf-009.yaml": `instance: waf-009
groups: [waf]
selectors: {mac: 52:54:00:00:00:09, address: 127.0.0.1}
`})
	inst, _ := f.srv.Inventory().Instance("waf-009")
	got := runOracle(t, openStackOracle, f.url, "52:54:00:00:00:09")
	key := publicKeys(inst.MetaData)[0]
	want := map[string]any{
		"version":           float64(2),
		"uuid":              "waf-009",
		"hostname":          "waf-009",
		"availability_zone": "lab-1a",
		"public_keys":       map[string]any{"key-0": key},
		"userdata":          string(inst.UserData),
		"vendordata":        string(inst.VendorData),
		"ec2_instance_id":   "waf-009",
		"ec2_keys":          map[string]any{"key-0": key},
		// network_data.json made from the v2 config: the NIC by its MAC,
		// with DHCP, as convert_net_json reads it.
		"net": []any{[]any{"physical", "52:54:00:00:00:09", "mgmt", []any{"dhcp4"}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cloud-init read (-want +cloud-init):\n%s", d)
	}
}

const ec2Oracle = `
import json, sys
from cloudinit import url_helper
from cloudinit.sources.helpers import ec2
base, version = sys.argv[1], "2021-03-23"
tok = url_helper.readurl(base + "/latest/api/token", request_method="PUT",
    headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"}, timeout=5, retries=0).contents.decode()
hdr = lambda url: {"X-aws-ec2-metadata-token": tok}
md = ec2.get_instance_metadata(version, base, headers_cb=hdr, timeout=5, retries=0)
ud = ec2.get_instance_userdata(version, base, headers_cb=hdr, timeout=5, retries=0)
ident = ec2.get_instance_identity(version, base, headers_cb=hdr, timeout=5, retries=0)
# Without the token, nothing: cloud-init's IMDSv1 read gets an empty
# user-data (it swallows the 401).
ud_v1 = "refused" if not ec2.get_instance_userdata(version, base, timeout=5, retries=0) else "answered"
print(json.dumps({"md": md, "ud": ud.decode(), "identity": ident["document"], "imdsv1": ud_v1}))
`

// cloud-init's EC2 helpers, with the IMDSv2 token its Ec2 source asks
// for, crawl the meta-data tree, user-data and identity document of the
// instance asking from 127.0.0.1; without a token they get nothing.
func TestEC2Oracle(t *testing.T) {
	f := start(t, Config{}, map[string]string{"instances/waf-009.yaml": `instance: waf-009
groups: [waf]
selectors: {mac: 52:54:00:00:00:09, address: 127.0.0.1}
meta-data: {region: lab-1}
`})
	inst, _ := f.srv.Inventory().Instance("waf-009")
	got := runOracle(t, ec2Oracle, f.url)
	key := publicKeys(inst.MetaData)[0]
	want := map[string]any{
		"md": map[string]any{
			"instance-id": "waf-009", "local-hostname": "waf-009", "hostname": "waf-009",
			"local-ipv4": "127.0.0.1", "mac": "52:54:00:00:00:09",
			"placement":   map[string]any{"availability-zone": "lab-1a", "region": "lab-1"},
			"public-keys": map[string]any{"key-0": key},
			"network": map[string]any{"interfaces": map[string]any{"macs": map[string]any{
				"52:54:00:00:00:09": map[string]any{"mac": "52:54:00:00:00:09", "device-number": "0"},
			}}},
		},
		"ud": string(inst.UserData),
		"identity": map[string]any{"instanceId": "waf-009", "availabilityZone": "lab-1a", "region": "lab-1",
			"privateIp": "127.0.0.1", "version": "2017-09-30"},
		"imdsv1": "refused",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cloud-init read (-want +cloud-init):\n%s", d)
	}
}
