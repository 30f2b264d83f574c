package schema

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/rootfs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

// TestFormatGolden pins both outputs. The annotated ones were checked by
// hand against `cloud-init schema --annotate` of 22.4.2, which prints the
// same text (it crashes instead on an error inside a list item).
func TestFormatGolden(t *testing.T) {
	for _, name := range []string{
		"deprecated-with-error.yaml",
		"deprecated-apt-update.yaml",
		"invalid-bool.yaml",
		"invalid-no-header.yaml",
		"invalid-empty.yaml",
		"invalid-not-yaml.yaml",
		"invalid-users-item.yaml",
		"invalid-merge-alias.yaml",
		"valid-hostname.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Validate(data, name)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", rep.Format(false))
			golden(t, name+".annotated", rep.Format(true))
		})
	}
}

func TestProblemsPlaced(t *testing.T) {
	tests := []struct {
		name, config string
		want         []Problem
		wantDeps     []Problem
	}{
		{
			name:   "nested key",
			config: "#cloud-config\nntp:\n  enabled: true\n  servers: one\n",
			want:   []Problem{{Path: "ntp.servers", Line: 4, Message: "'one' is not of type 'array'"}},
		},
		{
			name:   "list item",
			config: "#cloud-config\nwrite_files:\n  - path: /a\n  - content: x\n",
			want:   []Problem{{Path: "write_files.1", Line: 4, Message: "'path' is a required property"}},
		},
		{
			name:     "deprecation and error sorted by path",
			config:   "#cloud-config\nzzz: 1\napt_upgrade: true\npackage_update: 3\n",
			want:     []Problem{{Path: "package_update", Line: 4, Message: "3 is not of type 'boolean'"}},
			wantDeps: []Problem{{Path: "apt_upgrade", Line: 3, Message: "DEPRECATED: Dropped after April 2027. Use ``package_upgrade``. Default: ``false``"}},
		},
		{
			name:   "timestamp is not a string",
			config: "#cloud-config\ntimezone: 2020-01-01\n",
			want:   []Problem{{Path: "timezone", Line: 2, Message: "datetime.date(2020, 1, 1) is not of type 'string'"}},
		},
		{
			name:   "float is not an integer in draft 4",
			config: "#cloud-config\npower_state:\n  mode: halt\n  delay: 1.0\n",
			want:   []Problem{{Path: "power_state.delay", Line: 4, Message: "1.0 is not valid under any of the given schemas"}},
		},
		{
			name:   "boolean is not one of 0 and 1",
			config: "#cloud-config\nresize_rootfs: 1\n",
			want:   []Problem{{Path: "resize_rootfs", Line: 2, Message: "1 is not one of [True, False, 'noblock']"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Validate([]byte(tc.config), "f")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rep.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDeps, rep.Deprecations); diff != "" {
				t.Errorf("deprecations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPyRepr(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"it's", `"it's"`},
		{`both ' and "`, `'both \' and "'`},
		{"tab\tnl\n", `'tab\tnl\n'`},
		{"é\u200b", `'é\u200b'`},
		{1e16, "1e+16"},
		{2.5, "2.5"},
		{[]any{nil, true, int64(3)}, "[None, True, 3]"},
	}
	r := &reprer{}
	for _, tc := range tests {
		if got := r.repr(tc.in, ""); got != tc.want {
			t.Errorf("repr(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValidateSystem(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"var/lib/cloud/instances/i-1/cloud-config.txt": "#cloud-config\npackage_update: maybe\n",
		"etc/cloud/cloud.cfg":                          "users: [default]\ndisable_root: true\n",
		"etc/cloud/cloud.cfg.d/90-x.cfg":               "disable_root: sometimes\n",
		"etc/cloud/cloud.cfg.d/README":                 "not a config\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/var/lib/cloud/instances/i-1", filepath.Join(dir, "var/lib/cloud/instance")); err != nil {
		t.Fatal(err)
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := ValidateSystem(root)
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct {
		Name  string
		Valid bool
	}
	var got []verdict
	for _, r := range reps {
		got = append(got, verdict{r.Name, r.Valid()})
	}
	want := []verdict{
		{UserDataPath, false},
		{"/etc/cloud/cloud.cfg", true},
		{"/etc/cloud/cloud.cfg.d/90-x.cfg", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzValidate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.yaml"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("#cloud-config\na: &a [*a]\n"))
	f.Add([]byte("#cloud-config\nusers:\n  - {name: x, groups: {a: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Validate(data, "fuzz")
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		_ = rep.Format(false)
		_ = rep.Format(true)
	})
}
