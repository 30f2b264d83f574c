package citemplate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed/jinja"

	"github.com/seedinit/seedinit/internal/testenv"
)

func TestRender(t *testing.T) {
	vars := map[string]any{"a": "x", "UPTIME": "1.5", "ds": map[string]any{"name": "NoCloud"}}
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "no header is basic", in: "$a and ${a}!", want: "x and x!"},
		{name: "basic header dropped", in: "## template: basic\nup $UPTIME\n", want: "up 1.5\n"},
		{name: "header is case-insensitive", in: "##Template:BASIC\n${a}", want: "x"},
		{name: "dotted names walk maps", in: "$ds.name", want: "NoCloud"},
		{name: "a trailing dot is part of the name, as for cloud-init", in: "at $a.", wantErr: true},
		{name: "missing variable", in: "$nope", wantErr: true},
		{name: "dollar without a name stays", in: "cost: $ 5", want: "cost: $ 5"},
		{name: "unknown renderer", in: "## template: cheetah\n$a", wantErr: true},
		{name: "header only", in: "## template: basic", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(tt.in, vars)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Render(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Render(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"$a", "${a}", "## template: basic\n$a.b", "## template: jinja\n{{ a }}\n", "$$", "${"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Render(s, map[string]any{"a": "x", "b": map[string]any{"c": 1}})
	})
}

func TestRenderJinja(t *testing.T) {
	if _, err := jinja.Render([]byte("{{ a }}"), map[string]any{"a": "b"}); err != nil {
		testenv.Skipf(t, "seed/jinja cannot render yet: %v", err)
	}
	for _, tt := range []struct{ in, want string }{
		{"## template: jinja\n{{ version }} up {{ UPTIME }}\n", "dev up 1.5\n"},
		{"## template: jinja\n{{ version }}", "dev"},
		{"## template: jinja\nlast\n\n", "last\n\n"},
	} {
		got, err := Render(tt.in, map[string]any{"version": "dev", "UPTIME": "1.5"})
		if err != nil {
			t.Fatalf("Render(%q): %v", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("Render(%q) = %q, want %q (cloud-init keeps the template's final newlines)", tt.in, got, tt.want)
		}
	}
}
