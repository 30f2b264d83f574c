package mounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func TestSanitize(t *testing.T) {
	r := Resolver{
		Devices: standardDevices(t),
		Aliases: map[string]string{"data": "vdc"},
		MetaDevice: func(name string) string {
			return map[string]string{"ephemeral0": "sdb", "swap": "/dev/xvdd"}[name]
		},
	}
	tests := []struct{ in, want string }{
		{"sdb", "/dev/sdb1"},
		{"/dev/sdb", "/dev/sdb1"},
		{"vdc", "/dev/vdc"},
		{"xvdd.2", ""}, // the short-name rule looks at the name as written
		{"/dev/xvdd.2", "/dev/xvdd2"},
		{"xvdd.3", ""},
		{"/dev/nvme0n1", "/dev/nvme0n1p1"},
		{"nvme0n1", "nvme0n1"}, // not a short name, but in /sys/block
		{"ephemeral", "/dev/sdb1"},
		{"ephemeral0", "/dev/sdb1"},
		{"ephemeral1", ""},
		{"swap", "/dev/xvdd1"},
		{"data", "vdc"},
		{"sdz", ""},
		{"LABEL=foo", ""},
		{"UUID=0b5f", ""},
		{"nfs.example:/export", "nfs.example:/export"},
		{"sr0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := r.Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	nobootwait := builtinDefaults(false)
	tests := []struct {
		name    string
		yaml    string
		fstab   string
		meta    map[string]string
		want    []Entry
		wantErr int
	}{
		{
			name: "cloud-init example",
			yaml: `mounts:
  - [ /dev/ephemeral0, /mnt, auto, "defaults,noexec" ]
  - [ sdb, /opt/data ]
  - [ vdc, /opt/data, auto, "defaults,nofail", "0", "0" ]`,
			want: []Entry{
				{"/dev/ephemeral0", "/mnt", "auto", "defaults,noexec", "0", "2"},
				{"/dev/sdb1", "/opt/data", "auto", "defaults,nobootwait", "0", "2"},
				{"/dev/vdc", "/opt/data", "auto", "defaults,nofail", "0", "0"},
			},
		},
		{
			name: "unquoted numbers and null fields take defaults",
			yaml: `mounts:
  - [ vdc, /srv, null, null, 1, 0 ]`,
			want: []Entry{{"/dev/vdc", "/srv", "auto", "defaults,nobootwait", "1", "0"}},
		},
		{
			name: "null mount point removes earlier entries of the device",
			yaml: `mounts:
  - [ vdc, /srv ]
  - [ sdb, /data ]
  - [ /dev/vdc, null ]`,
			want: []Entry{{"/dev/sdb1", "/data", "auto", "defaults,nobootwait", "0", "2"}},
		},
		{
			name: "ephemeral and swap defaults from metadata",
			yaml: `mounts: []`,
			meta: map[string]string{"ephemeral0": "sdb", "swap": "xvdd"},
			want: []Entry{
				{"/dev/sdb1", "/mnt", "auto", "defaults,nobootwait", "0", "2"},
				{"/dev/xvdd1", "none", "swap", "sw", "0", "0"},
			},
		},
		{
			name: "ephemeral0 disabled with null",
			yaml: `mounts: [[ephemeral0, null]]`,
			meta: map[string]string{"ephemeral0": "sdb"},
			want: nil,
		},
		{
			name:  "device already in a kept fstab line",
			yaml:  `mounts: [[sdb, /data], [vdc, /srv]]`,
			fstab: "/dev/sdb1 /data ext4 defaults 0 0\n",
			want:  []Entry{{"/dev/vdc", "/srv", "auto", "defaults,nobootwait", "0", "2"}},
		},
		{
			name: "labels and missing devices are written as given",
			yaml: `mounts: [["LABEL=data", /data, ext4], [sdz, /z]]`,
			want: []Entry{
				{"LABEL=data", "/data", "ext4", "defaults,nobootwait", "0", "2"},
				{"sdz", "/z", "auto", "defaults,nobootwait", "0", "2"},
			},
		},
		{
			name:    "bad items are skipped",
			yaml:    `mounts: ["sdb /data", [], [vdc, {a: 1}], [vdc, /srv]]`,
			want:    []Entry{{"/dev/vdc", "/srv", "auto", "defaults,nobootwait", "0", "2"}},
			wantErr: 3,
		},
		{
			name: "network device",
			yaml: `mounts: [["nfs:/export", /nfs, nfs, "rw"]]`,
			want: []Entry{{"nfs:/export", "/nfs", "nfs", "rw", "0", "2"}},
		},
	}
	devs := standardDevices(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := yaml11.Load([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := doc.(map[string]any)["mounts"].([]any)
			r := Resolver{Devices: devs, MetaDevice: func(n string) string { return tt.meta[n] }}
			got, errs := Plan(raw, nobootwait, ParseFstab(tt.fstab), r, nil)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if len(errs) != tt.wantErr {
				t.Errorf("Plan errors = %v, want %d", errs, tt.wantErr)
			}
		})
	}
}

func TestParseFstab(t *testing.T) {
	text := "# /etc/fstab\nUUID=abc / ext4 defaults 0 1\n\t/dev/sdb1\t/mnt\tauto\tdefaults,nofail,comment=cloudconfig\t0\t2\n/swap.img none swap sw 0 0\n"
	got := ParseFstab(text)
	want := Fstab{
		Kept:  []string{"# /etc/fstab", "UUID=abc / ext4 defaults 0 1", "/swap.img none swap sw 0 0"},
		Owned: []string{"\t/dev/sdb1\t/mnt\tauto\tdefaults,nofail,comment=cloudconfig\t0\t2"},
		DeviceLines: map[string]string{
			"#":         "# /etc/fstab",
			"UUID=abc":  "UUID=abc / ext4 defaults 0 1",
			"/swap.img": "/swap.img none swap sw 0 0",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseFstab (-want +got):\n%s", diff)
	}
}

func TestAllMountedSeesTheTargetFromTheHost(t *testing.T) {
	dir := t.TempDir()
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, d := range []string{"srv/data", "srv/with space", "srv/other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The target's /srv/link is a symlink to /srv/data: the kernel's mount
	// point is where it leads.
	if err := os.Symlink("/srv/data", filepath.Join(dir, "srv/link")); err != nil {
		t.Fatal(err)
	}
	esc := strings.ReplaceAll(dir, " ", `\040`)
	mountinfo := []byte(`22 1 0:21 / / rw - rootfs rootfs rw
30 22 253:1 / ` + esc + ` rw - ext4 /dev/vda1 rw
31 30 253:2 / ` + esc + `/srv/data rw - ext4 /dev/vdc rw
32 30 0:5 / ` + esc + `/srv/with\040space rw - tmpfs tmpfs rw
34 22 0:7 / /srv/other rw - proc proc rw
`)
	for _, tt := range []struct {
		dirs []string
		want bool
	}{
		{[]string{"/srv/data", "/srv/with space"}, true},
		{[]string{"/srv/link"}, true},
		// Mounted on the host's /srv/other, not on the target's.
		{[]string{"/srv/data", "/srv/other"}, false},
		{[]string{"/srv/missing"}, false},
	} {
		if got := allMounted(root, tt.dirs, mountinfo); got != tt.want {
			t.Errorf("allMounted(%q) = %v, want %v", tt.dirs, got, tt.want)
		}
	}
	if allMounted(root, []string{"/srv/data"}, []byte("not mountinfo\n")) {
		t.Error("unreadable mountinfo counts as mounted")
	}
}
