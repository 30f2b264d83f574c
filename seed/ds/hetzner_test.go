package ds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
)

func TestHetznerFetch(t *testing.T) {
	routes := map[string]route{
		"/hetzner/v1/metadata": {file: "hetzner/metadata.yaml"},
		"/hetzner/v1/userdata": {file: "hetzner/userdata"},
	}
	base := func(u string) string { return u + "/hetzner/v1" }
	want := &seed.Seed{
		Datasource: "Hetzner", Platform: "hetzner", CloudName: "hetzner",
		InstanceID: "42424242", LocalHostname: "waf-hc-01",
		Region: "eu-central", AvailabilityZone: "fsn1-dc14",
		PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHetznerFixtureKey ops@hetzner"},
		UserData:   []byte("#cloud-config\nhostname: waf-hc-01\n"),
		VendorData: []byte("#cloud-config\npackage_update: false\n"),
	}
	runCloudCases(t, []cloudCase{
		{name: "server, --url at the server root", ds: hetznerDatasource{}, routes: routes,
			dmi: MapDMI{"sys_vendor": "Hetzner", "product_serial": "42424242"}, want: want, wantNetwork: "v1"},
		{name: "another server's metadata", ds: hetznerDatasource{}, routes: routes, endpoint: base,
			dmi: MapDMI{"product_serial": "1"}, wantErr: "does not match the SMBIOS serial"},
		{name: "no user-data route", ds: hetznerDatasource{}, endpoint: base,
			routes: map[string]route{"/hetzner/v1/metadata": {file: "hetzner/metadata.yaml"}}, wantErr: "user-data"},
	})
}

func TestMaybeBase64(t *testing.T) {
	for in, want := range map[string]string{
		"I2Nsb3VkLWNvbmZpZwo=":   "#cloud-config\n",
		"#cloud-config\n":        "#cloud-config\n",
		"I2Nsb3Vk\nLWNvbmZpZwo=": "I2Nsb3Vk\nLWNvbmZpZwo=",
		"":                       "",
	} {
		if got := string(maybeBase64([]byte(in))); got != want {
			t.Errorf("maybeBase64(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHetznerSeedNetworkVersion(t *testing.T) {
	s, err := hetznerSeed([]byte("instance-id: 7\nnetwork-config: {version: 2, ethernets: {}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v2", `{"ethernets":{},"version":2}`}, []string{s.NetworkFormat, string(s.NetworkConfig)}); diff != "" {
		t.Errorf("network (-want +got):\n%s", diff)
	}
}

func FuzzHetznerSeed(f *testing.F) {
	f.Add([]byte("instance-id: 1\nhostname: h\npublic-keys: [k]\nnetwork-config: {version: 1, config: []}\n"), []byte("eA=="))
	f.Add([]byte("- not a map"), []byte("#!/bin/sh"))
	f.Fuzz(func(t *testing.T, md, ud []byte) {
		if s, err := hetznerSeed(md, ud); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}
