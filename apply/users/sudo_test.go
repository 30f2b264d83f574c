package users

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
)

func TestSudoRules(t *testing.T) {
	tests := []struct {
		name    string
		value   any
		want    []string
		wantErr bool
	}{
		{"string", "ALL=(ALL) NOPASSWD:ALL", []string{"ALL=(ALL) NOPASSWD:ALL"}, false},
		{"list", []any{"ALL=(ALL) ALL", "ALL=(root) /bin/ls"}, []string{"ALL=(ALL) ALL", "ALL=(root) /bin/ls"}, false},
		{"true is not a rule", true, nil, true},
		{"mapping", map[string]any{"a": "b"}, nil, true},
		{"line break", "ALL=(ALL) ALL\nmallory ALL=(ALL) ALL", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SudoRules(tt.value)
			if (err != nil) != tt.wantErr {
				t.Fatalf("SudoRules error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SudoRules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureSudoIncludeDir(t *testing.T) {
	pinClock(t)
	header := "# Added by seedinit v. " + apply.Version + " on Sun, 22 Nov 2026 12:00:00 +0000"
	tests := []struct {
		name    string
		sudoers *string
		want    string
	}{
		{"missing sudoers is created", nil,
			"# See sudoers(5) for more information on \"#include\" directives:\n\n" + header + "\n#includedir /etc/sudoers.d\n"},
		{"@includedir is enough", ptr("root ALL=(ALL) ALL\n@includedir /etc/sudoers.d\n"), "root ALL=(ALL) ALL\n@includedir /etc/sudoers.d\n"},
		{"#includedir with trailing slash is enough", ptr("#includedir /etc/sudoers.d/\n"), "#includedir /etc/sudoers.d/\n"},
		{"other includedir gets ours appended", ptr("root ALL=(ALL) ALL\n#includedir /etc/other\n"),
			"root ALL=(ALL) ALL\n#includedir /etc/other\n\n" + header + "\n#includedir /etc/sudoers.d\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.sudoers != nil {
				writeTree(t, dir, map[string]string{"etc/sudoers": *tt.sudoers})
			}
			root := openRoot(t, dir)
			for range 2 {
				if err := EnsureSudoIncludeDir(root, "/etc/sudoers.d"); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, readFile(t, dir, "etc/sudoers")); diff != "" {
				t.Errorf("/etc/sudoers (-want +got):\n%s", diff)
			}
			fi, err := os.Stat(filepath.Join(dir, "etc/sudoers"))
			if err != nil || fi.Mode().Perm() != 0o440 {
				t.Errorf("/etc/sudoers mode: %v %v, want 0440", fi.Mode(), err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestWriteSudoRulesReplacesOwnBlock(t *testing.T) {
	pinClock(t)
	dir := debianRoot(t)
	root := openRoot(t, dir)
	steps := []struct {
		user  string
		rules []string
	}{
		{"bob", []string{"ALL=(ALL) ALL"}},
		{"eve", []string{"ALL=(ALL) NOPASSWD:ALL"}},
		{"bob", []string{"ALL=(ALL) NOPASSWD:ALL", "ALL=(root) /bin/ls"}},
		{"eve", []string{"ALL=(ALL) NOPASSWD:ALL"}},
	}
	for _, s := range steps {
		if err := WriteSudoRules(root, s.user, s.rules, ""); err != nil {
			t.Fatal(err)
		}
	}
	want := "# Created by seedinit v. " + apply.Version + " on Sun, 22 Nov 2026 12:00:00 +0000\n\n" +
		"# User rules for bob\nbob ALL=(ALL) NOPASSWD:ALL\nbob ALL=(root) /bin/ls\n\n" +
		"# User rules for eve\neve ALL=(ALL) NOPASSWD:ALL\n"
	if diff := cmp.Diff(want, readFile(t, dir, "etc/sudoers.d/90-cloud-init-users")); diff != "" {
		t.Errorf("sudoers file (-want +got):\n%s", diff)
	}
}

// TestWriteSudoRulesMatchesCloudInit has cloud-init's own
// Distro.write_sudo_rules write the same rules into a scratch file and
// compares, header line aside (it names the writer and the time).
func TestWriteSudoRulesMatchesCloudInit(t *testing.T) {
	python := pythonWith(t, "cloudinit.distros.debian")
	rules := []struct {
		user  string
		rules any
	}{
		{"bob", "ALL=(ALL) NOPASSWD:ALL"},
		{"eve", []any{"ALL=(ALL) ALL", "ALL=(root) NOPASSWD:/usr/bin/apt"}},
		{"debian", []any{"ALL=(ALL) NOPASSWD:ALL"}},
	}
	scratch := filepath.Join(t.TempDir(), "90-cloud-init-users")
	script := `
import json, sys
from cloudinit import util
from cloudinit.distros import debian
util.make_header = lambda *a, **k: "# HEADER"
d = debian.Distro("debian", {}, None)
# Never touch the host's /etc/sudoers: the include is tested separately.
d.ensure_sudo_dir = lambda *a, **k: None
for user, rules in json.loads(sys.argv[2]):
    d.write_sudo_rules(user, rules, sys.argv[1])
`
	var pairs [][2]any
	dir := debianRoot(t)
	root := openRoot(t, dir)
	for _, r := range rules {
		list, err := SudoRules(r.rules)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSudoRules(root, r.user, list, ""); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, [2]any{r.user, r.rules})
	}
	input, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-W", "ignore", "-c", script, scratch, string(input)).CombinedOutput()
	if err != nil {
		t.Fatalf("cloud-init write_sudo_rules: %v\n%s", err, out)
	}
	want, err := os.ReadFile(scratch)
	if err != nil {
		t.Fatal(err)
	}
	got := readFile(t, dir, "etc/sudoers.d/90-cloud-init-users")
	_, gotBody, _ := strings.Cut(got, "\n")
	_, wantBody, _ := strings.Cut(string(want), "\n")
	if diff := cmp.Diff(wantBody, gotBody); diff != "" {
		t.Errorf("sudoers body differs from cloud-init's (-cloud-init +ours):\n%s", diff)
	}
	fi, err := os.Stat(scratch)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o440 {
		t.Errorf("cloud-init's mode is %v; the test assumes 0440", fi.Mode().Perm())
	}
}
