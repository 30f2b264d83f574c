package ds

import (
	"testing"

	"github.com/seedinit/seedinit/seed"
)

func TestOracleFetch(t *testing.T) {
	want := &seed.Seed{
		Datasource: "Oracle", Platform: "oracle", CloudName: "oracle",
		InstanceID: "ocid1.instance.oc1.phx.abyhqljrfixture", LocalHostname: "waf-oci-01",
		Region: "us-phoenix-1", AvailabilityZone: "phx-ad-1",
		PublicKeys: []string{
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOracleKeyOne one",
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOracleKeyTwo two",
		},
		UserData: []byte("#cloud-config\nhostname: waf-oci\n"),
	}
	base := func(u string) string { return u + "/opc/" }
	bearer := func(file string) route { return route{file: file, header: "Authorization", value: "Bearer Oracle"} }
	runCloudCases(t, []cloudCase{
		{name: "opc/v2 with the bearer header", ds: oracleDatasource{}, endpoint: base,
			routes: map[string]route{"/opc/v2/instance/": bearer("oracle/instance.json"), "/opc/v2/vnics/": bearer("oracle/vnics.json")},
			want:   want, wantNetwork: "oracle-vnics"},
		{name: "opc/v1 fallback, --url at the server root", ds: oracleDatasource{},
			routes: map[string]route{"/opc/v1/instance/": {file: "oracle/instance.json"}},
			want:   want},
	})
}

func FuzzOracleSeed(f *testing.F) {
	f.Add([]byte(`{"id":"ocid1","hostname":"h","ociAdName":"ad","metadata":{"user_data":"eA==","ssh_authorized_keys":"a\nb"}}`))
	f.Add([]byte(`{"metadata":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		if s, err := oracleSeed(md); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}
