package disk

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"unicode/utf16"
)

var gptSignature = [8]byte{'E', 'F', 'I', ' ', 'P', 'A', 'R', 'T'}

const (
	gptMinHeaderSize = 92
	gptMinEntrySize  = 128
	// gptMaxEntriesBytes bounds the entry array a header may claim, so a
	// hostile header cannot make us allocate gigabytes (sgdisk allows 128 KiB
	// of entries; leave room for unusual tables).
	gptMaxEntriesBytes = 1 << 20
)

// GUID is a GPT GUID in its on-disk (mixed-endian) byte order.
type GUID [16]byte

// String formats the GUID as sgdisk and blkid print it, upper case.
func (g GUID) String() string {
	return fmt.Sprintf("%08X-%04X-%04X-%X-%X",
		binary.LittleEndian.Uint32(g[0:4]), binary.LittleEndian.Uint16(g[4:6]),
		binary.LittleEndian.Uint16(g[6:8]), g[8:10], g[10:16])
}

// IsZero reports an unused entry's type.
func (g GUID) IsZero() bool { return g == GUID{} }

// GPTHeader is a parsed GPT header (primary or backup).
type GPTHeader struct {
	Revision       uint32
	HeaderSize     uint32
	MyLBA          uint64
	AlternateLBA   uint64
	FirstUsableLBA uint64
	LastUsableLBA  uint64
	DiskGUID       GUID
	EntriesLBA     uint64
	NumEntries     uint32
	EntrySize      uint32
	EntriesCRC     uint32
	// raw is the header's HeaderSize bytes as read, so bytes we do not model
	// (reserved, vendor extensions) survive a rewrite.
	raw []byte
}

// GPTEntry is one used partition entry.
type GPTEntry struct {
	// Number is the partition number (entry index + 1), as the kernel and
	// sgdisk number partitions.
	Number     int
	Type       GUID
	ID         GUID
	FirstLBA   uint64
	LastLBA    uint64
	Attributes uint64
	Name       string
}

// GPT is a validated GUID partition table.
type GPT struct {
	SectorSize int
	// Header is the header the table was read from: the primary when it is
	// valid, else the backup.
	Header  GPTHeader
	Entries []GPTEntry
	// FromBackup is true when the primary header or its entries were
	// invalid and the table came from a backup (Header.MyLBA says which).
	FromBackup bool
	// PrimaryErr says why the primary was not used.
	PrimaryErr error
	rawEntries []byte
}

func (h GPTHeader) entriesBytes() int { return int(h.NumEntries) * int(h.EntrySize) }

func (h GPTHeader) entriesSectors(ss int) uint64 {
	return uint64((h.entriesBytes() + ss - 1) / ss)
}

// parseGPTHeader validates the header sector read at lba.
func parseGPTHeader(sector []byte, lba uint64) (GPTHeader, error) {
	var h GPTHeader
	if len(sector) < gptMinHeaderSize || !bytes.Equal(sector[0:8], gptSignature[:]) {
		return h, errors.New("no GPT signature")
	}
	le := binary.LittleEndian
	h.Revision = le.Uint32(sector[8:12])
	h.HeaderSize = le.Uint32(sector[12:16])
	if h.HeaderSize < gptMinHeaderSize || int(h.HeaderSize) > len(sector) {
		return h, fmt.Errorf("header size %d out of range [%d, %d]", h.HeaderSize, gptMinHeaderSize, len(sector))
	}
	h.raw = append([]byte(nil), sector[:h.HeaderSize]...)
	want := le.Uint32(sector[16:20])
	if got := headerCRC(h.raw); got != want {
		return h, fmt.Errorf("header CRC32 %08x does not match the stored %08x", got, want)
	}
	h.MyLBA = le.Uint64(sector[24:32])
	h.AlternateLBA = le.Uint64(sector[32:40])
	h.FirstUsableLBA = le.Uint64(sector[40:48])
	h.LastUsableLBA = le.Uint64(sector[48:56])
	copy(h.DiskGUID[:], sector[56:72])
	h.EntriesLBA = le.Uint64(sector[72:80])
	h.NumEntries = le.Uint32(sector[80:84])
	h.EntrySize = le.Uint32(sector[84:88])
	h.EntriesCRC = le.Uint32(sector[88:92])
	switch {
	case h.MyLBA != lba:
		return h, fmt.Errorf("header says it is at LBA %d, read at LBA %d", h.MyLBA, lba)
	case h.EntrySize < gptMinEntrySize || h.EntrySize%8 != 0:
		return h, fmt.Errorf("partition entry size %d is not a multiple of 8 of at least %d", h.EntrySize, gptMinEntrySize)
	case h.NumEntries == 0 || uint64(h.NumEntries)*uint64(h.EntrySize) > gptMaxEntriesBytes:
		return h, fmt.Errorf("%d entries of %d bytes is out of range", h.NumEntries, h.EntrySize)
	case h.FirstUsableLBA > h.LastUsableLBA+1:
		return h, fmt.Errorf("first usable LBA %d is after last usable LBA %d", h.FirstUsableLBA, h.LastUsableLBA)
	}
	return h, nil
}

