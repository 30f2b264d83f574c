package ds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

func TestAzureFetch(t *testing.T) {
	want := &seed.Seed{
		Datasource: "Azure", Platform: "azure", CloudName: "azure",
		InstanceID: "4e1b6f0a-7c3d-4b2a-9e8f-0a1b2c3d4e5f", LocalHostname: "waf-az-01",
		Region: "westeurope", AvailabilityZone: "0",
		PublicKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAzureFixtureKey azureuser"},
		UserData:   []byte("#cloud-config\nhostname: waf-az-01\n"),
		// IMDS's adminUsername names the default user, as in cloud-init.
		Config: map[string]any{"system_info": map[string]any{"default_user": map[string]any{"name": "azureuser"}}},
	}
	base := func(u string) string { return u + "/metadata/instance" }
	md := func(query string) map[string]route {
		return map[string]route{"/metadata/instance?" + query: {file: "azure/instance.json", header: "Metadata", value: "true"}}
	}
	withVMID := *want
	withVMID.InstanceID = "0ef5bcb8-4a92-4c7a-9d3c-2b1d7e4f6a01"
	runCloudCases(t, []cloudCase{
		{name: "current API version", ds: azureDatasource{}, endpoint: base, routes: md("api-version=2021-08-01&extended=true"),
			dmi: MapDMI{"product_uuid": "4E1B6F0A-7C3D-4B2A-9E8F-0A1B2C3D4E5F"}, want: want, wantNetwork: "azure-imds"},
		{name: "vmId without DMI, --url at the server root", ds: azureDatasource{}, routes: md("api-version=2021-08-01&extended=true"),
			want: &withVMID, wantNetwork: "azure-imds"},
	})
}

func TestAzureFallsBackToMinimumVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "azure", "instance.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") != azureIMDSMinVersion {
			http.Error(w, `{"error": "Bad request. api-version is invalid"}`, http.StatusBadRequest)
			return
		}
		w.Write(data)
	}))
	defer srv.Close()
	s, err := azureDatasource{}.Fetch(context.Background(), testEnv(srv.URL+"/metadata/instance", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.LocalHostname != "waf-az-01" {
		t.Errorf("LocalHostname = %q", s.LocalHostname)
	}
}

func TestAzureAndVMwareProbe(t *testing.T) {
	tests := []struct {
		ds   Datasource
		dmi  MapDMI
		want Verdict
	}{
		{azureDatasource{}, MapDMI{"chassis_asset_tag": "7783-7084-3265-9085-8269-3286-77"}, Found},
		{azureDatasource{}, MapDMI{"chassis_asset_tag": "none"}, NotFound},
		{vmwareDatasource{}, MapDMI{"sys_vendor": "VMware, Inc."}, NotFound},
	}
	for _, tt := range tests {
		if ev, _ := tt.ds.Probe(context.Background(), &Env{DMI: tt.dmi}); ev.Verdict != tt.want {
			t.Errorf("%s.Probe(%v) = %v, want %v", tt.ds.Name(), tt.dmi, ev.Verdict, tt.want)
		}
	}
	if _, err := (vmwareDatasource{}).Fetch(context.Background(), &Env{}); err == nil {
		t.Error("VMware Fetch gave no error")
	}
}

func FuzzAzureSeed(f *testing.F) {
	f.Add([]byte(`{"compute":{"vmId":"v","osProfile":{"computerName":"h"},"publicKeys":[{"keyData":"k"}],"userData":"eA=="},"network":{}}`), "")
	f.Add([]byte(`{"compute":{"publicKeys":[1]}}`), "UUID")
	f.Fuzz(func(t *testing.T, body []byte, uuid string) {
		md, err := decodeJSONObject(body)
		if err != nil {
			return
		}
		if s, err := azureSeed(md, nil, uuid, true, nil); err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}

// TestAzureApplyNetworkConfig checks that datasource.Azure
// .apply_network_config: false leaves IMDS's network out of the seed, so
// that the fallback serves, as in cloud-init.
func TestAzureApplyNetworkConfig(t *testing.T) {
	md := map[string]any{
		"compute": map[string]any{"vmId": "v", "osProfile": map[string]any{"computerName": "h"}},
		"network": map[string]any{"interface": []any{map[string]any{"macAddress": "000D3A047598"}}},
	}
	for _, apply := range []bool{true, false} {
		s, err := azureSeed(md, nil, "", apply, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.NetworkFormat == "azure-imds" && len(s.NetworkConfig) > 0; got != apply {
			t.Errorf("apply_network_config %v: network config kept %v (format %q)", apply, got, s.NetworkFormat)
		}
	}
}
