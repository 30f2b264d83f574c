package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// cutDevice is a power cut after budget bytes of writes. The write that
// crosses the budget reaches the image only in part: its head, or with
// tail its end (a disk may persist a request's sectors in any order, and a
// sector only in part), and every write and sync after it fails. It also
// checks the discipline the cut relies on: no write starts before the one
// before it was synced, since unsynced writes may reach the disk in any
// order. The image is a test file: its durability is the cut's to model,
// so Sync does not fsync it.
type cutDevice struct {
	Device
	t        testing.TB
	budget   int64
	tail     bool
	cut      bool
	unsynced bool
	// writes records every write let through in full or in part, with the
	// bytes it replaced.
	writes []cutWrite
}

type cutWrite struct {
	off      int64
	old, new []byte
}

var errCut = errors.New("power cut")

func (c *cutDevice) WriteAt(p []byte, off int64) (int, error) {
	if c.cut {
		return 0, errCut
	}
	if c.unsynced {
		c.t.Errorf("a write of %d bytes at byte %d started before the previous write was synced", len(p), off)
	}
	old := make([]byte, len(p))
	if err := readFull(c.Device, old, off); err != nil {
		return 0, err
	}
	c.writes = append(c.writes, cutWrite{off: off, old: old, new: append([]byte(nil), p...)})
	c.unsynced = true
	if int64(len(p)) <= c.budget {
		c.budget -= int64(len(p))
		return c.Device.WriteAt(p, off)
	}
	c.cut = true
	n := int(c.budget)
	c.budget = 0
	if c.tail {
		if _, err := c.Device.WriteAt(p[len(p)-n:], off+int64(len(p)-n)); err != nil {
			return 0, err
		}
		return 0, errCut
	}
	if _, err := c.Device.WriteAt(p[:n], off); err != nil {
		return 0, err
	}
	return n, errCut
}

func (c *cutDevice) Sync() error {
	if c.cut {
		return errCut
	}
	c.unsynced = false
	return nil
}

// cutPoint is one place a cut can leave the disk: budget bytes written,
// from the head of the write that crosses it or from its tail.
type cutPoint struct {
	budget int64
	tail   bool
}

func (p cutPoint) String() string {
	if p.tail {
		return fmt.Sprintf("%d bytes, the cut write's tail", p.budget)
	}
	return fmt.Sprintf("%d bytes", p.budget)
}

// cutPoints lists a cut at every byte of writes that changes what the disk
// holds, from the head and from the tail of each write: a cut between two
// bytes a write leaves as they were leaves the same image as a cut before
// the first of them, so these are every distinct state that any cut (at
// any byte N) can leave.
func cutPoints(writes []cutWrite) []cutPoint {
	seen := map[cutPoint]bool{{budget: 0}: true}
	var base int64
	for _, w := range writes {
		for j := range w.new {
			if w.old[j] != w.new[j] {
				seen[cutPoint{budget: base + int64(j)}] = true
				seen[cutPoint{budget: base + int64(len(w.new)-1-j), tail: true}] = true
			}
		}
		base += int64(len(w.new))
	}
	var points []cutPoint
	for p := range seen {
		points = append(points, p)
	}
	slices.SortFunc(points, func(a, b cutPoint) int {
		if a.budget != b.budget {
			return int(a.budget - b.budget)
		}
		if a.tail == b.tail {
			return 0
		}
		if a.tail {
			return 1
		}
		return -1
	})
	return points
}