// headerCRC is the CRC32 of a header with its CRC field taken as zero.
func headerCRC(raw []byte) uint32 {
	c := append([]byte(nil), raw...)
	copy(c[16:20], []byte{0, 0, 0, 0})
	return crc32.ChecksumIEEE(c)
}

// readGPTHeaderAt reads and validates the header sector at lba alone.
func readGPTHeaderAt(dev Device, lba uint64, ss int, diskSectors uint64) (GPTHeader, error) {
	if lba >= diskSectors {
		return GPTHeader{}, fmt.Errorf("LBA %d is past the disk's end (%d sectors)", lba, diskSectors)
	}
	sector := make([]byte, ss)
	if err := readFull(dev, sector, int64(lba)*int64(ss)); err != nil {
		return GPTHeader{}, err
	}
	return parseGPTHeader(sector, lba)
}

// readGPTAt reads and validates the header at lba, its entry array and
// the entries' layout on a disk of diskSectors sectors.
func readGPTAt(dev Device, lba uint64, ss int, diskSectors uint64) (*GPT, error) {
	h, err := readGPTHeaderAt(dev, lba, ss, diskSectors)
	if err != nil {
		return nil, err
	}
	n := h.entriesSectors(ss)
	if h.EntriesLBA < 1 || h.EntriesLBA >= diskSectors || n > diskSectors-h.EntriesLBA {
		return nil, fmt.Errorf("partition entries at LBA %d (%d sectors) lie outside the disk", h.EntriesLBA, n)
	}
	if h.EntriesLBA <= lba && h.EntriesLBA+n > lba {
		return nil, fmt.Errorf("partition entries at LBA %d overlap the header", h.EntriesLBA)
	}
	if overlaps(h.EntriesLBA, h.EntriesLBA+n-1, h.FirstUsableLBA, h.LastUsableLBA) {
		return nil, fmt.Errorf("partition entries at LBA %d overlap the usable area [%d, %d]", h.EntriesLBA, h.FirstUsableLBA, h.LastUsableLBA)
	}
	// The spec's place for a backup's entries, which a restored primary
	// (before the usable area) therefore never overwrites while the
	// backup is all the disk has.
	if lba != 1 && (h.EntriesLBA <= h.LastUsableLBA || h.EntriesLBA+n > lba) {
		return nil, fmt.Errorf("backup partition entries at LBA %d (%d sectors) are not between the usable area's end %d and the header", h.EntriesLBA, n, h.LastUsableLBA)
	}
	raw := make([]byte, h.entriesBytes())
	if err := readFull(dev, raw, int64(h.EntriesLBA)*int64(ss)); err != nil {
		return nil, fmt.Errorf("read partition entries: %w", err)
	}
	if got := crc32.ChecksumIEEE(raw); got != h.EntriesCRC {
		return nil, fmt.Errorf("partition entries CRC32 %08x does not match the header's %08x", got, h.EntriesCRC)
	}
	g := &GPT{SectorSize: ss, Header: h, rawEntries: raw}
	if err := g.parseEntries(); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *GPT) parseEntries() error {
	le := binary.LittleEndian
	size := int(g.Header.EntrySize)
	g.Entries = nil
	for i := 0; i < int(g.Header.NumEntries); i++ {
		b := g.rawEntries[i*size : (i+1)*size]
		var e GPTEntry
		copy(e.Type[:], b[0:16])
		if e.Type.IsZero() {
			continue
		}
		e.Number = i + 1
		copy(e.ID[:], b[16:32])
		e.FirstLBA = le.Uint64(b[32:40])
		e.LastLBA = le.Uint64(b[40:48])
		e.Attributes = le.Uint64(b[48:56])
		e.Name = decodeUTF16Name(b[56:128])
		if e.FirstLBA > e.LastLBA {
			return fmt.Errorf("partition %d starts at LBA %d after its end %d", e.Number, e.FirstLBA, e.LastLBA)
		}
		if e.FirstLBA < g.Header.FirstUsableLBA || e.LastLBA > g.Header.LastUsableLBA {
			return fmt.Errorf("partition %d [%d, %d] lies outside the usable area [%d, %d]",
				e.Number, e.FirstLBA, e.LastLBA, g.Header.FirstUsableLBA, g.Header.LastUsableLBA)
		}
		g.Entries = append(g.Entries, e)
	}
	// Sorted by start, a partition can only overlap the one before it. A
	// table may hold thousands of entries, and comparing every pair cost a
	// quarter of a second per read of a hostile one.
	byStart := slices.Clone(g.Entries)
	slices.SortFunc(byStart, func(a, b GPTEntry) int { return cmp.Compare(a.FirstLBA, b.FirstLBA) })
	for i := 1; i < len(byStart); i++ {
		if a, b := byStart[i-1], byStart[i]; overlaps(a.FirstLBA, a.LastLBA, b.FirstLBA, b.LastLBA) {
			return fmt.Errorf("partitions %d and %d overlap", min(a.Number, b.Number), max(a.Number, b.Number))
		}
	}
	return nil
}

