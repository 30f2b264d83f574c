package system

import (
	"strings"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func FuzzParseOSRelease(f *testing.F) {
	f.Add("ID=debian\nID_LIKE=\"\"\n")
	f.Add("ID='alpine'\n# c\nID_LIKE=\"rhel \\\"x\\\"\"\n")
	f.Add("=\n\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		r := parseOSRelease(text)
		if d := r.distro(); !cloudInitDistros[d] {
			t.Errorf("distro() = %q, not one cloud-init knows", d)
		}
	})
}

func FuzzSetShellVar(f *testing.F) {
	f.Add("LANG=C\nLANGUAGE=en\n", "de_DE.UTF-8")
	f.Add("export LANG=\"x y\"\nLANG=z", "a b$c")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, existing, value string) {
		root, err := rootfs.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		if err := root.WriteFile("/locale", []byte(existing), 0o644, rootfs.Owner{}); err != nil {
			t.Fatal(err)
		}
		if _, err := SetShellVar(root, "/locale", "LANG", value); err != nil {
			if strings.ContainsAny(value, "\n\x00") {
				return
			}
			t.Fatal(err)
		}
		first, _ := root.ReadFile("/locale")
		if changed, err := SetShellVar(root, "/locale", "LANG", value); err != nil || changed {
			t.Errorf("second SetShellVar changed=%v err=%v; want it to converge", changed, err)
		}
		if got := readShellVar(root, "/locale", "LANG"); got != value && !strings.ContainsAny(value, "\r") {
			t.Errorf("read back %q, want %q (file %q)", got, value, first)
		}
	})
}

func FuzzSeedData(f *testing.F) {
	f.Add("abc", "raw", "meta")
	f.Add("YWJj", "base64", "")
	f.Add("\x1f\x8b\x08\x00", "gz", "")
	f.Fuzz(func(t *testing.T, data, encoding, meta string) {
		out, err := SeedData(apply.Config{"data": data, "encoding": encoding}, meta)
		if err == nil && len(out) > maxSeedBytes+len(data)+len(meta) {
			t.Errorf("seed of %d bytes exceeds the bound", len(out))
		}
	})
}

func FuzzRenderResolvConf(f *testing.F) {
	f.Add("ns", "search", "dom", "opt", "val")
	f.Fuzz(func(t *testing.T, ns, search, domain, opt, val string) {
		_, _ = RenderResolvConf(apply.Config{
			"nameservers": []any{ns}, "searchdomains": []any{search}, "domain": domain,
			"options": map[string]any{opt: val, "rotate": true},
		})
	})
}
