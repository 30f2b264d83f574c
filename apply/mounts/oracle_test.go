package mounts

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

const systemPython = "/usr/bin/python3"

func needCloudInit(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		testenv.Skip(t, "cloud-init oracle: no "+systemPython)
	}
	if err := exec.Command(systemPython, "-c", "import cloudinit.config.cc_mounts").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle: "+systemPython+" cannot import cloudinit (install Debian's cloud-init)")
	}
}

// oracleScript runs cloud-init's cc_mounts.handle with its view of /dev and
// /sys redirected into a fake tree, fstab in a temp file, and no command or
// directory creation on the host. It prints the fstab it wrote and the
// commands it would run, and sanitize_devname's answers for argv names.
const oracleScript = `
import json, os, sys, types, logging
from cloudinit.config import cc_mounts
from cloudinit import util, subp
root, fstab, cfgjson, meta, systemd = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]) or {}, sys.argv[5] == "1"
def host(p):
    return p if p.startswith(root) or p == fstab else os.path.join(root, p.lstrip("/"))
cc_mounts.os = types.SimpleNamespace(path=types.SimpleNamespace(
    exists=lambda p: os.path.exists(host(p)), realpath=lambda p: p,
    join=os.path.join, dirname=os.path.dirname))
cc_mounts.FSTAB_PATH = fstab
ran = []
cc_mounts.subp = types.SimpleNamespace(subp=lambda cmd, **kw: ran.append(" ".join(cmd)), ProcessExecutionError=subp.ProcessExecutionError)
util.ensure_dir = lambda *a, **k: None
util.mounts = lambda: {}
cloud = types.SimpleNamespace(distro=types.SimpleNamespace(uses_systemd=lambda: systemd),
    device_name_to_device=lambda n: meta.get(n))
log = logging.getLogger("oracle")
cfg = json.loads(cfgjson)
if "sanitize" in cfg:
    print(json.dumps([cc_mounts.sanitize_devname(n, cloud.device_name_to_device, log, aliases=cfg.get("device_aliases")) or "" for n in cfg["sanitize"]]))
    sys.exit(0)
cc_mounts.handle("mounts", cfg, cloud, log, [])
print(json.dumps({"fstab": open(fstab).read() if os.path.exists(fstab) else "", "ran": ran}))
`

func runOracle(t *testing.T, root, fstab string, cfg map[string]any, meta map[string]string, systemd bool) []byte {
	t.Helper()
	cj, _ := json.Marshal(cfg)
	mj, _ := json.Marshal(meta)
	sd := "0"
	if systemd {
		sd = "1"
	}
	out, err := exec.Command(systemPython, "-c", oracleScript, root, fstab, string(cj), string(mj), sd).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("cloud-init oracle: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("cloud-init oracle: %v", err)
	}
	return out
}

func TestSanitizeMatchesCloudInit(t *testing.T) {
	needCloudInit(t)
	devs := standardDevices(t)
	meta := map[string]string{"ephemeral0": "sdb", "swap": "/dev/xvdd", "ebs1": "vdc"}
	aliases := map[string]any{"data": "vdc", "scratch": "xvdd"}
	names := []string{"sdb", "/dev/sdb", "vdc", "xvdd.2", "/dev/xvdd.2", "/dev/xvdd.1", "xvdd.3", "/dev/nvme0n1",
		"nvme0n1", "ephemeral", "ephemeral0", "ephemeral1", "swap", "ebs1", "ami", "data", "scratch", "sdz",
		"LABEL=foo", "UUID=0b5f", "nfs.example:/export", "sr0", "", "/dev/sdb1", "ephemeral0.1"}
	out := runOracle(t, devs.Dir, filepath.Join(t.TempDir(), "fstab"), map[string]any{"sanitize": names, "device_aliases": aliases}, meta, false)
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("oracle output %q: %v", out, err)
	}
	r := Resolver{Devices: devs, Aliases: map[string]string{"data": "vdc", "scratch": "xvdd"}, MetaDevice: func(n string) string { return meta[n] }}
	var got []string
	for _, n := range names {
		got = append(got, r.Sanitize(n))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sanitize vs cloud-init's sanitize_devname (-cloud-init +seedinit):\n%s", diff)
	}
}

