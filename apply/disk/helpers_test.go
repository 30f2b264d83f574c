package disk

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// memDevice is a Device over a byte slice, for fuzzing and small tables.
type memDevice struct {
	b  []byte
	ss int
}

func (m *memDevice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m.b)) {
		return 0, errors.New("read out of range")
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, errors.New("short read")
	}
	return n, nil
}

func (m *memDevice) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m.b)) {
		return 0, errors.New("write out of range")
	}
	return copy(m.b[off:], p), nil
}

func (m *memDevice) Size() int64     { return int64(len(m.b)) }
func (m *memDevice) SectorSize() int { return m.ss }
func (m *memDevice) Sync() error     { return nil }

// killAfter lets n writes through, then fails every later one, like a grow
// killed partway.
type killAfter struct {
	Device
	n int
}

var errKilled = errors.New("killed")

func (k *killAfter) WriteAt(p []byte, off int64) (int, error) {
	if k.n <= 0 {
		return 0, errKilled
	}
	k.n--
	return k.Device.WriteAt(p, off)
}

type testPart struct {
	first, last uint64
	name        string
}

var linuxFS = GUID{0xAF, 0x3D, 0xC6, 0x0F, 0x83, 0x84, 0x72, 0x47, 0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4}

// writeGPT lays a fresh GPT (protective MBR, primary and backup with 128
// entries) on an image of size bytes, written independently of the code
// under test so the tests check it against the spec, not against itself.
func writeGPT(t testing.TB, path string, size int64, ss int, parts []testPart) {
	t.Helper()
	writeGPTEntries(t, path, size, ss, 128, parts)
}

// writeGPTEntries is writeGPT with an entry array of numEntries entries.
func writeGPTEntries(t testing.TB, path string, size int64, ss, numEntries int, parts []testPart) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	n := uint64(size) / uint64(ss)
	entSectors := uint64(numEntries*128+ss-1) / uint64(ss)
	first, last := 2+entSectors, n-2-entSectors
	entries := make([]byte, numEntries*128)
	for i, p := range parts {
		e := entries[i*128:]
		copy(e[0:16], linuxFS[:])
		for j := range 16 {
			e[16+j] = byte(i*16 + j + 1)
		}
		le.PutUint64(e[32:], p.first)
		le.PutUint64(e[40:], p.last)
		for j, c := range p.name {
			le.PutUint16(e[56+2*j:], uint16(c))
		}
	}
	header := func(my, alt, ent uint64) []byte {
		h := make([]byte, ss)
		copy(h, "EFI PART")
		le.PutUint32(h[8:], 0x00010000)
		le.PutUint32(h[12:], 92)
		le.PutUint64(h[24:], my)
		le.PutUint64(h[32:], alt)
		le.PutUint64(h[40:], first)
		le.PutUint64(h[48:], last)
		copy(h[56:72], "disk-guid-123456")
		le.PutUint64(h[72:], ent)
		le.PutUint32(h[80:], uint32(numEntries))
		le.PutUint32(h[84:], 128)
		le.PutUint32(h[88:], crc32.ChecksumIEEE(entries))
		le.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	pmbr := make([]byte, ss)
	pmbr[446+4] = 0xEE
	le.PutUint32(pmbr[446+8:], 1)
	le.PutUint32(pmbr[446+12:], uint32(min(n-1, 0xFFFFFFFF)))
	pmbr[510], pmbr[511] = 0x55, 0xAA
	write := func(b []byte, lba uint64) {
		if _, err := f.WriteAt(b, int64(lba)*int64(ss)); err != nil {
			t.Fatal(err)
		}
	}
	write(pmbr, 0)
	write(header(1, n-1, 2), 1)
	write(entries, 2)
	write(entries, n-1-entSectors)
	write(header(n-1, 1, n-1-entSectors), n-1)
}

type mbrPart struct {
	typ         byte
	start, size uint32
}

// writeMBR lays an MBR with primaries (slots 1-4) and, when logicals are
// given, an EBR chain as fdisk writes it: each EBR at the start of its
// slot, 2048 sectors before its partition, linked with sizes covering the
// next EBR through the end of its partition.
func writeMBR(t testing.TB, path string, size int64, primaries []mbrPart, logicals []mbrPart) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	put := func(sector []byte, slot int, p mbrPart) {
		e := sector[446+16*slot:]
		e[4] = p.typ
		le.PutUint32(e[8:], p.start)
		le.PutUint32(e[12:], p.size)
	}
	mbr := make([]byte, 512)
	le.PutUint32(mbr[440:], 0x28a8ad50)
	var ext mbrPart
	for i, p := range primaries {
		put(mbr, i, p)
		if p.typ == 0x05 {
			ext = p
		}
	}
	mbr[510], mbr[511] = 0x55, 0xAA
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
	for i, l := range logicals {
		ebr := make([]byte, 512)
		ebrLBA := l.start - 2048
		put(ebr, 0, mbrPart{typ: l.typ, start: 2048, size: l.size})
		if i+1 < len(logicals) {
			next := logicals[i+1]
			put(ebr, 1, mbrPart{typ: 0x05, start: next.start - 2048 - ext.start, size: next.size + 2048})
		}
		ebr[510], ebr[511] = 0x55, 0xAA
		if _, err := f.WriteAt(ebr, int64(ebrLBA)*512); err != nil {
			t.Fatal(err)
		}
	}
}

func openImage(t testing.TB, path string) *File {
	t.Helper()
	d, err := OpenFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func tempImage(t testing.TB) string { return filepath.Join(t.TempDir(), "disk.img") }

func truncate(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

const (
	kib = 1024
	mib = 1024 * kib
	gib = 1024 * mib
)
