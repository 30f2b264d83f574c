package system

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

var resolvCases = []struct {
	name, yaml string
}{
	{"full", "nameservers: [8.8.8.8, 1.1.1.1]\nsearchdomains: [a.com, b.com]\ndomain: x.com\nsortlist: [10.0.0.1/255, 10.0.0.2]\noptions: {rotate: true, timeout: 1, ndots: 2, debug: false}"},
	{"nameservers", "nameservers: [8.8.8.8]"},
	{"domain", "domain: example.org"},
	{"search", "searchdomains: [a]"},
	{"sortlist", "sortlist: [a]"},
	{"empty", "{}"},
	{"nameservers options", "nameservers: ['1']\noptions: {x: 1}"},
	{"sortlist options", "sortlist: [a]\noptions: {x: 1}"},
	{"false flag only", "domain: d\noptions: {x: false}"},
	{"flag only", "options: {rotate: true}"},
	{"prefix keys", "options: {a-b: 1, a: 2, attempts: 3}"},
}

func TestRenderResolvConfMatchesCloudInit(t *testing.T) {
	const script = `
import sys, json, tempfile
from cloudinit.config import cc_resolv_conf
out = tempfile.mktemp()
cc_resolv_conf.generate_resolv_conf('/etc/cloud/templates/resolv.conf.tmpl', json.loads(sys.argv[1]), out)
sys.stdout.write(open(out).read())
`
	for _, tc := range resolvCases {
		t.Run(tc.name, func(t *testing.T) {
			params := config(t, tc.yaml)
			js, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			want := withoutComments(oracle(t, script, string(js)))
			got, err := RenderResolvConf(params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, withoutComments(got)); diff != "" {
				t.Errorf("resolv.conf differs from cloud-init's (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestResolvConfModule(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		existing func(dir string)
		skipped  bool
		warned   bool
		want     string
	}{
		{name: "no key", yaml: "resolv_conf: {nameservers: [1.1.1.1]}", skipped: true},
		{name: "false", yaml: "manage_resolv_conf: off\nresolv_conf: {nameservers: [1.1.1.1]}", skipped: true},
		{name: "no settings", yaml: "manage_resolv_conf: true", warned: true},
		{name: "written", yaml: "manage_resolv_conf: yes\nresolv_conf: {nameservers: [1.1.1.1]}", want: resolvHeader + "nameserver 1.1.1.1\n\n\n"},
		{
			name: "link replaced", yaml: "manage_resolv_conf: true\nresolv_conf: {domain: d}",
			existing: func(dir string) {
				os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
				os.MkdirAll(filepath.Join(dir, "run/systemd/resolve"), 0o755)
				os.WriteFile(filepath.Join(dir, "run/systemd/resolve/stub-resolv.conf"), []byte("stub\n"), 0o644)
				os.Symlink("../run/systemd/resolve/stub-resolv.conf", filepath.Join(dir, "etc/resolv.conf"))
			},
			want: resolvHeader + "domain d\n\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.existing != nil {
				tc.existing(dir)
			}
			for run := 0; run < 2; run++ {
				env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
				err := runResolvConf(context.Background(), env.Env)
				if tc.skipped {
					if !errors.Is(err, apply.ErrSkipped) {
						t.Fatalf("got %v, want skipped", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.warned {
					if len(env.Warnings()) != 1 {
						t.Errorf("warnings = %q, want one", env.Warnings())
					}
					return
				}
			}
			if diff := cmp.Diff(tc.want, readFile(t, dir, "etc/resolv.conf")); diff != "" {
				t.Errorf("resolv.conf (-want +got):\n%s", diff)
			}
			if fi, err := os.Lstat(filepath.Join(dir, "etc/resolv.conf")); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("resolv.conf is not a regular file: %v %v", fi, err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "run/systemd/resolve/stub-resolv.conf")); err == nil && string(b) != "stub\n" {
				t.Errorf("the link's target was written through: %q", b)
			}
		})
	}
}

func TestRenderResolvConfBadOption(t *testing.T) {
	_, err := RenderResolvConf(config(t, "options: {x: [1]}\nnameservers: {a: 1}"))
	if err == nil {
		t.Fatal("want an error for a list option value and a mapping of nameservers")
	}
}
