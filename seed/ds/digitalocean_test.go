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
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		if s, err := digitalOceanSeed(md, ""); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}