func TestFstabMatchesCloudInit(t *testing.T) {
	needCloudInit(t)
	const existing = "# /etc/fstab: static file system information.\nUUID=1234 / ext4 errors=remount-ro 0 1\n/dev/xvdd2 /var ext4 defaults 0 0\n/dev/vdc\t/old\tauto\tdefaults,nofail,comment=cloudconfig\t0\t2\n"
	tests := []struct {
		name    string
		yaml    string
		fstab   string
		meta    map[string]string
		systemd bool
		// wantErr, when set, is a case where cloud-init 22.4.2 raises (it
		// cannot join a null field) and seedinit drops only that entry.
		wantErr string
	}{
		{name: "documented example", yaml: `mounts:
  - [ /dev/ephemeral0, /mnt, auto, "defaults,noexec" ]
  - [ sdb, /opt/data ]
  - [ vdc, /opt/data, auto, "defaults,nofail", "0", "0" ]
mount_default_fields: [None, None, auto, "defaults,nofail", "0", "2"]`, fstab: existing},
		{name: "systemd defaults and metadata ephemeral", yaml: `mounts: [[vdc, /srv]]`, meta: map[string]string{"ephemeral0": "sdb", "swap": "xvdd"}, systemd: true, fstab: existing},
		{name: "nobootwait defaults, no fstab", yaml: `mounts: [["LABEL=data", /data, ext4], [sdz, /z], ["nfs:/e", /nfs, nfs, rw]]`},
		{name: "null removes", yaml: `mounts: [[vdc, /srv], [sdb, /data], [/dev/vdc, null]]`, fstab: existing},
		{name: "ephemeral disabled", yaml: `mounts: [[ephemeral0]]`, meta: map[string]string{"ephemeral0": "sdb"}, fstab: existing},
		{name: "nothing to do keeps old owned lines", yaml: `mounts: []`, fstab: existing},
		{name: "null mount_default_fields", yaml: `mounts: [[vdc, /srv, null, null, 1, null]]
mount_default_fields: [null, null, ext4, "defaults", "0", null]`, wantErr: "field 5 is null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := yaml11.Load([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg := doc.(map[string]any)
			devs := standardDevices(t)

			fstabFile := filepath.Join(t.TempDir(), "fstab")
			if tt.fstab != "" {
				os.WriteFile(fstabFile, []byte(tt.fstab), 0o644)
			}
			var want struct {
				Fstab string
				Ran   []string
			}
			if tt.wantErr == "" {
				if err := json.Unmarshal(runOracle(t, devs.Dir, fstabFile, cfg, tt.meta, tt.systemd), &want); err != nil {
					t.Fatal(err)
				}
			}

			env := applytest.NewEnv(t, apply.Config(cfg))
			env.Sys.IsLive = true
			if tt.systemd {
				env.Root.MkdirAll("/run/systemd/system", 0o755, rootfs.Owner{})
			}
			if tt.fstab != "" {
				env.Root.WriteFile(FstabPath, []byte(tt.fstab), 0o644, rootfs.Owner{})
			}
			md := map[string]any{}
			for k, v := range tt.meta {
				md[k] = v
			}
			env.Seed = &seed.Seed{Metadata: map[string]any{"block-device-mapping": md}}
			host := Host{Devices: devs, ReadProc: func(string) ([]byte, error) { return nil, os.ErrNotExist }}
			err = Run(context.Background(), env.Env, host)
			got, _ := env.Root.ReadFile(FstabPath)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(want.Fstab, string(got)); diff != "" {
				t.Errorf("fstab (-cloud-init +seedinit):\n%s", diff)
			}
			if diff := cmp.Diff(want.Ran, env.Sys.Ran(), cmpEmpty); diff != "" {
				t.Errorf("commands (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.Transformer("empty", func(s []string) string { return strings.Join(s, "\n") })
