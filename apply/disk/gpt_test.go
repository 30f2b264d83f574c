package disk

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"strings"
	"testing"
)

// rewriteHeader changes the GPT header at lba of a 512-byte-sector image
// and gives it a correct CRC again.
func rewriteHeader(t *testing.T, path string, lba int64, change func(h []byte)) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := make([]byte, 512)
	if _, err := f.ReadAt(h, lba*512); err != nil {
		t.Fatal(err)
	}
	change(h)
	binary.LittleEndian.PutUint32(h[16:20], 0)
	binary.LittleEndian.PutUint32(h[16:20], crc32.ChecksumIEEE(h[:92]))
	if _, err := f.WriteAt(h, lba*512); err != nil {
		t.Fatal(err)
	}
}

// copyTail puts the last n bytes of src at the end of dst.
func copyTail(t *testing.T, src, dst string, n int64) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b[int64(len(b))-n:], st.Size()-n); err != nil {
		t.Fatal(err)
	}
}

func TestReadGPTFallback(t *testing.T) {
	const size, grown = 8 * mib, 16 * mib // 16384 and 32768 sectors
	parts := []testPart{{2048, 4095, "root"}}
	var (
		primaryHeaderCRC = xorAt(func(int64) int64 { return 512 + 16 })
		primaryEntries   = xorAt(func(int64) int64 { return 2*512 + 56 })
	)
	// foreignAtEnd leaves at the grown disk's end the valid backup GPT of
	// another disk of that size, as an image written over a disk that
	// had a GPT leaves it.
	foreignAtEnd := func(guid string) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			other := tempImage(t)
			writeGPT(t, other, grown, 512, []testPart{{2048, 30000, "other"}})
			rewriteHeader(t, other, grown/512-1, func(h []byte) { copy(h[56:72], guid) })
			copyTail(t, other, path, 33*512)
		}
	}
	tests := []struct {
		name string
		// damage runs on the image before it grows, after runs after.
		damage, after func(t *testing.T, path string)
		grow          bool
		wantBackup    bool
		wantLBA       uint64 // the header the table was read from
		wantName      string // of the one partition; "" for root
		wantErr       string
	}{
		{name: "primary valid", wantLBA: 1},
		{name: "primary valid on a grown disk", grow: true, wantLBA: 1},
		{name: "primary header CRC bad", damage: primaryHeaderCRC, wantBackup: true, wantLBA: 16383},
		{name: "primary entries CRC bad", damage: primaryEntries, wantBackup: true, wantLBA: 16383},
		{
			name:   "primary entries CRC bad on a grown disk: the backup the primary header names",
			damage: primaryEntries, grow: true, wantBackup: true, wantLBA: 16383,
		},
		{
			name:   "primary header CRC bad on a grown disk: no backup where readers look",
			damage: primaryHeaderCRC, grow: true,
			wantErr: "primary header at LBA 1: header CRC32",
		},
		{
			name:   "another disk's backup at the end is passed over for the one the primary header names",
			damage: primaryEntries, grow: true, after: foreignAtEnd("other-disk-guid!"), wantBackup: true, wantLBA: 16383,
		},
		{
			name:   "the backup the primary header names comes before one of the same disk at the end",
			damage: primaryEntries, grow: true, after: foreignAtEnd("disk-guid-123456"), wantBackup: true, wantLBA: 16383,
		},
		{
			name: "the backup at the end when the one the primary header names is damaged",
			damage: func(t *testing.T, path string) {
				primaryEntries(t, path)
				xorAt(func(n int64) int64 { return (n-1)*512 + 16 })(t, path)
			},
			grow: true, after: foreignAtEnd("disk-guid-123456"), wantBackup: true, wantLBA: 32767, wantName: "other",
		},
		{
			name: "another disk's backup at the end and none where the primary header says",
			damage: func(t *testing.T, path string) {
				primaryEntries(t, path)
				zeroSector(func(n int64) int64 { return n - 1 })(t, path)
			},
			grow: true, after: foreignAtEnd("other-disk-guid!"),
			wantErr: "backup header at LBA 16383 named by the primary header: no GPT signature; backup header at LBA 32767: disk GUID",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempImage(t)
			writeGPT(t, path, size, 512, parts)
			if tt.damage != nil {
				tt.damage(t, path)
			}
			if tt.grow {
				truncate(t, path, grown)
			}
			if tt.after != nil {
				tt.after(t, path)
			}
			g, err := ReadGPT(openImage(t, path))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadGPT error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.FromBackup != tt.wantBackup || g.Header.MyLBA != tt.wantLBA {
				t.Errorf("read from LBA %d (backup %v), want LBA %d (backup %v)", g.Header.MyLBA, g.FromBackup, tt.wantLBA, tt.wantBackup)
			}
			if tt.wantBackup && g.PrimaryErr == nil {
				t.Error("a table read from a backup does not say what was wrong with the primary")
			}
			wantName := tt.wantName
			if wantName == "" {
				wantName = "root"
			}
			if len(g.Entries) != 1 || g.Entries[0].Name != wantName {
				t.Errorf("entries %+v, want the one %s partition", g.Entries, wantName)
			}
		})
	}
}

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
			name: "primary entries CRC bad, the disk grew", damage: xorAt(func(int64) int64 { return 2*512 + 56 }), grown: 2 * size,
			wantLine:   "CHANGED: partition=2 start=4096 old: size=4096 end=8191 new: size=28639 end=32734",
			wantRepair: []string{"backup GPT header at the disk's end at LBA 32767", "primary GPT header and entries at LBA 1"},
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
