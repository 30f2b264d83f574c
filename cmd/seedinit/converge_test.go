package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/stages"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// stopAfter is set by a test to the context cancel that the "test_crash"
// module calls: a run stopped there is a run that died half-way.
var stopAfter context.CancelFunc

func init() {
	apply.Register(apply.Module{Name: "test_crash", Frequency: apply.PerBoot, Run: func(ctx context.Context, env *apply.Env) error {
		if stopAfter != nil {
			stopAfter()
		}
		return nil
	}})
}

// A run that stops half-way (after users and files, before ssh and
// passwords) followed by a full run must leave the same root as one clean
// run: nothing duplicated, nothing missing.
func TestApplyAfterCrashConverges(t *testing.T) {
	sd, err := seed.LoadNoCloudDir("../../images/examples/appliance")
	if err != nil {
		t.Fatal(err)
	}
	userData := strings.Replace(string(sd.UserData), "#cloud-config\n",
		"#cloud-config\ncloud_init_modules: [write_files, set_hostname, update_etc_hosts, users_groups, test_crash, ssh, set_passwords]\n", 1)
	sd.UserData = []byte(userData)

	runAll := func(dir string, crash bool) {
		t.Helper()
		root, err := rootfs.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopAfter = nil
		if crash {
			stopAfter = cancel
		}
		if _, err := stages.Run(ctx, stages.Options{Root: root, Seed: sd, Sys: &applytest.FakeSystem{}}); err != nil {
			t.Fatal(err)
		}
	}
	clean := newTargetRoot(t)
	runAll(clean, false)

	crashed := newTargetRoot(t)
	runAll(crashed, true)
	if _, err := os.Stat(filepath.Join(crashed, "etc/ssh/ssh_host_ed25519_key")); err == nil {
		t.Fatal("the stopped run went past its stop: the test proves nothing")
	}
	runAll(crashed, false)

	if d := cmp.Diff(digest(t, clean), digest(t, crashed)); d != "" {
		t.Errorf("stopped+rerun root differs from a clean run (-clean +rerun):\n%s", d)
	}
}

// digest lists a root's files with mode and a content hash, leaving out
// what differs by nature between two runs: generated host keys, password
// salts, timestamps in state and logs.
func digest(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case strings.HasPrefix(rel, "var/lib/cloud"), strings.HasPrefix(rel, "run/"), strings.HasPrefix(rel, "var/log"),
			strings.HasPrefix(rel, "etc/ssh/ssh_host_"), strings.HasSuffix(rel, "-"):
			return nil
		}
		info, _ := d.Info()
		line := fmt.Sprintf("%s %v", rel, info.Mode())
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			if rel == "etc/shadow" {
				b = []byte(maskHashes(string(b)))
			}
			if rel == "etc/sudoers.d/90-cloud-init-users" || rel == "etc/hosts" || rel == "etc/sudoers" {
				b = []byte(dropDateLines(string(b)))
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out = append(out, line)
		return nil
	})
	sort.Strings(out)
	return out
}

func maskHashes(shadow string) string {
	var lines []string
	for _, l := range strings.Split(shadow, "\n") {
		f := strings.Split(l, ":")
		if len(f) > 2 && strings.HasPrefix(f[1], "$6$") {
			f[1] = "$6$<salted>"
		}
		lines = append(lines, strings.Join(f, ":"))
	}
	return strings.Join(lines, "\n")
}

func dropDateLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, " on ") || !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
