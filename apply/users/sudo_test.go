package users

import (
	"encoding/json"
	"math/rand/v2"
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

// referenceSudoers is WriteSudoRules' edit as it was, one user at a time
// on the whole text: the batch must give the same file.
func referenceSudoers(data []byte, exists bool, user string, rules []string) ([]byte, bool) {
	block := []string{userRulesPrefix + user}
	for _, r := range rules {
		block = append(block, user+" "+r)
	}
	if !exists {
		return []byte(header("Created") + "\n\n" + strings.Join(block, "\n") + "\n"), true
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	start := -1
	for i, l := range lines {
		if l == block[0] {
			start = i
			break
		}
	}
	var updated []string
	if start < 0 {
		updated = append(append(lines, ""), block...)
	} else {
		end := start + 1
		for end < len(lines) && lines[end] != "" && !strings.HasPrefix(lines[end], userRulesPrefix) {
			end++
		}
		updated = append(append(append([]string{}, lines[:start]...), block...), lines[end:]...)
	}
	return []byte(strings.Join(updated, "\n") + "\n"), true
}

// The rules of many users, put in one pass, make the file that putting
// them one user at a time made, whatever the file held before: blocks of
// users given twice, foreign lines, and users whose names turn a rule
// into a header.
func TestSudoRulesBatchMatchesOneByOne(t *testing.T) {
	pinClock(t)
	users := []string{"alice", "bob", "carol", "#", "#x", "bo"}
	rules := []string{"ALL=(ALL) ALL", "User rules for bob", "User rules for alice", "ALL=(root) NOPASSWD:/bin/true"}
	starts := []struct {
		name   string
		data   string
		exists bool
	}{
		{"no file", "", false},
		{"empty file", "", true},
		{"foreign lines", "Defaults env_reset\n\n# User rules for bob\nbob old rule\n# User rules for alice\nalice x\n\nroot ALL=(ALL) ALL\n", true},
		{"no final newline", "# User rules for carol\ncarol y", true},
	}
	for _, start := range starts {
		t.Run(start.name, func(t *testing.T) {
			for seed := range uint64(200) {
				rng := rand.New(rand.NewPCG(seed, 3))
				var blocks []SudoBlock
				for range 1 + rng.IntN(8) {
					b := SudoBlock{User: users[rng.IntN(len(users))]}
					for range rng.IntN(3) {
						b.Rules = append(b.Rules, rules[rng.IntN(len(rules))])
					}
					blocks = append(blocks, b)
				}
				want, exists := []byte(start.data), start.exists
				for _, b := range blocks {
					want, exists = referenceSudoers(want, exists, b.User, b.Rules)
				}
				if got := sudoersWith([]byte(start.data), start.exists, blocks); got != string(want) {
					t.Fatalf("seed %d, blocks %q:\none by one:\n%s\nin one pass:\n%s", seed, blocks, want, got)
				}
			}
		})
	}
}