// readableGPTs returns the entry arrays of the valid GPT copies that a
// reader finds on the image, by where gdisk and the kernel (with gpt on its
// command line) look: the primary at LBA 1, the backup its header names when
// that header's own CRC is good, and the backup at the disk's last LBA. It
// is written from the UEFI spec, not with the package's parser, so a bug
// in one cannot hide a bug in the other.
func readableGPTs(t *testing.T, path string, ss int) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	sectors := uint64(st.Size()) / uint64(ss)
	le := binary.LittleEndian
	// header returns the header sector at lba when its CRC is good.
	header := func(lba uint64) []byte {
		h := make([]byte, ss)
		if lba >= sectors {
			return nil
		}
		if _, err := f.ReadAt(h, int64(lba)*int64(ss)); err != nil {
			t.Fatal(err)
		}
		size := le.Uint32(h[12:16])
		if string(h[:8]) != "EFI PART" || size < 92 || int(size) > ss || le.Uint64(h[24:32]) != lba {
			return nil
		}
		c := append([]byte(nil), h[:size]...)
		copy(c[16:20], make([]byte, 4))
		if crc32.ChecksumIEEE(c) != le.Uint32(h[16:20]) {
			return nil
		}
		return h
	}
	entries := func(h []byte) []byte {
		lba, n := le.Uint64(h[72:80]), uint64(le.Uint32(h[80:84]))*uint64(le.Uint32(h[84:88]))
		if n == 0 || n > 1<<20 || lba == 0 || lba >= sectors || (n+uint64(ss)-1)/uint64(ss) > sectors-lba {
			return nil
		}
		e := make([]byte, n)
		if _, err := f.ReadAt(e, int64(lba)*int64(ss)); err != nil {
			t.Fatal(err)
		}
		if crc32.ChecksumIEEE(e) != le.Uint32(h[88:92]) {
			return nil
		}
		return e
	}
	found := map[string][]byte{}
	p := header(1)
	if p != nil {
		if e := entries(p); e != nil {
			found["primary"] = e
		}
		if alt := le.Uint64(p[32:40]); alt != 1 {
			if b := header(alt); b != nil {
				if e := entries(b); e != nil {
					found[fmt.Sprintf("backup at LBA %d (the primary header's)", alt)] = e
				}
			}
		}
	}
	if b := header(sectors - 1); b != nil {
		if e := entries(b); e != nil {
			found[fmt.Sprintf("backup at LBA %d (the last)", sectors-1)] = e
		}
	}
	return found
}

func isProtectiveMBR(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := make([]byte, 512)
	if _, err := f.ReadAt(s, 0); err != nil {
		t.Fatal(err)
	}
	e := parseEntry(s, 0)
	return hasBootSignature(s) && e.typ == typeProtective && e.start == 1
}

// xorAt damages an image: the byte at off is inverted.
func xorAt(off func(sectors int64) int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		at := off(st.Size() / 512)
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, at); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0xFF
		if _, err := f.WriteAt(b, at); err != nil {
			t.Fatal(err)
		}
	}
}

