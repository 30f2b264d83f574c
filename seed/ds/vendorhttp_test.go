package ds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The security-appliance vendor's layout: /<vendor>/latest/meta_data.json,
// /<vendor>/latest/meta_data/<key> and /<vendor>/latest/user_data (MIME).
const applianceUserData = `Content-Type: multipart/mixed; boundary="==BOUNDARY=="
MIME-Version: 1.0

--==BOUNDARY==
Content-Type: text/cloud-config

hostname: waf-01
--==BOUNDARY==
Content-Type: text/x-shellscript

#!/bin/sh
echo configured
--==BOUNDARY==--
`

func applianceServer(t *testing.T) *httptest.Server {
	files := map[string]string{
		"/acme/latest/meta_data.json":       `{"uuid": "5f2c-appliance-01", "hostname": "waf-01", "public_keys": {"admin": "ssh-ed25519 AAAAC3 admin"}}`,
		"/acme/latest/meta_data/license":    "LIC-1234\n",
		"/acme/latest/meta_data/mgmt-ip":    "10.1.2.3",
		"/acme/latest/user_data":            applianceUserData,
		"/acme/latest/network_data.json":    `{"links": [], "networks": [], "services": []}`,
		"/acme/latest/meta_data/admin-role": "operator",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Appliance") != "waf" {
			http.Error(w, "who are you", http.StatusForbidden)
			return
		}
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVendorHTTP(t *testing.T) {
	srv := applianceServer(t)
	env := newTestEnv(t, nil, MapDMI{"sys_vendor": "ACME"}, "")
	env.Config.Datasource = map[string]map[string]any{"VendorHTTP": {
		"base_url":       srv.URL + "/acme/latest/",
		"meta_data_keys": []any{"license", "mgmt-ip", "absent"},
		"network_config": "network_data.json",
		"headers":        map[string]any{"X-Appliance": "waf"},
		"dmi":            map[string]any{"sys_vendor": "ACME"},
		"platform":       "acme",
	}}
	ev, err := vendorHTTP{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != Found {
		t.Fatalf("Probe = %+v, %v", ev, err)
	}
	s, err := vendorHTTP{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.InstanceID != "5f2c-appliance-01" || s.LocalHostname != "waf-01" || len(s.PublicKeys) != 1 ||
		s.Metadata["license"] != "LIC-1234" || s.Metadata["mgmt-ip"] != "10.1.2.3" ||
		string(s.UserData) != applianceUserData || s.NetworkFormat != "network_data.json" || s.Platform != "acme" {
		t.Errorf("seed = %+v", s)
	}

	env.DMI = MapDMI{"sys_vendor": "Other"}
	if ev, _ := (vendorHTTP{}).Probe(context.Background(), env); ev.Verdict != NotFound {
		t.Errorf("probe on another vendor's machine = %+v", ev)
	}
	delete(env.Config.Datasource["VendorHTTP"], "headers")
	if _, err := (vendorHTTP{}).Fetch(context.Background(), env); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("fetch without the header: %v", err)
	}
}

func TestVendorHTTPUnconfigured(t *testing.T) {
	env := newTestEnv(t, nil, nil, "")
	ev, err := vendorHTTP{}.Probe(context.Background(), env)
	if err != nil || ev.Verdict != NotFound {
		t.Errorf("Probe = %+v, %v", ev, err)
	}
	if _, err := (vendorHTTP{}).Fetch(context.Background(), env); err == nil || !strings.Contains(err.Error(), "base_url") {
		t.Errorf("Fetch = %v", err)
	}
}
