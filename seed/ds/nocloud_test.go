package ds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/ds/dstest"
)

func TestParseNoCloudArgs(t *testing.T) {
	cases := []struct {
		line string
		ok   bool
		net  bool
		meta map[string]any
	}{
		{"root=/dev/vda1 ds=nocloud", true, false, map[string]any{}},
		{"ds=nocloud;h=web1;i=iid-7;s=http://10.0.0.1/seed/ quiet", true, false,
			map[string]any{"local-hostname": "web1", "instance-id": "iid-7", "seedfrom": "http://10.0.0.1/seed/"}},
		{"ds=nocloud-net;s=https://example.invalid/x/", true, true, map[string]any{"seedfrom": "https://example.invalid/x/"}},
		{"ds=nocloud;flag;;k=v=w", true, false, map[string]any{"flag": nil, "k": "v=w"}},
		{"ds=nocloudx", false, false, nil},
		{"xds=nocloud", false, false, nil},
		{"ds=ec2", false, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			a, ok := parseNoCloudArgs(tc.line)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if a.Net != tc.net {
				t.Errorf("net = %v", a.Net)
			}
			if diff := cmp.Diff(tc.meta, a.Meta); diff != "" {
				t.Errorf("meta (-want +got):\n%s", diff)
			}
		})
	}
}

func noCloudServer(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

func TestNoCloud(t *testing.T) {
	seedFiles := map[string]string{
		"meta-data":      "instance-id: iid-disk\nlocal-hostname: disk-host\npublic-keys:\n  - ssh-ed25519 AAAA disk\n",
		"user-data":      "#cloud-config\nfrom: disk\n",
		"vendor-data":    "#cloud-config\nvendor: 1\n",
		"network-config": "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n",
	}
	srv := noCloudServer(t, map[string]string{
		"/seed/meta-data":   "instance-id: iid-http\nlocal-hostname: http-host\n",
		"/seed/user-data":   "#cloud-config\nfrom: http\n",
		"/seed/vendor-data": "#cloud-config\nvendor: http\n",
	})
	type result struct {
		ID, Host, Sub, User, Vendor, NetFormat string
		Keys                                   int
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T) *Env
		want    result
		errHas  string
		verdict Verdict
	}{
		{"cidata iso", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "cidata", seedFiles, "-J", "-r")}, nil, "")
		}, result{"iid-disk", "disk-host", "config-disk (/dev/sr0)", "#cloud-config\nfrom: disk\n", "#cloud-config\nvendor: 1\n", "v2", 1}, "", Found},
		{"CIDATA vfat", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/vdb": dstest.VFAT(t, "CIDATA", "2048", "", seedFiles)}, nil, "")
		}, result{"iid-disk", "disk-host", "config-disk (/dev/vdb)", "#cloud-config\nfrom: disk\n", "#cloud-config\nvendor: 1\n", "v2", 1}, "", Found},
		{"seed dir", func(t *testing.T) *Env {
			env := newTestEnv(t, nil, nil, "")
			writeTarget(t, env, map[string]string{
				"/var/lib/cloud/seed/nocloud-net/meta-data": "instance-id: iid-dir\n",
				"/var/lib/cloud/seed/nocloud-net/user-data": "#cloud-config\n",
			})
			return env
		}, result{"iid-dir", "", "seed-dir (/var/lib/cloud/seed/nocloud-net)", "#cloud-config\n", "", "", 0}, "", Found},
		{"cmdline beats the disk's meta-data", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "cidata", seedFiles, "-r")}, nil, "ro ds=nocloud;i=iid-cmd;h=cmd-host")
		}, result{"iid-cmd", "cmd-host", "config-disk (cmdline,/dev/sr0)", "#cloud-config\nfrom: disk\n", "#cloud-config\nvendor: 1\n", "v2", 1}, "", Found},
		{"seedfrom http on the command line", func(t *testing.T) *Env {
			return newTestEnv(t, nil, nil, "ds=nocloud-net;s="+srv.URL+"/seed/")
		}, result{"iid-http", "http-host", "seed-dir (cmdline," + srv.URL + "/seed/)", "#cloud-config\nfrom: http\n", "#cloud-config\nvendor: http\n", "", 0}, "", Found},
		{"seedfrom in the SMBIOS serial, cmdline id kept", func(t *testing.T) *Env {
			return newTestEnv(t, nil, MapDMI{"product_serial": "ds=nocloud;s=" + srv.URL + "/seed/;i=iid-serial"}, "")
		}, result{"iid-serial", "http-host", "seed-dir (dmi," + srv.URL + "/seed/)", "#cloud-config\nfrom: http\n", "#cloud-config\nvendor: http\n", "", 0}, "", Found},
		{"seedfrom 404", func(t *testing.T) *Env {
			return newTestEnv(t, nil, nil, "ds=nocloud;s="+srv.URL+"/missing/")
		}, result{}, "404", Found},
		{"meta-data without user-data is no seed", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "cidata", map[string]string{"meta-data": "instance-id: x\n"}, "-r")}, nil, "")
		}, result{}, "without user-data", Found},
		{"bad meta-data YAML", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "cidata", map[string]string{"meta-data": "a: [\n", "user-data": ""}, "-r")}, nil, "")
		}, result{}, "meta-data", Found},
		{"nothing", func(t *testing.T) *Env {
			return newTestEnv(t, FileDevices{"/dev/sr0": dstest.ISO(t, "other", seedFiles, "-r")}, nil, "")
		}, result{}, "no NoCloud seed", NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.setup(t)
			ev, err := noCloud{}.Probe(context.Background(), env)
			if err != nil || ev.Verdict != tc.verdict {
				t.Errorf("Probe = %+v, %v; want %s", ev, err, tc.verdict)
			}
			s, err := noCloud{}.Fetch(context.Background(), env)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("Fetch error = %v, want one mentioning %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := result{s.InstanceID, s.LocalHostname, s.Subplatform, string(s.UserData), string(s.VendorData), s.NetworkFormat, len(s.PublicKeys)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("seed (-want +got):\n%s", diff)
			}
		})
	}
}

