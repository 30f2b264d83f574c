package ds

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/seed/vmware"
	"github.com/seedinit/seedinit/seed/vmware/vmwaretest"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// onVMware puts the VMware seams on an emulated VMX behind a CPU that
// says VMware, the gate itself unchanged, until t ends; it returns the
// VMX.
func onVMware(t *testing.T, guestinfo map[string]string) *vmwaretest.Hypervisor {
	t.Helper()
	h := vmwaretest.New(guestinfo)
	t.Cleanup(EmulateVMwareForTest(h))
	return h
}

// The guestinfo cases, each a VMX's keys.
func vmwareCases(t *testing.T) map[string]map[string]string {
	md := "instance-id: iid-vm-01\nlocal-hostname: fgt-vm-01\npublic-keys-data: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIVmw admin\n"
	net := "version: 2\nethernets:\n  nics:\n    match: {name: ens*}\n    dhcp4: true\n"
	ud := "#cloud-config\nhostname: from-user-data\n"
	return map[string]map[string]string{
		"plain":                 {"metadata": md, "userdata": ud},
		"base64":                {"metadata": dstest.B64(md), "metadata.encoding": "base64", "userdata": dstest.B64(ud), "userdata.encoding": "b64"},
		"gzip+base64":           {"metadata": dstest.GzB64(md), "metadata.encoding": "gzip+base64", "userdata": dstest.GzB64(ud), "userdata.encoding": "gz+b64", "vendordata": dstest.GzB64("#cloud-config\nvendor: 1\n"), "vendordata.encoding": "gzip+base64"},
		"gzip+base64, not gzip": {"metadata": dstest.B64(md), "metadata.encoding": "gzip+base64"},
		"json metadata":         {"metadata": `{"instance-id": "iid-json", "local-hostname": "j", "public_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJson k"]}`},
		"no instance-id":        {"metadata": "local-hostname: no-id\n", "userdata": ud},
		"redacted user-data":    {"metadata": md, "userdata": "---", "userdata.encoding": ""},
		"user-data only":        {"userdata": ud},
		"network mapping":       {"metadata": "instance-id: i\nnetwork:\n  version: 2\n  ethernets: {ens192: {dhcp4: true}}\n"},
		"network encoded":       {"metadata": "instance-id: i\nnetwork: " + dstest.B64(net) + "\nnetwork.encoding: base64\n"},
		"network gzip'd":        {"metadata": "instance-id: i\nnetwork: " + dstest.GzB64("network:\n"+indent(net)) + "\nnetwork.encoding: gzip+base64\n"},
		"unknown encoding":      {"metadata": md, "userdata": "#cloud-config\n", "userdata.encoding": "rot13"},
		"trailing spaces":       {"metadata": md + "   \n\n", "userdata": ud + "\n\n"},
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

// cloud-init's DataSourceVMware as the oracle, its vmware-rpctool replaced
// by the same keys: the same metadata (its network processed), user-data,
// vendor-data, instance-id (the system UUID when the metadata has none),
// public keys and network config.
func TestVMwareGuestinfoOracle(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceVMware").Run(); err != nil {
		t.Skip("cloud-init oracle unavailable: cannot import cloudinit.sources.DataSourceVMware (install Debian's cloud-init package)")
	}
	dir := t.TempDir()
	uuidFile := filepath.Join(dir, "product_uuid")
	os.WriteFile(uuidFile, []byte(dstest.VMwareDMI()["product_uuid"]+"\n"), 0o644)
	script := `
import base64, json, sys, logging
logging.disable(logging.CRITICAL)
from cloudinit.sources import DataSourceVMware as vm
from cloudinit import dmi, distros, helpers
keys = json.load(sys.stdin)
vm.guestinfo_get_value = lambda key, tool=None: vm.handle_returned_guestinfo_val(key, keys.get(key, ""))
vm.PRODUCT_UUID_FILE_PATH = sys.argv[1]
dmi.read_dmi_data = lambda k: "VMware7,1"
vm.guestinfo_redact_keys = lambda k, t=None: None
paths = helpers.Paths({"run_dir": sys.argv[2], "cloud_dir": sys.argv[2]})
ds = vm.DataSourceVMware({}, distros.fetch("debian")("debian", {}, paths), paths)
ds.vmware_rpctool = "vmware-rpctool"
if not ds._get_data():
    print(json.dumps({"found": False})); sys.exit()
md = ds.metadata
net = md.get("network", {}).get("config")
md.pop("network", None)
b = lambda v: None if v is None else base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode()
print(json.dumps({"found": True, "md": md, "ud": b(ds.userdata_raw), "vd": b(ds.vendordata_raw),
                  "id": ds.get_instance_id(), "keys": ds.get_public_ssh_keys(), "net": net}, default=str))
`
	type answer struct {
		Found bool           `json:"found"`
		MD    map[string]any `json:"md"`
		UD    *string        `json:"ud"`
		VD    *string        `json:"vd"`
		ID    string         `json:"id"`
		Keys  []string       `json:"keys"`
		Net   any            `json:"net"`
	}
	cases := vmwareCases(t)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			keys := cases[name]
			in, _ := json.Marshal(keys)
			cmd := exec.Command(py, "-c", script, uuidFile, t.TempDir())
			cmd.Stdin = bytes.NewReader(in)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("cloud-init: %v", err)
			}
			var want answer
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			onVMware(t, keys)
			env := newTestEnv(t, nil, dstest.VMwareDMI(), "")
			s, err := vmwareDatasource{}.Fetch(context.Background(), env)
			if !want.Found {
				if err == nil {
					t.Fatalf("cloud-init finds nothing; seedinit %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			enc := func(b []byte) *string {
				if b == nil {
					return nil
				}
				s := base64.StdEncoding.EncodeToString(b)
				return &s
			}
			md := map[string]any{}
			for k, v := range s.Metadata {
				if k != "network" && k != "network.encoding" {
					md[k] = v
				}
			}
			var net any
			if s.NetworkConfig != nil {
				json.Unmarshal(s.NetworkConfig, &net)
			}
			keysGot := s.PublicKeys
			if keysGot == nil {
				keysGot = []string{}
			}
			if want.Keys == nil {
				want.Keys = []string{}
			}
			got := answer{Found: true, MD: jsonRound(md), UD: enc(s.UserData), VD: enc(s.VendorData), ID: s.InstanceID, Keys: keysGot, Net: net}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func jsonRound(v any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// Found by its probe on VMware (the gate open), with detect's evidence;
// the seed as a VMX's guestinfo gives it.
func TestVMwareGuestinfo(t *testing.T) {
	keys := vmwareCases(t)["gzip+base64"]
	keys["metadata"] = dstest.GzB64("instance-id: iid-vm-01\nlocal-hostname: fgt-vm-01\nnetwork:\n  version: 2\n  ethernets: {ens192: {addresses: [10.1.2.3/24]}}\n")
	h := onVMware(t, keys)
	env := newTestEnv(t, nil, dstest.VMwareDMI(), "")
	ev, err := vmwareDatasource{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != Found || ev.Reason != "guestinfo.metadata in VMware's guestinfo (backdoor RPC)" {
		t.Fatalf("Probe = %+v, %v", ev, err)
	}
	s, err := vmwareDatasource{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "iid-vm-01" || s.LocalHostname != "fgt-vm-01" || string(s.UserData) != "#cloud-config\nhostname: from-user-data\n" ||
		string(s.VendorData) != "#cloud-config\nvendor: 1\n" || s.NetworkFormat != "v2" || !strings.Contains(string(s.NetworkConfig), "10.1.2.3/24") ||
		s.Subplatform != "guestinfo (guestinfo.metadata)" || s.Datasource != "VMware" {
		t.Errorf("seed %+v", s)
	}
	if h.Open() != 0 {
		t.Errorf("%d channels left open", h.Open())
	}
	// No guestinfo: not found.
	onVMware(t, map[string]string{"other": "x"})
	if ev, _ := (vmwareDatasource{}).Probe(context.Background(), env); ev.Verdict != NotFound || !strings.Contains(ev.Reason, "no guestinfo.metadata") {
		t.Errorf("Probe without keys = %+v", ev)
	}
}

// The gate on this machine, through the datasource's own seams (CPUID
// read here, the real port): even with firmware that says VMware, a CPU
// that does not keeps the backdoor shut, and neither the VMware nor the
// OVF source touches the port (it would fault, and end this process as
// it would end PID 1).
func TestVMwareGateShutOnThisMachine(t *testing.T) {
	if vmware.Gate(vmware.ReadCPU(), vmware.DMI{SysVendor: "VMware, Inc.", ProductName: "VMware7,1"}) == nil {
		t.Skip("this machine's CPU says VMware")
	}
	env := newTestEnv(t, nil, dstest.VMwareDMI(), "")
	ev, err := vmwareDatasource{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != NotFound || !strings.Contains(ev.Reason, "VMware backdoor left shut: CPUID") {
		t.Errorf("Probe = %+v, %v", ev, err)
	}
	t.Logf("detect says: %s", ev.Reason)
	if _, err := (vmwareDatasource{}).Fetch(context.Background(), env); err == nil || !strings.Contains(err.Error(), "stays shut") {
		t.Errorf("Fetch = %v", err)
	}
	if raw := guestinfoOvfEnv(env); raw != nil {
		t.Errorf("guestinfo.ovfEnv read: %q", raw)
	}
	if ev, err := (ovfDatasource{}).Probe(context.Background(), env); err != nil || ev.Verdict != NotFound {
		t.Errorf("OVF Probe = %+v, %v", ev, err)
	}
}

// A signed guestinfo seed: the manifest and its signature in
// guestinfo.seedinit.seed-manifest(.sig), base64, over the decoded
// metadata, user-data and vendor-data. Under require the signed seed is
// applied; unsigned, or with a key an attacker added (vendordata), that
// part is not.
func TestVMwareSigned(t *testing.T) {
	priv, keys := signingKey(t)
	md := "instance-id: iid-signed\nlocal-hostname: signed\n"
	ud := "#cloud-config\nruncmd: [true]\n"
	m, sig := signedManifest(t, priv, map[string]string{"meta-data": md, "user-data": ud})
	signed := map[string]string{"metadata": dstest.GzB64(md), "metadata.encoding": "gzip+base64", "userdata": dstest.B64(ud), "userdata.encoding": "base64",
		GuestinfoManifestKey: dstest.B64(m), GuestinfoManifestSignatureKey: dstest.B64(sig)}
	decide := func(t *testing.T, keys0 map[string]string) (*seed.Seed, *trust.Decision) {
		onVMware(t, keys0)
		s, err := vmwareDatasource{}.Fetch(context.Background(), newTestEnv(t, nil, dstest.VMwareDMI(), ""))
		if err != nil {
			t.Fatal(err)
		}
		return trust.Decide(s, trust.Anchor{Policy: trust.Require, Keys: keys}, trust.Facts{Now: time.Now()})
	}
	if s, d := decide(t, signed); d.Refused() || s.LocalHostname != "signed" || string(s.UserData) != ud {
		t.Errorf("signed: %+v %+v", s, d.Parts)
	}
	unsigned := map[string]string{"metadata": md, "userdata": ud}
	if s, d := decide(t, unsigned); !d.Refused() || s.UserData != nil || s.LocalHostname != "" {
		t.Errorf("unsigned: %+v %+v", s, d.Parts)
	}
	added := map[string]string{"vendordata": "#cloud-config\nruncmd: [evil]\n"}
	for k, v := range signed {
		added[k] = v
	}
	if s, d := decide(t, added); s.VendorData != nil || !d.Refused() {
		t.Errorf("an attacker's vendordata: %+v %+v", s, d.Parts)
	}
}

// redact (cleanup-guestinfo): once the stages are over the keys that held
// secrets are cleared in the VMX, as cloud-init clears them.
func TestVMwareRedact(t *testing.T) {
	h := onVMware(t, map[string]string{"metadata": "instance-id: i\nredact: [userdata, vendordata]\n", "userdata": "#cloud-config\npassword: s3cret\n", "userdata.encoding": "", "vendordata": "x"})
	env := newTestEnv(t, nil, dstest.VMwareDMI(), "")
	s, err := vmwareDatasource{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := ReadyReporterFor(s)
	if !ok {
		t.Fatal("VMware has no after-the-stages step")
	}
	if err := r.ReportReady(context.Background(), env, s); err != nil {
		t.Fatal(err)
	}
	if h.GuestInfo["userdata"] != "---" || h.GuestInfo["vendordata"] != "---" || h.GuestInfo["userdata.encoding"] != " " || h.GuestInfo["metadata"] == "---" {
		t.Errorf("guestinfo after redact: %q", h.GuestInfo)
	}
	// A seed without redact asks nothing of the VMX.
	calls := h.Calls
	if err := r.ReportReady(context.Background(), env, &seed.Seed{Datasource: "VMware", Metadata: map[string]any{"instance-id": "i"}}); err != nil || h.Calls != calls {
		t.Errorf("no redact: %v, %d calls", err, h.Calls-calls)
	}
}

// vSphere's "VMware Tools" OVF transport: the environment in
// guestinfo.ovfEnv, before any CD-ROM, as cloud-init reads it.
func TestOVFFromGuestinfo(t *testing.T) {
	onVMware(t, map[string]string{"ovfEnv": dstest.OVFEnv([2]string{"instance-id", "iid-ovfenv"}, [2]string{"hostname", "from-guestinfo"})})
	env := newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "OVF ENV", map[string]string{"ovf-env.xml": dstest.OVFEnv([2]string{"instance-id", "iid-iso"})}, "-J", "-r")}, dstest.VMwareDMI(), "")
	ev, err := ovfDatasource{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != Found || !strings.Contains(ev.Reason, "com.vmware.guestInfo") {
		t.Fatalf("Probe = %+v, %v", ev, err)
	}
	s, err := ovfDatasource{}.Fetch(context.Background(), env)
	if err != nil || s.InstanceID != "iid-ovfenv" || s.LocalHostname != "from-guestinfo" || s.Subplatform != "ovf (com.vmware.guestInfo)" {
		t.Errorf("Fetch = %+v, %v", s, err)
	}
}

func FuzzVMwareMeta(f *testing.F) {
	f.Add([]byte("instance-id: i\nnetwork: " + dstest.B64("version: 2\n") + "\nnetwork.encoding: base64\n"))
	f.Add([]byte(`{"instance-id": "i", "network": {"version": 1, "config": []}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := vmwareMeta(raw, "4223a1b2-c3d4-e5f6-0718-293a4b5c6d7e")
		if err != nil {
			return
		}
		if m.InstanceID == "" {
			t.Fatal("a meta-data read without an instance-id")
		}
		if m.NetworkConfig != nil {
			if _, err := yaml11.Load(m.NetworkConfig); err != nil {
				t.Fatalf("network config %q does not read: %v", m.NetworkConfig, err)
			}
		}
		_ = slices.Clone(m.PublicKeys)
	})
}