func zeroSector(lba func(sectors int64) int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, 512), lba(st.Size()/512)*512); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGrowGPTCutAnywhere cuts the power at every byte of a repair and grow
// (every write, every distinct place in every write, from its head and
// from its tail) and checks that the disk always keeps a GPT a reader
// finds, valid by its CRCs, holding the table as it was or as it is to be,
// and a protective MBR; and that running the grow again then ends with
// the table an uninterrupted grow writes.
func TestGrowGPTCutAnywhere(t *testing.T) {
	const size = 8 * mib // 16384 sectors; its backup GPT starts at 16351
	var (
		primaryHeaderCRC = xorAt(func(int64) int64 { return 512 + 16 })
		primaryHeader    = zeroSector(func(int64) int64 { return 1 })
		primaryEntries   = xorAt(func(int64) int64 { return 2*512 + 128 + 56 })
		backupHeaderCRC  = xorAt(func(n int64) int64 { return (n-1)*512 + 16 })
		backupEntries    = xorAt(func(n int64) int64 { return (n-33)*512 + 56 })
	)
	room := []testPart{{2048, 4095, "boot"}, {4096, 8191, "root"}} // room to grow inside the disk
	full := []testPart{{2048, 4095, "boot"}, {4096, 16350, "root"}}
	tests := []struct {
		name  string
		parts []testPart
		// grown is the disk's size after the table was made (and damaged).
		grown       int64
		damage      func(t *testing.T, path string)
		wantChanged bool
	}{
		{name: "neither damaged, room inside", parts: room, grown: size, wantChanged: true},
		{name: "neither damaged, the disk grew", parts: room, grown: 2 * size, wantChanged: true},
		{name: "primary header CRC bad", parts: room, grown: size, damage: primaryHeaderCRC, wantChanged: true},
		{name: "primary header gone", parts: room, grown: size, damage: primaryHeader, wantChanged: true},
		{name: "primary entries CRC bad", parts: room, grown: size, damage: primaryEntries, wantChanged: true},
		{name: "primary entries CRC bad, the disk grew", parts: room, grown: 2 * size, damage: primaryEntries, wantChanged: true},
		{name: "primary entries CRC bad, the disk grew a little", parts: full, grown: size + 16*512, damage: primaryEntries},
		{name: "primary entries CRC bad, nothing to grow", parts: full, grown: size, damage: primaryEntries},
		{name: "backup header CRC bad", parts: room, grown: size, damage: backupHeaderCRC, wantChanged: true},
		{name: "backup entries CRC bad", parts: room, grown: size, damage: backupEntries, wantChanged: true},
		{name: "backup header CRC bad, the disk grew", parts: room, grown: 2 * size, damage: backupHeaderCRC, wantChanged: true},
		{name: "backup entries CRC bad, nothing to grow", parts: full, grown: size, damage: backupEntries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// The table as it was, and as an uninterrupted grow of an
			// undamaged copy leaves it.
			pristine := dir + "/pristine.img"
			writeGPT(t, pristine, size, 512, tt.parts)
			oldEntries := readableGPTs(t, pristine, 512)["primary"]
			truncate(t, pristine, tt.grown)
			if _, err := Grow(openImage(t, pristine), 2, GrowOptions{}); err != nil {
				t.Fatalf("grow an undamaged copy: %v", err)
			}
			want := tableRegions(t, pristine)
			newEntries := readableGPTs(t, pristine, 512)["primary"]
			if oldEntries == nil || newEntries == nil {
				t.Fatal("the undamaged copy has no valid primary")
			}

			fresh := func(name string) string {
				path := dir + "/" + name
				writeGPT(t, path, size, 512, tt.parts)
				if tt.damage != nil {
					tt.damage(t, path)
				}
				truncate(t, path, tt.grown)
				return path
			}
			// Record the writes of an uninterrupted run.
			path := fresh("record.img")
			rec := &cutDevice{Device: openImage(t, path), t: t, budget: math.MaxInt64}
			res, err := Grow(rec, 2, GrowOptions{})
			if err != nil {
				t.Fatalf("uninterrupted grow: %v", err)
			}
			if res.Changed != tt.wantChanged {
				t.Fatalf("uninterrupted grow: %s, want changed=%v", res, tt.wantChanged)
			}
			if !bytes.Equal(tableRegions(t, path), want) {
				t.Fatal("the uninterrupted grow of the damaged disk left another table than that of the undamaged one")
			}
			points := cutPoints(rec.writes)
			t.Logf("%d writes (%s), %d cut points", len(rec.writes), res.Repaired, len(points))

			var failed []string
			for _, p := range points {
				if problem := cutAt(t, fresh(fmt.Sprintf("cut-%d-%v.img", p.budget, p.tail)), p, oldEntries, newEntries, want); problem != "" {
					failed = append(failed, fmt.Sprintf("cut at %s: %s", p, problem))
				}
			}
			if len(failed) > 0 {
				t.Errorf("%d of %d cut points fail; the first:\n%s", len(failed), len(points), strings.Join(failed[:min(len(failed), 5)], "\n"))
			}
		})
	}
}

// cutAt cuts a grow of the image at p and says what is wrong with the disk
// it leaves, or "".
func cutAt(t *testing.T, path string, p cutPoint, oldEntries, newEntries, want []byte) string {
	t.Helper()
	defer os.Remove(path)
	cut := &cutDevice{Device: openImage(t, path), t: t, budget: p.budget, tail: p.tail}
	if _, err := Grow(cut, 2, GrowOptions{}); !errors.Is(err, errCut) {
		return fmt.Sprintf("the grow returned %v, want the cut", err)
	}
	copies := readableGPTs(t, path, 512)
	if len(copies) == 0 {
		return "no valid GPT left on the disk"
	}
	for where, e := range copies {
		if !bytes.Equal(e, oldEntries) && !bytes.Equal(e, newEntries) {
			return fmt.Sprintf("the %s holds neither the old table nor the new", where)
		}
	}
	if !isProtectiveMBR(t, path) {
		return "sector 0 is no longer a protective MBR"
	}
	// The next boot's run finishes the job.
	again := &cutDevice{Device: openImage(t, path), t: t, budget: math.MaxInt64}
	if _, err := Grow(again, 2, GrowOptions{}); err != nil {
		return fmt.Sprintf("the run after it: %v", err)
	}
	// A protective MBR torn with its new size but not its new CHS end
	// stays so: the size decides whether it is rewritten, and nothing
	// reads the CHS end of a GPT disk's protective MBR.
	got, want := tableRegions(t, path), bytes.Clone(want)
	copy(got[451:454], want[451:454])
	if !bytes.Equal(got, want) {
		return "the run after it left another table than an uninterrupted grow"
	}
	return ""
}
