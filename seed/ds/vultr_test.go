package ds

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
)

func TestVultrFetch(t *testing.T) {
	runCloudCases(t, []cloudCase{{
		name: "instance", ds: vultrDatasource{},
		routes: map[string]route{"/v1.json": {file: "vultr/v1.json", header: "Metadata-Token", value: "cloudinit"}},
		want: &seed.Seed{
			Datasource: "Vultr", Platform: "vultr", CloudName: "vultr",
			InstanceID: "a5d3b1f2-7c9e-4f10-9a8b-0c1d2e3f4a5b", LocalHostname: "waf-vultr-01", Region: "us",
			PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIVultrFixtureKey ops@vultr"},
			UserData:   []byte("#cloud-config\nhostname: waf-vultr-01\n"),
			VendorData: []byte("#cloud-config\npackage_upgrade: false\n"),
		},
		wantNetwork: "vultr",
	}})
}

func TestVultrVendorData(t *testing.T) {
	got, err := vultrVendorData([]any{"#cloud-config\na: 1\n", map[string]any{"content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "#cloud-config-archive\n[\"#cloud-config\\na: 1\\n\",{\"content\":\"x\"}]"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("vendor-data (-want +got):\n%s", diff)
	}
	if _, err := vultrVendorData(42.0); err == nil {
		t.Error("a number as vendor-data gave no error")
	}
}

func TestVultrProbe(t *testing.T) {
	tests := []struct {
		env  *Env
		want Verdict
	}{
		{&Env{DMI: MapDMI{"sys_vendor": "Vultr"}}, Found},
		{&Env{Cmdline: "root=/dev/sda1 vultr quiet"}, Found},
		{&Env{Cmdline: "novultr"}, NotFound},
	}
	for _, tt := range tests {
		if ev, _ := (vultrDatasource{}).Probe(context.Background(), tt.env); ev.Verdict != tt.want {
			t.Errorf("Probe(%+v) = %v, want %v", tt.env, ev.Verdict, tt.want)
		}
	}
}

func FuzzVultrSeed(f *testing.F) {
	f.Add([]byte(`{"instance-v2-id":"i","hostname":"","region":{"regioncode":"EWR"},"interfaces":[],"vendor-data":["x"]}`))
	f.Add([]byte(`{"region":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		if s, err := vultrSeed(md); err == nil && (s.InstanceID == "" || s.LocalHostname == "") {
			t.Error("a seed without an instance-id or hostname")
		}
	})
}

// TestVultrNetworkKey checks that the network config keeps the key its
// list came under: cloud-init reads cloud_interfaces and interfaces
// differently, and cloud_interfaces wins when both are there.
func TestVultrNetworkKey(t *testing.T) {
	for _, tt := range []struct{ body, want, format string }{
		{`{"instance-v2-id":"i","interfaces":[{"mac":"56:00:00:00:00:01"}]}`, `{"interfaces":[{"mac":"56:00:00:00:00:01"}]}`, "vultr"},
		{`{"instance-v2-id":"i","interfaces":[],"cloud_interfaces":[{"mac":"m"}]}`, `{"cloud_interfaces":[{"mac":"m"}]}`, "vultr-cloud-interfaces"},
		{`{"instance-v2-id":"i"}`, ``, ""},
	} {
		md, err := decodeJSONObject([]byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		s, err := vultrSeed(md)
		if err != nil {
			t.Fatalf("vultrSeed(%s): %v", tt.body, err)
		}
		if got := string(s.NetworkConfig); got != tt.want {
			t.Errorf("vultrSeed(%s) network config %s, want %s", tt.body, got, tt.want)
		}
		if s.NetworkFormat != tt.format {
			t.Errorf("vultrSeed(%s) network format %q, want %q", tt.body, s.NetworkFormat, tt.format)
		}
	}
}