func overlaps(a0, a1, b0, b1 uint64) bool { return a0 <= b1 && b0 <= a1 }

func decodeUTF16Name(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}

// ReadGPT reads the GPT of dev: the primary at LBA 1 or, when the primary
// or its entries are damaged, a backup. When the primary header itself is
// intact (only its entries are damaged) the backup it names comes first,
// as in gdisk: it is the copy that header describes, and on a disk that
// grew since the table was written it is short of the end. Else, or when
// that one is damaged too, the backup at the disk's last sector, where the
// kernel looks and where a grow leaves its new copy first.
func ReadGPT(dev Device) (*GPT, error) {
	ss := dev.SectorSize()
	sectors := uint64(dev.Size()) / uint64(ss)
	if sectors < 3 {
		return nil, fmt.Errorf("disk of %d sectors is too small for a GPT", sectors)
	}
	g, perr := readGPTAt(dev, 1, ss, sectors)
	if perr == nil {
		return g, nil
	}
	last := sectors - 1
	ph, herr := readGPTHeaderAt(dev, 1, ss, sectors)
	// An intact primary header says which disk this is. A valid table
	// that names another disk is not this table's backup: it is what an
	// image written over a disk that had a GPT leaves at the disk's end.
	readBackup := func(lba uint64) (*GPT, error) {
		b, err := readGPTAt(dev, lba, ss, sectors)
		if err == nil && herr == nil && b.Header.DiskGUID != ph.DiskGUID {
			return nil, fmt.Errorf("disk GUID %s is not the primary header's %s", b.Header.DiskGUID, ph.DiskGUID)
		}
		return b, err
	}
	var berrs []error
	if alt := ph.AlternateLBA; herr == nil && alt > 1 && alt < last {
		b, err := readBackup(alt)
		if err == nil {
			b.FromBackup, b.PrimaryErr = true, perr
			return b, nil
		}
		berrs = append(berrs, fmt.Errorf("backup header at LBA %d named by the primary header: %w", alt, err))
	}
	b, err := readBackup(last)
	if err == nil {
		b.FromBackup, b.PrimaryErr = true, perr
		return b, nil
	}
	berrs = append(berrs, fmt.Errorf("backup header at LBA %d: %w", last, err))
	return nil, fmt.Errorf("read GPT: primary header at LBA 1: %w; %w", perr, joinSemicolon(berrs))
}

// joinSemicolon joins errors on one line, each still matchable by errors.Is.
func joinSemicolon(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%w; %w", errs[0], joinSemicolon(errs[1:]))
}

// Entry returns partition number n.
func (g *GPT) Entry(n int) (GPTEntry, bool) {
	for _, e := range g.Entries {
		if e.Number == n {
			return e, true
		}
	}
	return GPTEntry{}, false
}

// setLastLBA changes partition n's end in the raw entry array, leaving
// every other byte of the entry as it was.
func (g *GPT) setLastLBA(n int, last uint64) {
	off := (n-1)*int(g.Header.EntrySize) + 40
	binary.LittleEndian.PutUint64(g.rawEntries[off:off+8], last)
	for i := range g.Entries {
		if g.Entries[i].Number == n {
			g.Entries[i].LastLBA = last
		}
	}
}

// headerSector renders a header sector for the given placement, with
// fresh CRCs, from the header read (so unmodelled bytes are kept).
func (g *GPT) headerSector(myLBA, altLBA, entriesLBA, lastUsable uint64) []byte {
	le := binary.LittleEndian
	sector := make([]byte, g.SectorSize)
	copy(sector, g.Header.raw)
	le.PutUint64(sector[24:32], myLBA)
	le.PutUint64(sector[32:40], altLBA)
	le.PutUint64(sector[48:56], lastUsable)
	le.PutUint64(sector[72:80], entriesLBA)
	le.PutUint32(sector[88:92], crc32.ChecksumIEEE(g.rawEntries))
	le.PutUint32(sector[16:20], 0)
	le.PutUint32(sector[16:20], crc32.ChecksumIEEE(sector[:g.Header.HeaderSize]))
	return sector
}

// entriesRegion is the entry array padded to whole sectors.
func (g *GPT) entriesRegion() []byte {
	n := g.Header.entriesSectors(g.SectorSize)
	b := make([]byte, int(n)*g.SectorSize)
	copy(b, g.rawEntries)
	return b
}

// String summarises the table like `sgdisk -p`'s list, for logs and tests.
func (g *GPT) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "gpt disk=%s first=%d last=%d\n", g.Header.DiskGUID, g.Header.FirstUsableLBA, g.Header.LastUsableLBA)
	for _, e := range g.Entries {
		fmt.Fprintf(&sb, "%d %d %d %s %q\n", e.Number, e.FirstLBA, e.LastLBA, e.Type, e.Name)
	}
	return sb.String()
}
