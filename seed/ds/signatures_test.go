package ds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// The NoCloud family hands the signatures served beside the parts, and
// the meta-data document as served, to the seed: seed directories (and
// disks, read the same way), seedfrom URLs, SMBIOS credentials, fw_cfg
// and MMDS documents.
func TestSeedSignaturesAreKept(t *testing.T) {
	const md, ud = "instance-id: iid-sig\n", "#cloud-config\n"
	sig := func(part string) string { return "SIG of " + part }
	check := func(t *testing.T, env *Env, ds Datasource, want ...string) {
		t.Helper()
		s, err := ds.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if string(s.MetaRaw) != md {
			t.Errorf("MetaRaw %q", s.MetaRaw)
		}
		if len(s.Signatures) != len(want) {
			t.Errorf("signatures %q, want %q", s.Signatures, want)
		}
		for _, part := range want {
			if string(s.Signatures[part]) != sig(part) {
				t.Errorf("%s's signature %q", part, s.Signatures[part])
			}
		}
	}
	t.Run("seed directory", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "")
		writeTarget(t, env, map[string]string{
			"/var/lib/cloud/seed/nocloud/meta-data": md, "/var/lib/cloud/seed/nocloud/user-data": ud,
			"/var/lib/cloud/seed/nocloud/user-data.sig": sig("user-data"),
		})
		check(t, env, noCloud{}, "user-data")
	})
	t.Run("seedfrom URL", func(t *testing.T) {
		srv := noCloudServer(t, map[string]string{"/s/meta-data": md, "/s/user-data": ud, "/s/meta-data.sig": sig("meta-data"), "/s/user-data.sig": sig("user-data")})
		check(t, newTestEnv(t, nil, nil, "ds=nocloud-net;s="+srv.URL+"/s/"), noCloud{}, "meta-data", "user-data")
	})
	t.Run("SMBIOS credentials", func(t *testing.T) {
		b64 := base64.StdEncoding.EncodeToString
		env := &Env{DMI: oemDMI{strs: []string{
			"io.systemd.credential:cloud-init.meta-data=" + md,
			"io.systemd.credential:cloud-init.user-data=" + ud,
			"io.systemd.credential.binary:cloud-init.user-data.sig=" + b64([]byte(sig("user-data"))),
			"io.systemd.credential.binary:cloud-init.meta-data.sig=" + b64([]byte(sig("meta-data"))),
		}}, Log: testLogger(t)}
		check(t, env, noCloud{}, "meta-data", "user-data")
	})
	t.Run("fw_cfg", func(t *testing.T) {
		env := &Env{FwCfgDir: fwCfg(t, map[string]string{
			"opt/io.cloud-init/cloud-init/meta-data": md, "opt/io.cloud-init/cloud-init/user-data": ud,
			"opt/io.cloud-init/cloud-init/meta-data.sig": sig("meta-data"),
		}), Log: testLogger(t)}
		check(t, env, qemuFwCfg{}, "meta-data")
	})
	t.Run("MMDS document", func(t *testing.T) {
		doc, _ := json.Marshal(map[string]any{"meta-data": md, "user-data": ud, "user-data.sig": sig("user-data")})
		srv := httptest.NewServer(newFakeMMDS(t, string(doc)))
		t.Cleanup(srv.Close)
		check(t, testEnv(srv.URL, nil, nil), firecrackerMMDS{}, "user-data")
	})
}

// A config drive's meta_data.json, user_data and network_data.json have
// their signatures beside them (FILE.sig).
func TestConfigDriveSignaturesAreKept(t *testing.T) {
	env := newTestEnv(t, nil, nil, "")
	dir := configDriveSeedDir + "/openstack/latest/"
	meta := fixture(t, "openstack/meta_data.json")
	writeTarget(t, env, map[string]string{
		dir + "meta_data.json": meta, dir + "meta_data.json.sig": "SIG meta",
		dir + "user_data": "#cloud-config\n", dir + "user_data.sig": "SIG user",
		dir + "network_data.json": fixture(t, "openstack/network_data.json"),
	})
	s, err := configDrive{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if string(s.MetaRaw) != meta || string(s.Signatures["meta-data"]) != "SIG meta" ||
		string(s.Signatures["user-data"]) != "SIG user" || len(s.Signatures) != 2 {
		t.Errorf("signatures %q, meta-data kept: %v", s.Signatures, string(s.MetaRaw) == meta)
	}
}

// VendorHTTP reads PATH.sig beside the parts it fetched; meta-data made
// from many URLs (meta_data_keys) has no one document to sign.
func TestVendorHTTPSignaturesAreKept(t *testing.T) {
	files := map[string]string{
		"/v/meta_data.json": `{"uuid": "v-1"}`, "/v/meta_data.json.sig": "SIG meta",
		"/v/user_data": "#cloud-config\n", "/v/user_data.sig": "SIG user",
	}
	srv := noCloudServer(t, files)
	for _, keys := range [][]any{nil, {"license"}} {
		env := newTestEnv(t, nil, nil, "")
		settings := map[string]any{"base_url": srv.URL + "/v/"}
		if keys != nil {
			settings["meta_data_keys"] = keys
		}
		env.Config.Datasource = map[string]map[string]any{"VendorHTTP": settings}
		s, err := vendorHTTP{}.Fetch(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Signatures["user-data"]) != "SIG user" {
			t.Errorf("keys %v: user-data signature %q", keys, s.Signatures["user-data"])
		}
		wantMeta := keys == nil
		if (string(s.MetaRaw) == files["/v/meta_data.json"]) != wantMeta || (s.Signatures["meta-data"] != nil) != wantMeta {
			t.Errorf("keys %v: meta-data %q signature %q", keys, s.MetaRaw, s.Signatures["meta-data"])
		}
	}
}

// Meta-data merged from more than one source (the command line's
// ds=nocloud;h=... beside a seed directory's document) is no document a
// signature covers: the seed carries none, and a check under require
// keeps the identity only.
func TestMergedMetaDataIsNotSignable(t *testing.T) {
	env := newTestEnv(t, nil, nil, "ds=nocloud;h=from-cmdline")
	writeTarget(t, env, map[string]string{
		"/var/lib/cloud/seed/nocloud/meta-data": "instance-id: i-m\n", "/var/lib/cloud/seed/nocloud/user-data": "#cloud-config\n",
		"/var/lib/cloud/seed/nocloud/meta-data.sig": "SIG",
	})
	s, err := noCloud{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.MetaRaw != nil || s.LocalHostname != "from-cmdline" {
		t.Errorf("MetaRaw %q, hostname %q", s.MetaRaw, s.LocalHostname)
	}
}
