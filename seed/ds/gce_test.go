package ds

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/seed"
)

func TestGCEFetch(t *testing.T) {
	routes := map[string]route{
		"/computeMetadata/v1/?recursive=true&alt=json": {file: "gce/recursive.json", header: "Metadata-Flavor", value: "Google"},
	}
	base := func(u string) string { return u + "/computeMetadata/v1/" }
	want := func(keys ...string) *seed.Seed {
		return &seed.Seed{
			Datasource: "GCE", Platform: "gce", CloudName: "gce",
			InstanceID: "4815162342108723111", LocalHostname: "waf-gce-01",
			Region: "europe-west1", AvailabilityZone: "europe-west1-b",
			PublicKeys: keys,
			UserData:   []byte("#cloud-config\nhostname: waf-gce\n"),
		}
	}
	runCloudCases(t, []cloudCase{
		{name: "cloudinit keys, --url at the server root", ds: gceDatasource{}, routes: routes,
			want: want(
				"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGceInstanceKey cloudinit@gce",
				"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGceProjectKey project")},
		{name: "default user's unexpired keys too", ds: gceDatasource{}, routes: routes, endpoint: base,
			settings: map[string]any{"default_user": "admin"},
			want: want(
				"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGceInstanceKey cloudinit@gce",
				`ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQFresh google-ssh {"userName":"admin@example.com","expireOn":"2099-01-01T00:00:00+0000"}`,
				"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGceProjectKey project")},
		{name: "without Metadata-Flavor the server refuses", ds: gceDatasource{}, endpoint: base,
			routes:  map[string]route{"/computeMetadata/v1/?recursive=true&alt=json": {file: "gce/recursive.json", header: "Metadata-Flavor", value: "Amazon"}},
			wantErr: "403"},
	})
}

func TestGCEKeyLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		instance    map[string]any
		project     map[string]any
		defaultUser string
		want        []string
	}{
		{"project keys blocked", map[string]any{"ssh-keys": "cloudinit:k1", "block-project-ssh-keys": "TRUE"},
			map[string]any{"ssh-keys": "cloudinit:k2"}, "", []string{"k1"}},
		{"legacy sshKeys hides project keys", map[string]any{"sshKeys": "cloudinit:k1"},
			map[string]any{"ssh-keys": "cloudinit:k2"}, "", []string{"k1"}},
		{"project legacy keys", nil, map[string]any{"ssh-keys": "cloudinit:k2", "sshKeys": "cloudinit:k3"}, "", []string{"k2", "k3"}},
		{"other users and lines without a user", map[string]any{"ssh-keys": "bob:k1\nnokey\ndebian:k2\r\n"}, nil, "debian", []string{"k2"}},
		{"malformed expiry keeps the key", map[string]any{"ssh-keys": `cloudinit:ssh-rsa A google-ssh {"expireOn":"soon"}`}, nil, "",
			[]string{`ssh-rsa A google-ssh {"expireOn":"soon"}`}},
		{"expired key dropped", map[string]any{"ssh-keys": `cloudinit:ssh-rsa A google-ssh {"expireOn":"2020-01-01T00:00:00+0000"}`}, nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gceKeysFor(gceKeyLines(tt.instance, tt.project), tt.defaultUser, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGCEProbe(t *testing.T) {
	for _, tt := range []struct {
		dmi  MapDMI
		want Verdict
	}{
		{MapDMI{"product_name": "Google Compute Engine"}, Found},
		{MapDMI{"product_serial": "GoogleCloud-8F2A0C"}, Found},
		{MapDMI{"product_name": "KVM"}, NotFound},
	} {
		ev, _ := gceDatasource{}.Probe(context.Background(), &Env{DMI: tt.dmi})
		if ev.Verdict != tt.want {
			t.Errorf("Probe(%v) = %v, want %v", tt.dmi, ev.Verdict, tt.want)
		}
	}
}

func FuzzGCESeed(f *testing.F) {
	f.Add([]byte(`{"instance":{"id":1,"zone":"projects/1/zones/a-b-c","hostname":"h.x","attributes":{"ssh-keys":"cloudinit:k","user-data":"eA==","user-data-encoding":"base64"}}}`))
	f.Add([]byte(`{"instance":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		s, err := gceSeed(md, "debian", time.Now())
		if err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}
