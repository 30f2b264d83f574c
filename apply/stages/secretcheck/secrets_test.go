package secretcheck

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	_ "github.com/seedinit/seedinit/apply/all"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/ds/dstest"
	"github.com/seedinit/seedinit/seed/vmware/vmwaretest"
)

// The secrets a seed of these channels carries. Some may land in files
// only root reads (the license where the seed puts it, user-data.txt,
// instance-data-sensitive.json); the ones marked nowhere are taken by
// seedinit in another form (a password hashed) or not at all (an OVF
// property cloud-init does not read), and must be in no file at all. None
// may reach the log (at debug), the console or a file others may read,
// instance-data.json among them.
type secret struct {
	value   string
	nowhere bool
}

// TestSecretsStaySecret runs each channel's seed through its datasource,
// the trust decision and the stages (local, network, config, final) into
// a target, keeps it as PID 1 keeps it for the final stage, and greps
// everything seedinit wrote.
func TestSecretsStaySecret(t *testing.T) {
	license := secret{value: "SECRET-LICENSE-9a7e51"}
	adminPass := secret{value: "S3cret-AdminPass-4f1c"}
	chpasswd := secret{value: "S3cret-chpasswd-77d0"}
	ovfPassword := secret{value: "S3cret-OVF-pass-2b8e", nowhere: true}
	ovfLicense := secret{value: "SECRET-OVF-LICENSE-5d21", nowhere: true}
	guestToken := secret{value: "SECRET-GUESTINFO-TOKEN-e3a9"}
	authcode := secret{value: "SECRET-AUTHCODE-19c4"}
	userData := func(s secret) string {
		return "#cloud-config\nusers: [default]\nchpasswd: {expire: false, users: [{name: admin, password: " + s.value + ", type: text}]}\nssh_genkeytypes: [ed25519]\n"
	}
	cases := []struct {
		name    string
		secrets []secret
		fetch   func(t *testing.T) (ds.Datasource, *ds.Env)
	}{{
		name:    "config drive: admin_pass, an injected license, chpasswd",
		secrets: []secret{license, adminPass, chpasswd},
		fetch: func(t *testing.T) (ds.Datasource, *ds.Env) {
			tree := dstest.InjectedTree([]map[string]any{{"path": "/etc/fortinet/license.lic", "content_path": "/content/0000"}}, map[string]string{"content/0000": license.value})
			tree["openstack/latest/meta_data.json"] = `{"uuid": "iid-secret", "hostname": "fgt", "admin_pass": "` + adminPass.value + `", "files": [{"path": "/etc/fortinet/license.lic", "content_path": "/content/0000"}]}`
			tree["openstack/latest/user_data"] = userData(chpasswd)
			return source(t, "ConfigDrive"), newEnv(t, ds.FileDevices{"/dev/sr0": dstest.ISO(t, "config-2", tree, "-J", "-r")}, nil)
		},
	}, {
		name:    "OVF: the password property, a license property cloud-init does not read",
		secrets: []secret{ovfPassword, ovfLicense, chpasswd},
		fetch: func(t *testing.T) (ds.Datasource, *ds.Env) {
			env := dstest.OVFEnv([2]string{"instance-id", "iid-ovf-secret"}, [2]string{"hostname", "fgt"}, [2]string{"password", ovfPassword.value},
				[2]string{"fgt.license", ovfLicense.value}, [2]string{"user-data", dstest.B64(userData(chpasswd))})
			return source(t, "OVF"), newEnv(t, ds.FileDevices{"/dev/sr0": dstest.ISO(t, "OVF ENV", map[string]string{"ovf-env.xml": env}, "-J", "-r")}, nil)
		},
	}, {
		name:    "VMware guestinfo: gzip'd user-data with a token and a password",
		secrets: []secret{guestToken, chpasswd},
		fetch: func(t *testing.T) (ds.Datasource, *ds.Env) {
			ud := userData(chpasswd) + "write_files: [{path: /etc/vendor/api-token, content: " + guestToken.value + ", permissions: '0600'}]\n"
			t.Cleanup(ds.EmulateVMwareForTest(vmwaretest.New(map[string]string{"metadata": "instance-id: iid-vm-secret\nlocal-hostname: fgt\nredact: [userdata]\n", "userdata": dstest.GzB64(ud), "userdata.encoding": "gzip+base64"})))
			return source(t, "VMware"), newEnv(t, nil, ds.MapDMI(dstest.VMwareDMI()))
		},
	}, {
		name:    "a bootstrap tree's authcodes",
		secrets: []secret{authcode},
		fetch: func(t *testing.T) (ds.Datasource, *ds.Env) {
			img := dstest.RockRidgeISO(t, "cidata", map[string]string{"meta-data": "instance-id: iid-boot-secret\n", "user-data": "#cloud-config\nssh_genkeytypes: [ed25519]\n",
				"bootstrap/license/authcodes": authcode.value}, map[string]os.FileMode{"bootstrap/license/authcodes": 0o600}, nil)
			return source(t, "NoCloud"), newEnv(t, ds.FileDevices{"/dev/vdb": img}, nil)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, env := tc.fetch(t)
			var logs, console bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			env.Log = log
			s, err := d.Fetch(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			dir := env.Root.Dir()
			prepareAccounts(t, dir)
			if len(s.Bootstrap) > 0 {
				os.MkdirAll(filepath.Join(dir, "etc/seedinit"), 0o755)
				os.WriteFile(filepath.Join(dir, "etc/seedinit/bootstrap-dir"), []byte("/opt/vendor/bootstrap\n"), 0o644)
			}
			rep, err := stages.Run(context.Background(), stages.Options{Root: env.Root, Seed: s, Sys: &applytest.FakeSystem{},
				Stages: apply.Stages, Log: log, Console: &console, Now: time.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stage errors: %q", rep.Errors())
			if r, ok := ds.ReadyReporterFor(s); ok {
				r.ReportReady(context.Background(), env, s)
			}
			// What PID 1 keeps for the final stage, in /run/seedinit/seed.
			kept := filepath.Join(dir, "run/seedinit/seed")
			if err := ds.FetchToDir(s, kept); err != nil {
				t.Fatal(err)
			}
			for _, sec := range tc.secrets {
				if strings.Contains(logs.String(), sec.value) {
					t.Errorf("%s in the log", sec.value)
				}
				if strings.Contains(console.String(), sec.value) {
					t.Errorf("%s on the console", sec.value)
				}
			}
			filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
				if err != nil || !de.Type().IsRegular() {
					return nil
				}
				b, _ := os.ReadFile(p)
				fi, _ := os.Stat(p)
				rel, _ := filepath.Rel(dir, p)
				for _, sec := range tc.secrets {
					if !bytes.Contains(b, []byte(sec.value)) {
						continue
					}
					switch {
					case sec.nowhere:
						t.Errorf("%s in /%s, which should have none of it", sec.value, rel)
					case fi.Mode().Perm()&0o077 != 0:
						t.Errorf("%s in /%s, mode %v: readable by others", sec.value, rel, fi.Mode().Perm())
					}
				}
				return nil
			})
			if b, err := os.ReadFile(filepath.Join(dir, "run/cloud-init/instance-data.json")); err != nil {
				t.Errorf("no instance-data.json: %v", err)
			} else {
				for _, sec := range tc.secrets {
					if bytes.Contains(b, []byte(sec.value)) {
						t.Errorf("%s in instance-data.json", sec.value)
					}
				}
			}
		})
	}
}

// source is the registered datasource named name, as datasource_list
// names it.
func source(t *testing.T, name string) ds.Datasource {
	t.Helper()
	d, ok := ds.Lookup(name)
	if !ok {
		t.Fatalf("no datasource %q registered", name)
	}
	return d
}

// newEnv is what a datasource sees of a machine with these devices and
// DMI, over a fresh target root.
func newEnv(t *testing.T, devices ds.Devices, dmi ds.DMI) *ds.Env {
	return &ds.Env{Root: dstest.TargetRoot(t), Devices: devices, DMI: dmi}
}

// prepareAccounts gives the target the account files a root has.
func prepareAccounts(t *testing.T, dir string) {
	t.Helper()
	files := map[string]struct {
		content string
		mode    os.FileMode
	}{
		"etc/passwd":  {"root:x:0:0:root:/root:/bin/sh\n", 0o644},
		"etc/group":   {"root:x:0:\nsudo:x:27:\n", 0o644},
		"etc/shadow":  {"root:*:19000:0:99999:7:::\n", 0o640},
		"etc/gshadow": {"root:*::\n", 0o640},
	}
	for name, f := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "etc/cloud"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/cloud/cloud.cfg"), []byte("system_info:\n  default_user: {name: admin, lock_passwd: false}\n"), 0o644)
}
