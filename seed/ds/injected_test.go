package ds

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds/dstest"
)

// injected is s's files as path → content.
func injected(s *seed.Seed) map[string]string {
	out := map[string]string{}
	for _, f := range s.Files {
		out[f.Path] = string(f.Content)
	}
	return out
}

// OpenStack's injected files on a config drive (ISO9660 as Nova makes it
// and FAT), as cloud-init's ConfigDrive reads them: each item with a path
// is read from its content_path below openstack/ and goes to its path,
// made absolute; an item without a path is passed over.
func TestConfigDriveInjectedFiles(t *testing.T) {
	files := []map[string]any{
		{"path": "/etc/fortinet/license.lic", "content_path": "/content/0000"},
		{"path": "etc/motd", "content_path": "content/0001"},
		{"content_path": "/content/0002"},
		{"path": "/etc/empty", "content_path": "/content/0003"},
	}
	content := map[string]string{"content/0000": "-----BEGIN FGT VM LICENSE-----\nsecret\n", "content/0001": "welcome\n", "content/0002": "orphan", "content/0003": ""}
	want := map[string]string{"/etc/fortinet/license.lic": content["content/0000"], "/etc/motd": "welcome\n", "/etc/empty": ""}
	for _, format := range []string{"iso", "vfat"} {
		t.Run(format, func(t *testing.T) {
			var img string
			if format == "iso" {
				img = dstest.ISO(t, "config-2", dstest.InjectedTree(files, content), "-J", "-r")
			} else {
				img = dstest.VFAT(t, "config-2", "65536", "", dstest.InjectedTree(files, content))
			}
			env := newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, "")
			s, err := configDrive{}.Fetch(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, injected(s)); diff != "" {
				t.Errorf("injected files (-want +got):\n%s", diff)
			}
			for _, f := range s.Files {
				if !strings.HasPrefix(f.Where, "/dev/sr0/openstack/content/") {
					t.Errorf("%s read from %q", f.Path, f.Where)
				}
			}
		})
	}
}

