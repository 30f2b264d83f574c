package ds

import (
	"context"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

func TestDigitalOceanFetch(t *testing.T) {
	runCloudCases(t, []cloudCase{{
		name: "droplet, --url at the server root", ds: digitalOceanDatasource{},
		routes: map[string]route{"/metadata/v1.json": {file: "digitalocean/v1.json"}},
		want: &seed.Seed{
			Datasource: "DigitalOcean", Platform: "digitalocean", CloudName: "digitalocean",
			InstanceID: "2756294", LocalHostname: "waf-do-01", AvailabilityZone: "ams3",
			PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDoFixtureKey ops@do"},
			UserData:   []byte("#!/bin/sh\necho do\n"),
			VendorData: []byte("#cloud-config\ndisable_root: false\n"),
		},
		wantNetwork: "digitalocean",
	}})
}

func TestDigitalOceanProbe(t *testing.T) {
	for dmi, want := range map[string]Verdict{"DigitalOcean": Found, "QEMU": NotFound} {
		ev, _ := digitalOceanDatasource{}.Probe(context.Background(), &Env{DMI: MapDMI{"sys_vendor": dmi}})
		if ev.Verdict != want {
			t.Errorf("Probe(sys_vendor %q) = %v, want %v", dmi, ev.Verdict, want)
		}
	}
}

func FuzzDigitalOceanSeed(f *testing.F) {
	f.Add([]byte(`{"droplet_id": 1, "hostname": "h", "public_keys": ["k"], "interfaces": {"public": []}, "dns": {}}`))
	f.Add([]byte(`{"public_keys": "k", "user_data": 5}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if s, err := digitalOceanSeed(body, ""); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}

// TestDigitalOceanNetworkOrder checks that the network metadata keeps the
// droplet's key order (cloud-init configures the interfaces in it) and
// that a missing "dns" stays missing.
func TestDigitalOceanNetworkOrder(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"droplet_id": 1, "interfaces": {"public": [{"mac": "a"}], "private": [{"mac": "b"}]}, "dns": {"nameservers": ["x"]}}`,
			`{"interfaces":{"public":[{"mac":"a"}],"private":[{"mac":"b"}]},"dns":{"nameservers":["x"]}}`},
		{`{"droplet_id": 1, "interfaces": {"public": []}}`, `{"interfaces":{"public":[]}}`},
		{`{"droplet_id": 1}`, ``},
	} {
		s, err := digitalOceanSeed([]byte(tt.body), "")
		if err != nil {
			t.Fatalf("digitalOceanSeed(%s): %v", tt.body, err)
		}
		if got := string(s.NetworkConfig); got != tt.want {
			t.Errorf("digitalOceanSeed(%s) network config %s, want %s", tt.body, got, tt.want)
		}
	}
}
