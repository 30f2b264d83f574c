package ds

import (
	"context"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

func TestScalewayFetch(t *testing.T) {
	want := &seed.Seed{
		Datasource: "Scaleway", Platform: "scaleway", CloudName: "scaleway",
		InstanceID: "3b7a1c6e-9d2f-4e8a-b1c0-5f6e7d8c9a0b", LocalHostname: "waf-scw-01",
		PublicKeys: []string{
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIScwFixtureKey ops@scw",
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIScwTagKey tag@scw",
		},
		UserData: []byte("#cloud-config\nhostname: waf-scw-01\n"),
	}
	runCloudCases(t, []cloudCase{{
		name: "server without vendor-data", ds: scalewayDatasource{},
		routes: map[string]route{
			"/conf?format=json":     {file: "scaleway/conf.json"},
			"/user_data/cloud-init": {file: "scaleway/user_data"},
		},
		want: want,
	}})
}

func TestScalewayProbe(t *testing.T) {
	tests := []struct {
		env  *Env
		want Verdict
	}{
		{&Env{DMI: MapDMI{"sys_vendor": "Scaleway"}}, Found},
		{&Env{Cmdline: "scaleway"}, Found},
		{&Env{DMI: MapDMI{"sys_vendor": "QEMU"}}, NotFound},
	}
	for _, tt := range tests {
		if ev, _ := (scalewayDatasource{}).Probe(context.Background(), tt.env); ev.Verdict != tt.want {
			t.Errorf("Probe(%+v) = %v, want %v", tt.env, ev.Verdict, tt.want)
		}
	}
}

func FuzzScalewaySeed(f *testing.F) {
	f.Add([]byte(`{"id":"x","hostname":"h","ssh_public_keys":[{"key":"k"}],"tags":["AUTHORIZED_KEY=a_b"]}`))
	f.Add([]byte(`{"id":"x","ssh_public_keys":["bad"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		if s, err := scalewaySeed(md); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}
