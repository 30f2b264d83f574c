package ds

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// A cidata or config-2 disk's bootstrap/ tree comes with the seed, with
// the modes and owners Rock Ridge records; a FAT disk's with 0644 and
// 0755, root's.
func TestBootstrapTreeRead(t *testing.T) {
	files := map[string]string{
		"meta-data": "instance-id: i-boot\n", "user-data": "#cloud-config\n",
		"bootstrap/config/init-cfg.txt": "type=dhcp-client\n", "bootstrap/license/authcodes": "I1234567",
		"bootstrap/content/panupv2-all-contents-8000-1234": strings.Repeat("c", 5000),
	}
	modes := map[string]os.FileMode{"bootstrap/config/init-cfg.txt": 0o640, "bootstrap/license": 0o700, "bootstrap/license/authcodes": 0o600}
	owners := map[string][2]int{"bootstrap/config/init-cfg.txt": {0, 993}}
	type entry struct {
		Dir      bool
		Mode     uint32
		UID, GID int
		Size     int
	}
	got := func(s *seed.Seed) map[string]entry {
		out := map[string]entry{}
		for _, f := range s.Bootstrap {
			out[f.Path] = entry{f.Dir, f.Mode, f.UID, f.GID, len(f.Content)}
		}
		return out
	}
	t.Run("NoCloud ISO", func(t *testing.T) {
		img := dstest.RockRidgeISO(t, "cidata", files, modes, owners)
		s, err := noCloud{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/vdb": img}, nil, ""))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]entry{
			"config": {Dir: true, Mode: 0o755}, "config/init-cfg.txt": {Mode: 0o640, GID: 993, Size: 17},
			"content": {Dir: true, Mode: 0o755}, "content/panupv2-all-contents-8000-1234": {Mode: 0o644, Size: 5000},
			"license": {Dir: true, Mode: 0o700}, "license/authcodes": {Mode: 0o600, Size: 8},
		}
		if diff := cmp.Diff(want, got(s)); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
	})
	t.Run("config drive FAT", func(t *testing.T) {
		tree := openStackTree(t, "latest")
		tree["bootstrap/config/init-cfg.txt"] = "x"
		img := dstest.VFAT(t, "config-2", "65536", "", tree)
		s, err := configDrive{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]entry{"config": {Dir: true, Mode: 0o755, UID: -1, GID: -1}, "config/init-cfg.txt": {Mode: 0o644, UID: -1, GID: -1, Size: 1}}
		if diff := cmp.Diff(want, got(s)); diff != "" {
			t.Errorf("tree (-want +got):\n%s", diff)
		}
	})
	t.Run("no tree", func(t *testing.T) {
		img := dstest.ISO(t, "cidata", map[string]string{"meta-data": "instance-id: i\n", "user-data": ""}, "-J", "-r")
		s, err := noCloud{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/vdb": img}, nil, ""))
		if err != nil || s.Bootstrap != nil {
			t.Errorf("%v %+v", err, s.Bootstrap)
		}
	})
}

// A tree over the bound breaks its disk rather than reaching the image's
// agent half copied.
func TestBootstrapTreeTooBig(t *testing.T) {
	big := strings.Repeat("x", 15<<20)
	files := map[string]string{"meta-data": "instance-id: i\n", "user-data": ""}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		files["bootstrap/software/"+n] = big
	}
	img := dstest.ISO(t, "cidata", files, "-J", "-r")
	_, err := noCloud{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/vdb": img}, nil, ""))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("Fetch = %v", err)
	}
}