// cloud-init 23.1's NoCloud fills __dmi.KEY__ in seedfrom from the
// machine's SMBIOS (dmi.sub_dmi_vars), so that one command line or image
// names each instance's own seed: ds=nocloud;s=http://srv/__dmi.system-uuid__/.
func TestNoCloudSeedFromDMIPlaceholders(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.EscapedPath())
		switch path.Base(r.URL.Path) {
		case "meta-data":
			w.Write([]byte("instance-id: iid-" + strings.Split(r.URL.Path, "/")[1] + "\n"))
		case "user-data":
			w.Write([]byte("#cloud-config\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dmi := MapDMI{
		"product_uuid":    "4c4c4544-0042-3510-8052-b3c04f4d4e32",
		"chassis_serial":  "CZ 12/3",
		"product_name":    "Standard PC",
		"product_serial":  "",
		"board_asset_tag": "",
	}
	for _, tc := range []struct{ seedfrom, wantPath string }{
		{"/__dmi.system-uuid__/", "/4c4c4544-0042-3510-8052-b3c04f4d4e32/meta-data"},
		// Values are escaped for the path: a / or a space is no new
		// segment (cloud-init puts them in as they are).
		{"/__dmi.chassis-serial-number__/x/", "/CZ%2012%2F3/x/meta-data"},
		{"/__dmi.system-product-name__-__dmi.system-uuid__/", "/Standard%20PC-4c4c4544-0042-3510-8052-b3c04f4d4e32/meta-data"},
		// A name cloud-init does not know is left as it is; a field the
		// machine lacks is empty.
		{"/__dmi.colour__/", "/__dmi.colour__/meta-data"},
		{"/a__dmi.baseboard-asset-tag__b/", "/ab/meta-data"},
	} {
		asked = nil
		env := newTestEnv(t, nil, dmi, "ds=nocloud-net;s="+srv.URL+tc.seedfrom)
		s, err := noCloud{}.Fetch(context.Background(), env)
		if err != nil {
			t.Errorf("%s: %v", tc.seedfrom, err)
			continue
		}
		if len(asked) == 0 || asked[0] != tc.wantPath {
			t.Errorf("%s: asked %v, want %s first", tc.seedfrom, asked, tc.wantPath)
		}
		if !strings.Contains(s.Subplatform, srv.URL+strings.TrimSuffix(tc.wantPath, "meta-data")) {
			t.Errorf("%s: subplatform %q names the seed without its values", tc.seedfrom, s.Subplatform)
		}
	}
}
