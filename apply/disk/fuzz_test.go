package disk

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"strings"
	"testing"
)

// tableSeed returns the first and last sectors of a freshly made image,
// small enough for the fuzzer to mutate.
func tableSeed(f *testing.F, make func(path string)) []byte {
	f.Helper()
	path := tempImage(f)
	make(path)
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// fuzzGrowCheck grows a copy of a table the reader accepted on a disk
// one MiB bigger, and checks the result reads back as valid.
func fuzzGrowCheck(t *testing.T, data []byte, partnum int) {
	grown := append(append([]byte(nil), data...), make([]byte, 64*kib)...)
	dev := &memDevice{b: grown, ss: 512}
	res, err := Grow(dev, partnum, GrowOptions{Fudge: -1})
	if err != nil {
		return
	}
	if res.Table == "gpt" {
		// A damaged primary is restored before anything else, so a grow
		// that succeeds leaves a valid one, grown or not.
		g, err := ReadGPT(dev)
		if err == nil && g.FromBackup {
			err = g.PrimaryErr
		}
		if err != nil {
			t.Fatalf("after %s (repaired %q) the primary GPT is not valid: %v", res, res.Repaired, err)
		}
	}
	if res.Changed {
		if res.NewSize <= res.OldSize || res.NewEnd() >= uint64(len(grown))/512 {
			t.Fatalf("grow produced %s on a %d-sector disk", res, len(grown)/512)
		}
		if _, err := Grow(dev, partnum, GrowOptions{Fudge: -1}); err != nil {
			t.Fatalf("the grown table does not read back: %v", err)
		}
	}
}

func FuzzReadGPT(f *testing.F) {
	f.Add(tableSeed(f, func(p string) { writeGPTEntries(f, p, 8*kib, 512, 4, []testPart{{3, 6, "root"}, {8, 10, "x"}}) }), 1, uint8(0))
	f.Add(tableSeed(f, func(p string) { writeGPTEntries(f, p, 6*kib, 512, 8, []testPart{{4, 5, "a"}}) }), 1, uint8(3))
	f.Add(make([]byte, 2048), 1, uint8(0))
	// Damaged primaries: the repair before the grow, and the backup found
	// through an intact primary header once the disk has grown.
	for _, off := range []int{512 + 16, 1024 + 56} {
		b := tableSeed(f, func(p string) { writeGPTEntries(f, p, 8*kib, 512, 4, []testPart{{3, 6, "root"}, {8, 10, "x"}}) })
		b[off] ^= 0xFF
		f.Add(b, 2, uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, partnum int, fix uint8) {
		if len(data) > 1<<20 {
			return
		}
		// Nearly every mutation breaks a CRC, which the reader refuses
		// first; fixing them up on request lets the fuzzer reach the
		// layout checks, the repairs and the grow behind them.
		if fix&1 != 0 {
			fixGPTCRCs(data, 1)
		}
		if fix&2 != 0 && len(data) >= 512 {
			fixGPTCRCs(data, len(data)/512-1)
		}
		dev := &memDevice{b: data, ss: 512}
		g, err := ReadGPT(dev)
		if err != nil {
			return
		}
		for _, e := range g.Entries {
			if e.FirstLBA > e.LastLBA || e.LastLBA > g.Header.LastUsableLBA {
				t.Fatalf("accepted entry %+v outside the usable area", e)
			}
		}
		fuzzGrowCheck(t, data, 1+abs(partnum)%4)
	})
}

// fixGPTCRCs gives the GPT header at lba of a 512-byte-sector image, and
// its entries when they lie inside the image, correct CRCs, whatever
// else is wrong with them.
func fixGPTCRCs(data []byte, lba int) {
	h := data[min(len(data), lba*512):min(len(data), (lba+1)*512)]
	if len(h) < 92 || string(h[:8]) != "EFI PART" {
		return
	}
	le := binary.LittleEndian
	size := le.Uint32(h[12:16])
	if size < 92 || size > 512 {
		return
	}
	entries, n := le.Uint64(h[72:80]), uint64(le.Uint32(h[80:84]))*uint64(le.Uint32(h[84:88]))
	if entries < uint64(len(data))/512 && n <= uint64(len(data))-entries*512 {
		le.PutUint32(h[88:92], crc32.ChecksumIEEE(data[entries*512:entries*512+n]))
	}
	le.PutUint32(h[16:20], 0)
	le.PutUint32(h[16:20], crc32.ChecksumIEEE(h[:size]))
}

func FuzzReadMBR(f *testing.F) {
	f.Add(tableSeed(f, func(p string) {
		writeMBR(f, p, 4*kib, []mbrPart{{0x83, 1, 2}}, nil)
	}), 5)
	f.Add(logicalSeed(), 5)
	f.Fuzz(func(t *testing.T, data []byte, partnum int) {
		if len(data) > 1<<20 {
			return
		}
		m, err := ReadMBR(&memDevice{b: data, ss: 512})
		if err != nil {
			return
		}
		if m.String() == "" {
			t.Fatal("empty summary")
		}
		fuzzGrowCheck(t, data, 1+abs(partnum)%8)
	})
}

func FuzzParseMountInfo(f *testing.F) {
	f.Add("22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n")
	f.Add(`36 22 0:31 / /mnt/a\040b rw - btrfs /dev/loop0p1 rw` + "\n")
	f.Add("1 2 3:4 / /x rw - \n")
	f.Fuzz(func(t *testing.T, s string) {
		mounts, err := ParseMountInfo(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range mounts {
			mountOf(mounts, m.MountPoint)
		}
	})
}

func FuzzProbe(f *testing.F) {
	ext := make([]byte, 4096)
	ext[1024+56], ext[1024+57] = 0x53, 0xEF
	f.Add(ext)
	xfs := make([]byte, 512)
	copy(xfs, "XFSB")
	f.Add(xfs)
	fat := make([]byte, 512)
	fat[11], fat[12], fat[13], fat[510], fat[511] = 0, 2, 1, 0x55, 0xAA
	copy(fat[54:], "FAT16   ")
	f.Add(fat)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := Probe(bytes.NewReader(data))
		if err == nil && fs.Type == "" {
			t.Fatal("probe found a filesystem without a type")
		}
	})
}

// logicalSeed is a 16-sector MBR disk with an extended container holding
// two logical partitions, small enough to fuzz (writeMBR spaces EBRs
// 2048 sectors apart).
func logicalSeed() []byte {
	b := make([]byte, 16*512)
	entry := func(sector, slot int, typ byte, start, size uint32) {
		e := b[sector*512+446+slot*16:]
		e[4] = typ
		binary.LittleEndian.PutUint32(e[8:], start)
		binary.LittleEndian.PutUint32(e[12:], size)
		b[sector*512+510], b[sector*512+511] = 0x55, 0xAA
	}
	entry(0, 0, 0x83, 1, 2)
	entry(0, 1, 0x05, 4, 10)
	entry(4, 0, 0x83, 1, 3)
	entry(4, 1, 0x05, 4, 3)
	entry(8, 0, 0x83, 1, 2)
	return b
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