// The metadata service serves the same files at its content paths.
func TestOpenStackServiceInjectedFiles(t *testing.T) {
	tree := dstest.InjectedTree([]map[string]any{{"path": "/etc/license.lic", "content_path": "/content/0000"}}, map[string]string{"content/0000": "LICENSE"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openstack" {
			fmt.Fprintln(w, "latest")
			return
		}
		body, ok := tree[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	env := newTestEnv(t, nil, MapDMI{"product_name": "OpenStack Nova"}, "")
	env.Config.Datasource = map[string]map[string]any{"OpenStack": {"metadata_urls": []any{srv.URL}}}
	s, err := openStack{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"/etc/license.lic": "LICENSE"}, injected(s)); diff != "" {
		t.Errorf("injected files (-want +got):\n%s", diff)
	}
}

// A hostile or broken drive: a content_path that climbs out of the
// drive must read nothing outside it (cloud-init joins the pieces to the
// mount point, ".." included), a file that cannot be read breaks the
// drive as cloud-init's BrokenMetadata does, and a drive cannot make the
// search read without end.
func TestConfigDriveInjectedFilesHostile(t *testing.T) {
	t.Run("content_path out of the seed directory", func(t *testing.T) {
		env := newTestEnv(t, nil, nil, "")
		tree := dstest.InjectedTree([]map[string]any{{"path": "/etc/stolen", "content_path": "../../../../../../../../etc/shadow"}}, nil)
		files := map[string]string{"/etc/shadow": "root:$6$secret-hash:1::::::\n"}
		for name, c := range tree {
			files[configDriveSeedDir+"/"+name] = c
		}
		writeTarget(t, env, files)
		s, err := configDrive{}.Fetch(context.Background(), env)
		if s != nil {
			for _, f := range s.Files {
				if strings.Contains(string(f.Content), "secret-hash") {
					t.Fatalf("content_path read %s from outside the drive", f.Where)
				}
			}
		}
		if err == nil || !strings.Contains(err.Error(), "/etc/stolen") {
			t.Errorf("Fetch error = %v, want the drive refused, naming the file", err)
		}
	})
	t.Run("missing content", func(t *testing.T) {
		img := dstest.ISO(t, "config-2", dstest.InjectedTree([]map[string]any{{"path": "/etc/license.lic", "content_path": "/content/0009"}}, nil), "-J", "-r")
		_, err := configDrive{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err == nil || !strings.Contains(err.Error(), "/etc/license.lic") {
			t.Errorf("Fetch error = %v, want one naming the file", err)
		}
	})
	t.Run("no content_path", func(t *testing.T) {
		img := dstest.ISO(t, "config-2", dstest.InjectedTree([]map[string]any{{"path": "/etc/x"}}, nil), "-J", "-r")
		_, err := configDrive{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err == nil || !strings.Contains(err.Error(), "content path") {
			t.Errorf("Fetch error = %v, want one saying it has no content path", err)
		}
	})
	t.Run("files is not a list", func(t *testing.T) {
		md := `{"uuid": "i", "files": "/etc/x"}`
		img := dstest.ISO(t, "config-2", map[string]string{"openstack/latest/meta_data.json": md}, "-J", "-r")
		_, err := configDrive{}.Fetch(context.Background(), newTestEnv(t, FileDevices{"/dev/sr0": img}, nil, ""))
		if err == nil || !strings.Contains(err.Error(), "files") {
			t.Errorf("Fetch error = %v", err)
		}
	})
	t.Run("too many files", func(t *testing.T) {
		var items []map[string]any
		content := map[string]string{"content/0000": "x"}
		for i := 0; i <= maxInjectedFiles; i++ {
			items = append(items, map[string]any{"path": fmt.Sprintf("/etc/f%d", i), "content_path": "/content/0000"})
		}
		env := newTestEnv(t, nil, nil, "")
		files := map[string]string{}
		for name, c := range dstest.InjectedTree(items, content) {
			files[configDriveSeedDir+"/"+name] = c
		}
		writeTarget(t, env, files)
		_, err := configDrive{}.Fetch(context.Background(), env)
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("Fetch error = %v, want the drive refused", err)
		}
	})
}

// cloud-init's ConfigDrive as the oracle: the same drive's files, read by
// its read_v2 and written by its write_injected_files (with util.write_file
// recording rather than writing), are the ones seedinit reads, at the
// same paths.
func TestConfigDriveInjectedFilesOracle(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit.sources.DataSourceConfigDrive").Run(); err != nil {
		t.Skip("cloud-init oracle unavailable: cannot import cloudinit.sources.DataSourceConfigDrive (install Debian's cloud-init package)")
	}
	files := []map[string]any{
		{"path": "/etc/fortinet/license.lic", "content_path": "/content/0000"},
		{"path": "etc/motd", "content_path": "content/0001"},
		{"path": "/var/lib/x/y z", "content_path": "//content///0002"},
		{"content_path": "/content/0003"},
		{"path": "/etc/two", "content_path": "/content/0000", "extra": 1},
	}
	content := map[string]string{"content/0000": "L1\n", "content/0001": "welcome\n", "content/0002": "spaced", "content/0003": "orphan"}
	tree := dstest.InjectedTree(files, content)
	dir := dstest.WriteTree(t, tree)
	script := `
import json, sys
from cloudinit.sources.helpers import openstack
from cloudinit.sources import DataSourceConfigDrive as cd
from cloudinit import util
res = openstack.ConfigDriveReader(sys.argv[1]).read_v2()
written = {}
def record(filename, content, mode=0o644, **kw):
    written[filename] = {"content": content.decode() if isinstance(content, bytes) else content, "mode": mode}
util.write_file = record
cd.write_injected_files(res["files"])
json.dump(written, sys.stdout)
`
	out, err := exec.Command(py, "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("cloud-init: %v", err)
	}
	var oracle map[string]struct {
		Content string `json:"content"`
		Mode    int    `json:"mode"`
	}
	if err := json.Unmarshal(out, &oracle); err != nil {
		t.Fatalf("cloud-init's answer %s: %v", out, err)
	}
	env := newTestEnv(t, nil, nil, "")
	seedFiles := map[string]string{}
	for name, c := range tree {
		seedFiles[configDriveSeedDir+"/"+name] = c
	}
	writeTarget(t, env, seedFiles)
	s, err := configDrive{}.Fetch(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var paths []string
	for p, w := range oracle {
		want[p] = w.Content
		paths = append(paths, p)
		if w.Mode != 0o660 {
			t.Errorf("cloud-init writes %s with mode %o; the README says 0660", p, w.Mode)
		}
	}
	sort.Strings(paths)
	if diff := cmp.Diff(want, injected(s)); diff != "" {
		t.Errorf("injected files (-cloud-init +seedinit):\n%s", diff)
	}
	if len(paths) != 4 {
		t.Errorf("cloud-init wrote %q", paths)
	}
}
