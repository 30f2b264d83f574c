package hostname

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

func TestParseManageEtcHosts(t *testing.T) {
	tests := []struct {
		in   any
		want hostsMode
	}{
		{nil, hostsUnmanaged},
		{false, hostsUnmanaged},
		{true, hostsTemplateMode},
		{"template", hostsTemplateMode},
		{"Template", hostsTemplateMode},
		{"True", hostsTemplateMode},
		{"on", hostsTemplateMode},
		{int64(1), hostsTemplateMode},
		{"localhost", hostsLocalhostMode},
		{"Localhost", hostsUnmanaged},
		{"false", hostsUnmanaged},
		{"", hostsUnmanaged},
		{[]any{"x"}, hostsUnmanaged},
	}
	for _, tt := range tests {
		if got := parseManageEtcHosts(tt.in); got != tt.want {
			t.Errorf("parseManageEtcHosts(%#v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

const builtinGolden = `# This file is managed by seedinit because manage_etc_hosts is on: it is
# rewritten at every boot. To keep a change, put it in
# /etc/cloud/templates/hosts.debian.tmpl, or turn manage_etc_hosts off in
# the cloud-config.
#
127.0.1.1 web1.example.com web1
127.0.0.1 localhost

# IPv6 loopback and multicast names
::1 localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters

`

func TestUpdateEtcHosts(t *testing.T) {
	withFixedNow(t)
	tests := []struct {
		name     string
		cfg      apply.Config
		files    map[string]string
		want     string
		wantSkip bool
	}{
		{
			name: "true without a template: built-in",
			cfg:  apply.Config{"manage_etc_hosts": true, "fqdn": "web1.example.com"},
			want: builtinGolden,
		},
		{
			name:  "basic template from the target",
			cfg:   apply.Config{"manage_etc_hosts": "template", "fqdn": "web1.example.com"},
			files: map[string]string{"etc/cloud/templates/hosts.debian.tmpl": "## template: basic\n127.0.1.1 $fqdn ${hostname}\n"},
			want:  "127.0.1.1 web1.example.com web1\n",
		},
		{
			name:  "template with an unknown renderer falls back to built-in",
			cfg:   apply.Config{"manage_etc_hosts": true, "fqdn": "web1.example.com"},
			files: map[string]string{"etc/cloud/templates/hosts.debian.tmpl": "## template: cheetah\n$fqdn\n"},
			want:  builtinGolden,
		},
		{
			name:  "localhost: add the line to an existing file",
			cfg:   apply.Config{"manage_etc_hosts": "localhost", "fqdn": "web1.example.com"},
			files: map[string]string{"etc/hosts": "127.0.0.1 localhost # loop\n\n# keep me\n::1   ip6-localhost\n"},
			want:  "127.0.0.1\tlocalhost# loop\n\n# keep me\n::1\tip6-localhost\n127.0.1.1\tweb1.example.com\tweb1\n\n",
		},
		{
			name:  "localhost: old entries for 127.0.1.1 move to the end",
			cfg:   apply.Config{"manage_etc_hosts": "localhost", "hostname": "new"},
			files: map[string]string{"etc/hosts": "127.0.1.1 old.example old\n127.0.0.1 localhost\n"},
			want:  "127.0.0.1\tlocalhost\n127.0.1.1\told.example\told\n127.0.1.1\ttest-host\tnew\n\n",
		},
		{
			name:  "localhost: entry already there",
			cfg:   apply.Config{"manage_etc_hosts": "localhost", "fqdn": "web1.example.com"},
			files: map[string]string{"etc/hosts": "127.0.1.1   web1.example.com  other web1 # mine\n"},
			want:  "127.0.1.1   web1.example.com  other web1 # mine\n",
		},
		{
			name: "localhost: no file yet gets a header",
			cfg:  apply.Config{"manage_etc_hosts": "localhost", "fqdn": "web1.example.com"},
			want: "# Added by seedinit v. dev on Tue, 05 Mar 2024 06:07:08 +0000\n127.0.1.1\tweb1.example.com\tweb1\n\n",
		},
		{
			name:  "not set and no cloud.cfg in the image: the name resolves",
			cfg:   apply.Config{"fqdn": "waf-real-01.example.net"},
			files: map[string]string{"etc/hosts": "127.0.0.1\tlocalhost\n"},
			want:  "127.0.0.1\tlocalhost\n127.0.1.1\twaf-real-01.example.net\twaf-real-01\n\n",
		},
		{
			name:     "not set with the image's cloud.cfg: left alone, as cloud-init does",
			cfg:      apply.Config{"fqdn": "waf-real-01.example.net"},
			files:    map[string]string{"etc/hosts": "127.0.0.1 localhost\n", "etc/cloud/cloud.cfg": "users: [default]\n"},
			want:     "127.0.0.1 localhost\n",
			wantSkip: true,
		},
		{
			name:     "unmanaged",
			cfg:      apply.Config{"manage_etc_hosts": false},
			files:    map[string]string{"etc/hosts": "127.0.0.1 localhost\n"},
			want:     "127.0.0.1 localhost\n",
			wantSkip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeTargetFile(t, dir, name, content)
			}
			env := applytest.NewEnvAt(t, dir, tt.cfg)
			err := runUpdateEtcHosts(context.Background(), env.Env)
			if tt.wantSkip != errors.Is(err, apply.ErrSkipped) || (err != nil && !tt.wantSkip) {
				t.Fatalf("update_etc_hosts: %v (want skip: %v)", err, tt.wantSkip)
			}
			if diff := cmp.Diff(tt.want, readTargetFile(t, dir, "etc/hosts")); diff != "" {
				t.Errorf("/etc/hosts (-want +got):\n%s", diff)
			}
			// A second boot with the same names changes nothing.
			env = applytest.NewEnvAt(t, dir, tt.cfg)
			if err := runUpdateEtcHosts(context.Background(), env.Env); err != nil && !errors.Is(err, apply.ErrSkipped) {
				t.Fatalf("second update_etc_hosts: %v", err)
			}
			if changes := env.Root.Changes(0); len(changes) != 0 {
				t.Errorf("second run changed %v, want nothing", changes)
			}
		})
	}
}
