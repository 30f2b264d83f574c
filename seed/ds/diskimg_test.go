package ds

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/ds/dstest"
)

func TestOpenImage(t *testing.T) {
	long := strings.Repeat("x", 70000) // spans several clusters and sectors
	files := map[string]string{
		"meta-data":                           "instance-id: iid-1\n",
		"user-data":                           "#cloud-config\n",
		"openstack/2012-08-10/meta_data.json": `{"uuid": "a"}`,
		"openstack/latest/vendor_data2.json":  "{}",
		"openstack/content/0000":              long,
		"ec2/2009-04-04/meta-data.json":       "{}",
		"a-rather-long-file-name-for-fat.txt": "ok",
	}
	cases := []struct {
		name  string
		build func(t *testing.T) string
		label string
	}{
		{"iso rock ridge and joliet", func(t *testing.T) string { return dstest.ISO(t, "config-2", files, "-J", "-r") }, "config-2"},
		{"iso rock ridge", func(t *testing.T) string { return dstest.ISO(t, "cidata", files, "-r") }, "cidata"},
		{"iso joliet", func(t *testing.T) string { return dstest.ISO(t, "cidata", files, "-J") }, "cidata"},
		{"fat12", func(t *testing.T) string { return dstest.VFAT(t, "CIDATA", "1024", "12", files) }, "CIDATA"},
		{"fat16", func(t *testing.T) string { return dstest.VFAT(t, "config-2", "65536", "16", files) }, "config-2"},
		{"fat32", func(t *testing.T) string { return dstest.VFAT(t, "CONFIG-2", "65536", "32", files) }, "CONFIG-2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := openImageFile(t, tc.build(t))
			if fsys.Label != tc.label {
				t.Errorf("label %q, want %q", fsys.Label, tc.label)
			}
			for name, want := range files {
				got, err := fsys.ReadFile(name)
				if err != nil {
					t.Errorf("ReadFile %s: %v", name, err)
					continue
				}
				if string(got) != want {
					t.Errorf("ReadFile %s: got %d bytes, want %d", name, len(got), len(want))
				}
			}
			names, err := fsys.ReadDir("openstack")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"2012-08-10", "content", "latest"}, names); diff != "" {
				t.Errorf("ReadDir openstack (-want +got):\n%s", diff)
			}
			if _, err := fsys.ReadFile("nope"); err == nil {
				t.Error("ReadFile of a missing file succeeded")
			}
		})
	}
}

// The label scan reads every device even when the search's budget has run
// out: a slow disk ahead of the seed disk must not hide the seed.
func TestSysDevicesScanOutlastsTheBudget(t *testing.T) {
	iso := dstest.ISO(t, "cidata", map[string]string{"meta-data": "instance-id: i-1\n"})
	sysBlock, dev := t.TempDir(), t.TempDir()
	for _, name := range []string{"vda", "vdb"} {
		if err := os.Mkdir(filepath.Join(sysBlock, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dev, "vda"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(iso, filepath.Join(dev, "vdb")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	devs, err := ByLabel(ctx, &SysDevices{SysBlock: sysBlock, Dev: dev}, "cidata")
	if err != nil || len(devs) != 1 || devs[0].Path != filepath.Join(dev, "vdb") {
		t.Errorf("ByLabel after the budget: %v, %v; want %s", devs, err, filepath.Join(dev, "vdb"))
	}
}
