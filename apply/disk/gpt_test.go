package disk

import (
	"os"
	"strings"
	"testing"
)

// TestGrowGPTRepairsFirst checks what a grow of a damaged table reports
// and writes, and that a dry run reports the repair and writes nothing.
func TestGrowGPTRepairsFirst(t *testing.T) {
	const size = 8 * mib
	parts := []testPart{{2048, 4095, "boot"}, {4096, 8191, "root"}}
	tests := []struct {
		name       string
		damage     func(t *testing.T, path string)
		grown      int64
		wantLine   string
		wantRepair []string
	}{
		{
			name: "primary header CRC bad", damage: xorAt(func(int64) int64 { return 512 + 16 }), grown: size,
			wantLine:   "CHANGED: partition=2 start=4096 old: size=4096 end=8191 new: size=12255 end=16350",
			wantRepair: []string{"primary GPT header and entries at LBA 1"},
		},
		{
			name: "backup header CRC bad", damage: xorAt(func(n int64) int64 { return (n-1)*512 + 16 }), grown: size,
			wantLine: "CHANGED: partition=2 start=4096 old: size=4096 end=8191 new: size=12255 end=16350",
		},
	}
	for _, tt := range tests {
		for _, dry := range []bool{true, false} {
			name := tt.name
			if dry {
				name += ", dry run"
			}
			t.Run(name, func(t *testing.T) {
				path := tempImage(t)
				writeGPT(t, path, size, 512, parts)
				tt.damage(t, path)
				truncate(t, path, tt.grown)
				before, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				res, err := GrowPart(path, 2, dry)
				if err != nil {
					t.Fatal(err)
				}
				wantLine := tt.wantLine
				if dry {
					wantLine = strings.Replace(wantLine, "CHANGED", "CHANGE", 1)
				}
				if res.String() != wantLine {
					t.Errorf("line\n got %s\nwant %s", res, wantLine)
				}
				if strings.Join(res.Repaired, "; ") != strings.Join(tt.wantRepair, "; ") {
					t.Errorf("repaired %q, want %q", res.Repaired, tt.wantRepair)
				}
				after, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if dry {
					if string(after) != string(before) {
						t.Error("the dry run wrote to the image")
					}
					return
				}
				checkGPT(t, openImage(t, path), []span{{2048, 4095}, {4096, res.NewEnd()}})
			})
		}
	}
}
