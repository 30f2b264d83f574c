package hostname

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

func writeTargetFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTargetFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func withKernelHostname(t *testing.T, name string) {
	t.Helper()
	old := kernelHostname
	kernelHostname = func() (string, error) { return name, nil }
	t.Cleanup(func() { kernelHostname = old })
}

func TestResolveNames(t *testing.T) {
	tests := []struct {
		name   string
		cfg    apply.Config
		local  string // seed's local-hostname
		system string // the target's /etc/hostname
		hosts  string // the target's /etc/hosts
		want   names
	}{
		{name: "metadata short name", local: "web1", want: names{Hostname: "web1", FQDN: "web1"}},
		{name: "metadata fqdn", local: "web1.example.com", want: names{Hostname: "web1", FQDN: "web1.example.com"}},
		{name: "metadata localdomain is no domain", local: "web1.localdomain", want: names{Hostname: "web1", FQDN: "web1"}},
		{name: "metadata ipv4 address", local: "10.1.2.3", want: names{Hostname: "ip-10-1-2-3", FQDN: "ip-10-1-2-3"}},
		{name: "config hostname wins over metadata", cfg: apply.Config{"hostname": "cfg"}, local: "md.example.com", want: names{Hostname: "cfg", FQDN: "md.example.com"}},
		{name: "config dotted hostname is the fqdn", cfg: apply.Config{"hostname": "a.b.example"}, local: "md", want: names{Hostname: "a", FQDN: "a.b.example"}},
		{name: "config leading dot is not a domain", cfg: apply.Config{"hostname": ".odd"}, local: "md.example.com", want: names{Hostname: ".odd", FQDN: "md.example.com"}},
		{name: "config fqdn alone", cfg: apply.Config{"fqdn": "x.example.org"}, local: "md", want: names{Hostname: "x", FQDN: "x.example.org"}},
		{name: "config fqdn and hostname", cfg: apply.Config{"fqdn": "x.example.org", "hostname": "other"}, want: names{Hostname: "other", FQDN: "x.example.org"}},
		{name: "config numeric hostname", cfg: apply.Config{"hostname": int64(1234)}, local: "md", want: names{Hostname: "1234", FQDN: "md"}},
		{name: "no metadata: the target's name", system: "old\n", want: names{Hostname: "old", FQDN: "old"}},
		{name: "no metadata: fqdn from /etc/hosts", system: "old\n", hosts: "127.0.1.1 old.corp.example old\n", want: names{Hostname: "old", FQDN: "old.corp.example"}},
		{name: "no metadata, no name: default", want: names{Hostname: "localhost", FQDN: "localhost", IsDefault: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.system != "" {
				writeTargetFile(t, dir, "etc/hostname", tt.system)
			}
			if tt.hosts != "" {
				writeTargetFile(t, dir, "etc/hosts", tt.hosts)
			}
			env := applytest.NewEnvAt(t, dir, tt.cfg)
			env.Seed.LocalHostname = tt.local
			got, err := resolveNames(env.Env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveNamesLiveUsesKernelName(t *testing.T) {
	withKernelHostname(t, "kernel.example.net")
	env := applytest.NewEnv(t, nil)
	env.Seed.LocalHostname = ""
	env.Sys.IsLive = true
	got, err := resolveNames(env.Env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names{Hostname: "kernel", FQDN: "kernel.example.net"}, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestSetHostname(t *testing.T) {
	tests := []struct {
		name        string
		cfg         apply.Config
		local       string
		live        bool
		etcHostname string // "" for none
		wantFile    string
		wantRecord  string
		wantKernel  []string
		wantSkip    bool
	}{
		{
			name: "metadata name", local: "web1.example.com",
			wantFile:   "web1\n",
			wantRecord: "{\n \"fqdn\": \"web1.example.com\",\n \"hostname\": \"web1\"\n}\n",
		},
		{
			name: "live sets the kernel name too", local: "web1.example.com", live: true,
			wantFile:   "web1\n",
			wantRecord: "{\n \"fqdn\": \"web1.example.com\",\n \"hostname\": \"web1\"\n}\n",
			wantKernel: []string{"web1"},
		},
		{
			name: "prefer fqdn", cfg: apply.Config{"hostname": "myhost", "fqdn": "myhost.example.com", "prefer_fqdn_over_hostname": true}, live: true,
			wantFile:   "myhost.example.com\n",
			wantRecord: "{\n \"fqdn\": \"myhost.example.com\",\n \"hostname\": \"myhost\"\n}\n",
			wantKernel: []string{"myhost.example.com"},
		},
		{
			name: "prefer short name explicitly", cfg: apply.Config{"fqdn": "a.example.com", "prefer_fqdn_over_hostname": "no"},
			wantFile:   "a\n",
			wantRecord: "{\n \"fqdn\": \"a.example.com\",\n \"hostname\": \"a\"\n}\n",
		},
		{
			name: "comments in /etc/hostname are kept", cfg: apply.Config{"hostname": "new"},
			etcHostname: "# set by the image\nold\n\n",
			wantFile:    "# set by the image\nnew\n\n",
			wantRecord:  "{\n \"fqdn\": \"test-host\",\n \"hostname\": \"new\"\n}\n",
		},
		{
			name: "preserve_hostname", cfg: apply.Config{"preserve_hostname": true, "hostname": "nope"}, live: true,
			etcHostname: "keep\n", wantFile: "keep\n", wantRecord: "<missing>", wantSkip: true,
		},
		{
			name: "create_hostname_file false", cfg: apply.Config{"hostname": "h1", "create_hostname_file": false}, live: true,
			wantFile:   "<missing>",
			wantRecord: "{\n \"fqdn\": \"test-host\",\n \"hostname\": \"h1\"\n}\n",
			wantKernel: []string{"h1"},
		},
		{
			name: "non-ascii name recorded as python json does", cfg: apply.Config{"hostname": "hôte"},
			wantFile:   "hôte\n",
			wantRecord: "{\n \"fqdn\": \"test-host\",\n \"hostname\": \"h\\u00f4te\"\n}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.etcHostname != "" {
				writeTargetFile(t, dir, "etc/hostname", tt.etcHostname)
			}
			env := applytest.NewEnvAt(t, dir, tt.cfg)
			if tt.local != "" {
				env.Seed.LocalHostname = tt.local
			}
			env.Sys.IsLive = tt.live
			withKernelHostname(t, "localhost")
			err := runSetHostname(context.Background(), env.Env)
			if tt.wantSkip != errors.Is(err, apply.ErrSkipped) || (err != nil && !tt.wantSkip) {
				t.Fatalf("set_hostname: %v (want skip: %v)", err, tt.wantSkip)
			}
			got := map[string]any{
				"file":   readTargetFile(t, dir, "etc/hostname"),
				"record": readTargetFile(t, dir, "var/lib/cloud/data/set-hostname"),
				"kernel": env.Sys.Hostnames,
			}
			want := map[string]any{"file": tt.wantFile, "record": tt.wantRecord, "kernel": tt.wantKernel}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after set_hostname (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetHostnameActsOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, apply.Config{"hostname": "first"})
	if err := runSetHostname(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	// An admin renames the machine; the same config must not undo it.
	writeTargetFile(t, dir, "etc/hostname", "by-hand\n")
	env = applytest.NewEnvAt(t, dir, apply.Config{"hostname": "first"})
	if err := runSetHostname(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Fatalf("second set_hostname with the same names: %v, want a skip", err)
	}
	if got := readTargetFile(t, dir, "etc/hostname"); got != "by-hand\n" {
		t.Errorf("/etc/hostname = %q, want the admin's name kept", got)
	}
	env = applytest.NewEnvAt(t, dir, apply.Config{"hostname": "second"})
	if err := runSetHostname(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	if got := readTargetFile(t, dir, "etc/hostname"); got != "second\n" {
		t.Errorf("/etc/hostname = %q, want the new name from config", got)
	}
}

func TestSetHostnameDefaultLocalhostIsLeftAlone(t *testing.T) {
	env := applytest.NewEnv(t, nil)
	env.Seed.LocalHostname = ""
	if err := runSetHostname(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Fatalf("set_hostname without any name: %v, want a skip", err)
	}
	if env.Root.Exists("/etc/hostname") {
		t.Error("/etc/hostname written for the default localhost")
	}
}

func TestUpdateHostname(t *testing.T) {
	tests := []struct {
		name        string
		cfg         apply.Config
		etcHostname string
		previous    string
		live        bool
		wantFile    string
		wantPrev    string
		wantKernel  []string
		wantSkip    bool
	}{
		{
			name: "first boot writes both", cfg: apply.Config{"hostname": "h1"}, live: true,
			wantFile: "h1\n", wantPrev: "h1\n", wantKernel: []string{"h1"},
		},
		{
			name: "after set_hostname only previous-hostname", cfg: apply.Config{"hostname": "h1"}, live: true,
			etcHostname: "h1\n", wantFile: "h1\n", wantPrev: "h1\n",
		},
		{
			name: "config changed since last boot", cfg: apply.Config{"hostname": "h2"}, live: true,
			etcHostname: "h1\n", previous: "h1\n", wantFile: "h2\n", wantPrev: "h2\n", wantKernel: []string{"h2"},
		},
		{
			name: "changed by hand since last boot", cfg: apply.Config{"hostname": "h2"}, live: true,
			etcHostname: "mine\n", previous: "h1\n", wantFile: "mine\n", wantPrev: "h1\n", wantSkip: true,
		},
		{
			name: "nothing changed", cfg: apply.Config{"hostname": "h1"}, live: true,
			etcHostname: "h1\n", previous: "h1\n", wantFile: "h1\n", wantPrev: "h1\n",
		},
		{
			name: "prefer fqdn writes the fqdn, kernel gets the short name", live: true,
			cfg:      apply.Config{"fqdn": "h1.example.com", "prefer_fqdn_over_hostname": true},
			wantFile: "h1.example.com\n", wantPrev: "h1.example.com\n", wantKernel: []string{"h1"},
		},
		{
			name: "offline target: kernel untouched", cfg: apply.Config{"hostname": "h1"},
			wantFile: "h1\n", wantPrev: "h1\n",
		},
		{
			name: "preserve_hostname", cfg: apply.Config{"hostname": "h1", "preserve_hostname": "yes"},
			etcHostname: "mine\n", wantFile: "mine\n", wantPrev: "<missing>", wantSkip: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.etcHostname != "" {
				writeTargetFile(t, dir, "etc/hostname", tt.etcHostname)
			}
			if tt.previous != "" {
				writeTargetFile(t, dir, "var/lib/cloud/data/previous-hostname", tt.previous)
			}
			env := applytest.NewEnvAt(t, dir, tt.cfg)
			env.Sys.IsLive = tt.live
			err := runUpdateHostname(context.Background(), env.Env)
			if tt.wantSkip != errors.Is(err, apply.ErrSkipped) || (err != nil && !tt.wantSkip) {
				t.Fatalf("update_hostname: %v (want skip: %v)", err, tt.wantSkip)
			}
			got := map[string]any{
				"file":   readTargetFile(t, dir, "etc/hostname"),
				"prev":   readTargetFile(t, dir, "var/lib/cloud/data/previous-hostname"),
				"kernel": env.Sys.Hostnames,
			}
			want := map[string]any{"file": tt.wantFile, "prev": tt.wantPrev, "kernel": tt.wantKernel}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after update_hostname (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateHostnameConverges(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		env := applytest.NewEnvAt(t, dir, apply.Config{"fqdn": "n.example.com"})
		if err := runUpdateHostname(context.Background(), env.Env); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if i > 0 && env.Root.ChangeCount() != 0 {
			t.Errorf("run %d changed %v, want nothing", i, env.Root.Changes(0))
		}
	}
}

func TestHostnameConf(t *testing.T) {
	tests := []struct {
		name, in, set, want, wantName string
		wantErr                       bool
	}{
		{name: "empty", in: "", set: "h", want: "h\n", wantName: ""},
		{name: "plain", in: "old\n", set: "new", want: "new\n", wantName: "old"},
		{name: "comment after name", in: "old # note\n", set: "new", want: "new# note\n", wantName: "old "},
		{name: "comments and blanks kept", in: "# a\n\nold\n  \n", set: "new", want: "# a\n\nnew\n  \n", wantName: "old"},
		{name: "crlf", in: "old\r\n", set: "new", want: "new\n", wantName: "old"},
		{name: "two names", in: "a\nb\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseHostnameConf(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error for two names")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Hostname(); got != tt.wantName {
				t.Errorf("Hostname() = %q, want %q", got, tt.wantName)
			}
			c.SetHostname(tt.set)
			if diff := cmp.Diff(tt.want, c.String()); diff != "" {
				t.Errorf("after SetHostname (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	got := splitLines("a\nb\r\nc\rd\x0ce\u2028f\n\n")
	want := []string{"a", "b", "c", "d", "e", "f", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("splitLines (-want +got):\n%s", diff)
	}
}

var fixedNow = time.Date(2024, 3, 5, 6, 7, 8, 0, time.UTC)

func withFixedNow(t *testing.T) {
	old := now
	now = func() time.Time { return fixedNow }
	t.Cleanup(func() { now = old })
}
