package disk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

func loadConfig(t *testing.T, doc string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return apply.Config{}
	}
	return apply.Config(v.(map[string]any))
}

func TestParseGrowpart(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    growpartConfig
		wantErr string
	}{
		{name: "default", doc: "{}", want: growpartConfig{devices: []string{"/"}}},
		{name: "documented example", doc: "growpart:\n  mode: growpart\n  devices: [\"/\", \"/dev/vdb1\"]\n  ignore_growroot_disabled: true\n",
			want: growpartConfig{devices: []string{"/", "/dev/vdb1"}, ignoreMarker: true}},
		{name: "off unquoted is YAML false", doc: "growpart: {mode: off}", want: growpartConfig{off: true, devices: []string{"/"}}},
		{name: "off quoted", doc: "growpart: {mode: 'off'}", want: growpartConfig{off: true, devices: []string{"/"}}},
		{name: "deprecated false spelling", doc: "growpart: {mode: 'no'}", want: growpartConfig{off: true, deprecatedMode: "no", devices: []string{"/"}}},
		{name: "a single device string", doc: "growpart: {devices: /srv}", want: growpartConfig{devices: []string{"/srv"}}},
		{name: "null devices", doc: "growpart: {devices: null}", want: growpartConfig{}},
		{name: "null growpart", doc: "growpart:", want: growpartConfig{off: true}},
		{name: "unknown mode", doc: "growpart: {mode: fast}", wantErr: `unknown resize mode "fast"`},
		{name: "gpart", doc: "growpart: {mode: gpart}", wantErr: "FreeBSD"},
		{name: "not a mapping", doc: "growpart: [1]", wantErr: "want a mapping"},
		{name: "bad ignore flag", doc: "growpart: {ignore_growroot_disabled: maybe}", wantErr: "ignore_growroot_disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGrowpart(loadConfig(t, tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(growpartConfig{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResizeRootfs(t *testing.T) {
	tests := []struct {
		doc              string
		enabled, noblock bool
	}{
		{"{}", true, false},
		{"resize_rootfs: true", true, false},
		{"resize_rootfs: false", false, false},
		{"resize_rootfs: noblock", true, true},
		{"resize_rootfs: NoBlock", true, false},
		{"resize_rootfs: 'yes'", true, false},
		{"resize_rootfs: 'off'", false, false},
		{"resize_rootfs: 1", true, false},
		{"resize_rootfs:", false, false},
		{"resize_rootfs: maybe", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			enabled, noblock := resizeRootfs(loadConfig(t, tt.doc))
			if enabled != tt.enabled || noblock != tt.noblock {
				t.Errorf("got enabled=%v noblock=%v, want %v %v", enabled, noblock, tt.enabled, tt.noblock)
			}
		})
	}
}

func TestModulesOffline(t *testing.T) {
	tests := []struct {
		name     string
		module   string
		doc      string
		marker   bool
		wantSkip string
	}{
		{name: "growpart skips an offline target", module: "growpart", doc: "{}", wantSkip: "not the running system"},
		{name: "growpart off", module: "growpart", doc: "growpart: {mode: off}"},
		{name: "growroot-disabled marker", module: "growpart", doc: "{}", marker: true},
		{name: "marker ignored", module: "growpart", doc: "growpart: {ignore_growroot_disabled: true}", marker: true, wantSkip: "not the running system"},
		{name: "empty device list", module: "growpart", doc: "growpart: {devices: []}"},
		{name: "resizefs skips an offline target", module: "resizefs", doc: "{}", wantSkip: "not the running system"},
		{name: "resizefs disabled", module: "resizefs", doc: "resize_rootfs: false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := applytest.NewEnv(t, loadConfig(t, tt.doc))
			if tt.marker {
				if err := env.Root.WriteFile(growrootDisabled, nil, 0o644, rootfs.Owner{}); err != nil {
					t.Fatal(err)
				}
			}
			m, ok := apply.Lookup(tt.module)
			if !ok || m.Frequency != apply.PerBoot {
				t.Fatalf("module %s registered=%v frequency %q, want always", tt.module, ok, m.Frequency)
			}
			err := m.Run(context.Background(), env.Env)
			if tt.wantSkip == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			if !errors.Is(err, apply.ErrSkipped) || !strings.Contains(err.Error(), tt.wantSkip) {
				t.Fatalf("Run: %v, want a skip saying %q", err, tt.wantSkip)
			}
			if len(env.Sys.Commands) != 0 {
				t.Errorf("ran commands: %v", env.Sys.Ran())
			}
		})
	}
}
