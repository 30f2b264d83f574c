package ds

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// fixture reads a file of testdata/.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// openStackTree is a config drive's files with the fixtures under each of
// versions.
func openStackTree(t *testing.T, versions ...string) map[string]string {
	files := map[string]string{"ec2/latest/meta-data.json": `{"instance-id": "i-0001"}`}
	for _, v := range versions {
		for _, f := range []string{"meta_data.json", "network_data.json", "vendor_data.json", "user_data"} {
			files["openstack/"+v+"/"+f] = fixture(t, "openstack/"+f)
		}
	}
	return files
}

// newTestEnv is an Env over a fresh target root with the given fakes.
func newTestEnv(t *testing.T, devices FileDevices, dmi MapDMI, cmdline string) *Env {
	t.Helper()
	return &Env{Root: dstest.TargetRoot(t), Devices: devices, DMI: dmi, Cmdline: cmdline, Log: testLogger(t)}
}

func writeTarget(t *testing.T, env *Env, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := env.Root.MkdirAll(filepath.Dir(name), 0o755, rootfs.Owner{}); err != nil {
			t.Fatal(err)
		}
		if err := env.Root.WriteFile(name, []byte(content), 0o644, rootfs.Owner{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfigDrive(t *testing.T) {
	type want struct {
		id, host, az, subplatform, netFormat string
		keys                                 int
		vendorHas                            string
		errHas                               string
	}
	ok := want{
		id: "b0fa911b-69d4-4476-bbe2-1c92bff6535c", host: "sm-foo-test.novalocal", az: "nova",
		subplatform: "config-disk (/dev/sr0)", netFormat: "network_data.json", keys: 1,
		vendorHas: "echo vendor",
	}
	cases := []struct {
		name  string
		files func(t *testing.T) map[string]string
		image string // iso or vfat
		label string
		want  want
	}{
		{"iso newest known version", func(t *testing.T) map[string]string {
			return openStackTree(t, "2012-08-10", "2018-08-27", "latest")
		}, "iso", "config-2", ok},
		{"vfat upper-case label", func(t *testing.T) map[string]string {
			return openStackTree(t, "2013-10-17", "latest")
		}, "vfat", "CONFIG-2", ok},
		{"only latest", func(t *testing.T) map[string]string { return openStackTree(t, "latest") }, "iso", "config-2", ok},
		{"newest version lacks meta_data.json: an older one", func(t *testing.T) map[string]string {
			f := openStackTree(t, "2012-08-10")
			f["openstack/2018-08-27/user_data"] = "#cloud-config\n"
			return f
		}, "iso", "config-2", ok},
		{"bad random_seed", func(t *testing.T) map[string]string {
			f := openStackTree(t, "latest")
			f["openstack/latest/meta_data.json"] = `{"uuid": "x", "random_seed": "!!!"}`
			return f
		}, "iso", "config-2", want{errHas: "random_seed"}},
		{"no uuid", func(t *testing.T) map[string]string {
			f := openStackTree(t, "latest")
			f["openstack/latest/meta_data.json"] = `{"hostname": "x"}`
			return f
		}, "iso", "config-2", want{errHas: "uuid"}},
		{"invalid network_data.json", func(t *testing.T) map[string]string {
			f := openStackTree(t, "latest")
			f["openstack/latest/network_data.json"] = `{"links": [`
			return f
		}, "iso", "config-2", want{errHas: "network_data.json"}},
		{"dsmode disabled", func(t *testing.T) map[string]string {
			f := openStackTree(t, "latest")
			f["openstack/latest/meta_data.json"] = `{"uuid": "x", "meta": {"dsmode": "disabled"}}`
			return f
		}, "iso", "config-2", want{errHas: "dsmode is disabled"}},
		{"broken ec2 tree", func(t *testing.T) map[string]string {
			f := openStackTree(t, "latest")
			f["ec2/latest/meta-data.json"] = `{`
			return f
		}, "iso", "config-2", want{errHas: "ec2/latest/meta-data.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var img string
			if tc.image == "iso" {
				img = dstest.ISO(t, tc.label, tc.files(t), "-J", "-r")
			} else {
				img = dstest.VFAT(t, tc.label, "65536", "", tc.files(t))
			}
			env := newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, "")
			ev, err := configDrive{}.Probe(context.Background(), env)
			if err != nil || ev.Verdict != Found {
				t.Fatalf("Probe = %+v, %v; want found", ev, err)
			}
			s, err := configDrive{}.Fetch(context.Background(), env)
			if tc.want.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.errHas) {
					t.Fatalf("Fetch error = %v, want one mentioning %q", err, tc.want.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			got := want{
				id: s.InstanceID, host: s.LocalHostname, az: s.AvailabilityZone, subplatform: s.Subplatform,
				netFormat: s.NetworkFormat, keys: len(s.PublicKeys), vendorHas: tc.want.vendorHas,
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("seed (-want +got):\n%s", diff)
			}
			if !strings.Contains(string(s.VendorData), tc.want.vendorHas) {
				t.Errorf("vendor-data %q lacks %q", s.VendorData, tc.want.vendorHas)
			}
			if string(s.UserData) != fixture(t, "openstack/user_data") {
				t.Errorf("user-data = %q", s.UserData)
			}
			if s.Datasource != "ConfigDrive" || s.Platform != "openstack" || s.CloudName != "configdrive" {
				t.Errorf("names = %q %q %q", s.Datasource, s.Platform, s.CloudName)
			}
		})
	}
}

func TestConfigDriveSeedDir(t *testing.T) {
	env := newTestEnv(t, nil, nil, "")
	files := map[string]string{}
	for name, content := range openStackTree(t, "latest") {
		files[configDriveSeedDir+"/"+name] = content
	}
	writeTarget(t, env, files)
	s, err := configDrive{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Subplatform != "seed-dir ("+configDriveSeedDir+")" || s.InstanceID == "" {
		t.Errorf("seed = %q %q", s.Subplatform, s.InstanceID)
	}
}

func TestConvertVendorData(t *testing.T) {
	cases := []struct {
		name, in, want, errHas string
	}{
		{"string", `"#cloud-config\na: 1\n"`, "#cloud-config\na: 1\n", ""},
		{"cloud-init key", `{"cloud-init": "#!/bin/sh\necho hi\n"}`, "#!/bin/sh\necho hi\n", ""},
		{"object without cloud-init", `{"other": "x"}`, "", ""},
		{"null", `null`, "", ""},
		{"nested object", `{"cloud-init": {"a": 1}}`, "", "cannot be an object"},
		{"list", `["#cloud-config\na: 1\n", "#!/bin/sh\n"]`, "multipart/mixed", ""},
		{"number", `42`, "", "unknown type"},
		{"invalid", `{`, "", "decode JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertVendorData([]byte(tc.in))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error = %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(got), tc.want) || (tc.want == "" && len(got) != 0) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
