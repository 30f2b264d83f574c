package mounts

import (
	"strings"
	"testing"
)

func FuzzParseFstab(f *testing.F) {
	f.Add("# comment\nUUID=1 / ext4 defaults 0 1\n")
	f.Add("/dev/sdb1\t/mnt\tauto\tdefaults,nofail,comment=cloudconfig\t0\t2\r\n\n  indented\n")
	f.Add("")
	f.Add("\n\n\r")
	f.Fuzz(func(t *testing.T, text string) {
		fs := ParseFstab(text)
		for _, l := range fs.Owned {
			if !strings.Contains(l, ownerTag) {
				t.Fatalf("owned line %q has no tag", l)
			}
		}
		// Rewriting with no owned entries keeps every kept line, so a
		// second parse finds the same ones.
		again := ParseFstab(Render(fs.Kept, nil))
		if len(fs.Kept) > 0 && len(again.Kept) != len(fs.Kept) {
			t.Fatalf("kept %d lines, reparse kept %d", len(fs.Kept), len(again.Kept))
		}
	})
}

func FuzzHumanToBytes(f *testing.F) {
	for _, s := range []string{"10M", ".5G", "1024", "2GB", "-1", "1e30T", "abc", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := HumanToBytes(s); err == nil && n < 0 {
			t.Fatalf("HumanToBytes(%q) = %d", s, n)
		}
	})
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"sdb", "/dev/xvdd.2", "ephemeral0", "LABEL=x", "a:b", ".", "..", "/dev/../etc"} {
		f.Add(s)
	}
	devs := standardDevices(f)
	r := Resolver{Devices: devs, MetaDevice: func(string) string { return "sdb" }}
	f.Fuzz(func(t *testing.T, name string) {
		r.Sanitize(name)
	})
}
