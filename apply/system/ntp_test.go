package system

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

// TestRenderNTPConfigMatchesCloudInit renders each client's config with
// cloud-init's write_ntp_config_template and its own template and
// compares everything but the comments, which are our own words.
func TestRenderNTPConfigMatchesCloudInit(t *testing.T) {
	const script = `
import sys, json, tempfile
from cloudinit.config import cc_ntp
a = json.loads(sys.argv[1])
out = tempfile.mktemp()
cc_ntp.write_ntp_config_template(a['distro'], service_name=a['service'], servers=a['servers'], pools=a['pools'], path=out, template_fn='/etc/cloud/templates/' + a['template'] + '.tmpl')
sys.stdout.write(open(out).read())
`
	lists := []struct {
		name           string
		servers, pools []string
	}{
		{"both", []string{"ntp.a", "10.0.0.1"}, []string{"0.int.pool.ntp.org", "1.int.pool.ntp.org"}},
		{"servers", []string{"ntp.a"}, nil},
		{"pools", nil, []string{"p1"}},
		{"defaults", nil, nil},
	}
	clients := []struct {
		distro, client, template string
	}{
		{"debian", "chrony", "chrony.conf.debian"},
		{"debian", "ntp", "ntp.conf.debian"},
		{"alpine", "chrony", "chrony.conf.alpine"},
		{"alpine", "ntp", "ntp.conf.alpine"},
		{"debian", "systemd-timesyncd", "timesyncd.conf"},
		{"debian", "openntpd", "ntpd.conf.openbsd"},
	}
	for _, c := range clients {
		for _, l := range lists {
			t.Run(c.distro+"/"+c.client+"/"+l.name, func(t *testing.T) {
				client := ntpClients(c.distro)[c.client]
				args, _ := json.Marshal(map[string]any{
					"distro": c.distro, "service": client.Service, "template": c.template,
					"servers": nonNil(l.servers), "pools": nonNil(l.pools),
				})
				want := directives(oracle(t, script, string(args)))
				out, err := RenderNTPConfig(client, c.distro, l.servers, l.pools)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, directives(string(out))); diff != "" {
					t.Errorf("%s config differs from cloud-init's (-cloud-init +seedinit):\n%s", c.client, diff)
				}
			})
		}
	}
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// directives keeps the lines a client reads: no comments (bar the
// "# pools"/"# servers" markers cloud-init emits), no blank lines, and no
// trailing comments.
func directives(s string) []string {
	var out []string
	for _, l := range strings.Split(withoutComments(s), "\n") {
		if i := strings.Index(l, "  "); i > 0 && strings.Contains(l[i:], "#") {
			l = strings.TrimSpace(l[:i])
		}
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestNTPModule(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		yaml    string
		path    string
		want    []string // directive lines expected in path
		skipped bool
		warns   int
		wantErr bool
	}{
		{name: "absent", yaml: "{}", skipped: true},
		{name: "disabled", yaml: "ntp: {enabled: false}", skipped: true},
		{
			name: "auto picks installed chrony on debian", files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/chronyd*": ""},
			yaml: "ntp: {servers: [10.0.0.1]}", path: "etc/chrony/chrony.conf",
			want: []string{"# servers", "server 10.0.0.1 iburst"},
		},
		{
			name: "auto picks timesyncd when only it is installed", files: map[string]string{"etc/os-release": "ID=ubuntu\nID_LIKE=debian\n", "lib/systemd/systemd-timesyncd*": ""},
			yaml: "ntp: {pools: [p]}", path: "etc/systemd/timesyncd.conf.d/cloud-init.conf",
			want: []string{"[Time]", "NTP=p "},
		},
		{
			name: "alpine busybox ntpd gets default servers", files: map[string]string{"etc/os-release": "ID=alpine\n", "usr/sbin/ntpd*": ""},
			yaml: "ntp: {}", path: "etc/ntp.conf",
			want: []string{"# Servers", "server 0.pool.ntp.org", "server 1.pool.ntp.org", "server 2.pool.ntp.org", "server 3.pool.ntp.org"},
		},
		{
			name: "null ntp means defaults, client not installed warns", files: map[string]string{"etc/os-release": "ID=debian\n"},
			yaml: "ntp:", path: "etc/chrony/chrony.conf", warns: 1,
			want: []string{"# pools", "pool 0.debian.pool.ntp.org iburst"},
		},
		{
			name: "user template", files: map[string]string{"usr/bin/myntpd*": ""},
			yaml: "ntp:\n  ntp_client: myntp\n  servers: [s1]\n  config:\n    confpath: /etc/myntp.conf\n    check_exe: myntpd\n    packages: [myntp]\n    service_name: myntp\n    template: |\n      ## template:jinja\n      {% for s in servers %}srv {{s}}\n      {% endfor %}\n",
			path: "etc/myntp.conf", want: []string{"srv s1"},
		},
		{name: "unknown client without config", yaml: "ntp: {ntp_client: foo}", wantErr: true},
		{name: "bad config types", yaml: "ntp: {ntp_client: chrony, config: {confpath: 3, packages: x}}", wantErr: true},
		{name: "not a mapping", yaml: "ntp: [a]", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			err := runNTP(context.Background(), env.Env)
			switch {
			case tc.skipped:
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("got %v, want skipped", err)
				}
				return
			case tc.wantErr:
				if err == nil {
					t.Fatal("want an error")
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			got := directives(readFile(t, dir, tc.path))
			for _, w := range tc.want {
				if !contains(got, w) {
					t.Errorf("%s lacks %q:\n%s", tc.path, w, strings.Join(got, "\n"))
				}
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
		})
	}
}

func TestNTPKeepsDistConfigOnce(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/chronyd*": "", "etc/chrony/chrony.conf": "image's own\n"})
	for _, servers := range []string{"[a]", "[b]"} {
		env := applytest.NewEnvAt(t, dir, config(t, "ntp: {servers: "+servers+"}"))
		if err := runNTP(context.Background(), env.Env); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, dir, "etc/chrony/chrony.conf.dist"); got != "image's own\n" {
		t.Errorf(".dist = %q, want the image's config", got)
	}
	if got := directives(readFile(t, dir, "etc/chrony/chrony.conf")); !contains(got, "server b iburst") || contains(got, "server a iburst") {
		t.Errorf("config after the second run:\n%s", strings.Join(got, "\n"))
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
