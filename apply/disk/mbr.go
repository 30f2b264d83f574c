package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

const (
	mbrTableOffset = 446
	mbrEntrySize   = 16
	// maxLogicals bounds the EBR chain walk; Linux stops at a few hundred
	// too, and a loop in a hostile chain must end.
	maxLogicals = 256
	// typeProtective marks a GPT's protective MBR.
	typeProtective = 0xEE
)

// ErrProtectiveMBR means sector 0 is a GPT's protective (or hybrid) MBR:
// the GPT is the table to use.
var ErrProtectiveMBR = errors.New("the MBR is a GPT protective MBR")

// ErrNoTable means the disk has no MBR signature and no GPT.
var ErrNoTable = errors.New("no partition table (no MBR boot signature 0x55AA)")

// MBRPartition is a primary, extended or logical partition of an MBR disk.
// Start and Size are absolute, in logical sectors.
type MBRPartition struct {
	Number   int
	Type     byte
	Bootable bool
	Start    uint64
	Size     uint64
	// Extended marks the extended container (type 0x05, 0x0F or 0x85).
	Extended bool
	// EBR is the sector holding a logical partition's entry; 0 for primaries.
	EBR uint64
	// table and slot locate the entry: the sector (0 for the MBR) and its
	// index in that sector's table.
	table uint64
	slot  int
}

// End is the partition's last sector.
func (p MBRPartition) End() uint64 { return p.Start + p.Size - 1 }

// Logical reports a partition inside the extended container.
func (p MBRPartition) Logical() bool { return p.EBR != 0 }

// MBR is a validated DOS partition table with its EBR chain.
type MBR struct {
	SectorSize int
	// DiskID is the disk signature at byte 440 (PARTUUID's first half).
	DiskID     uint32
	Partitions []MBRPartition
	// sectors are the raw MBR and EBR sectors as read, by LBA.
	sectors map[uint64][]byte
	// links maps a logical partition's number to the entry that points at
	// its EBR (in the previous EBR), when there is one.
	links map[int]mbrLink
}

type mbrLink struct {
	table uint64
	slot  int
}

func isExtendedType(t byte) bool { return t == 0x05 || t == 0x0F || t == 0x85 }

type rawEntry struct {
	boot  byte
	typ   byte
	start uint32
	size  uint32
}

func parseEntry(sector []byte, slot int) rawEntry {
	b := sector[mbrTableOffset+slot*mbrEntrySize:]
	return rawEntry{
		boot:  b[0],
		typ:   b[4],
		start: binary.LittleEndian.Uint32(b[8:12]),
		size:  binary.LittleEndian.Uint32(b[12:16]),
	}
}

func (e rawEntry) empty() bool { return e.typ == 0 || e.size == 0 }

func hasBootSignature(sector []byte) bool {
	return len(sector) >= 512 && sector[510] == 0x55 && sector[511] == 0xAA
}

// ReadMBR reads sector 0 and the EBR chain of dev. A protective MBR is
// reported as ErrProtectiveMBR; layouts Linux would read differently from
// fdisk (data entries in EBR slots 2-4, two extended containers) are
// refused rather than guessed at.
func ReadMBR(dev Device) (*MBR, error) {
	ss := dev.SectorSize()
	sectors := uint64(dev.Size()) / uint64(ss)
	sector0 := make([]byte, ss)
	if err := readFull(dev, sector0, 0); err != nil {
		return nil, fmt.Errorf("read MBR: %w", err)
	}
	if !hasBootSignature(sector0) {
		return nil, ErrNoTable
	}
	m := &MBR{
		SectorSize: ss,
		DiskID:     binary.LittleEndian.Uint32(sector0[440:444]),
		sectors:    map[uint64][]byte{0: sector0},
		links:      map[int]mbrLink{},
	}
	var ext *MBRPartition
	for slot := 0; slot < 4; slot++ {
		e := parseEntry(sector0, slot)
		if e.typ == typeProtective {
			return nil, ErrProtectiveMBR
		}
	}
	for slot := 0; slot < 4; slot++ {
		e := parseEntry(sector0, slot)
		if e.empty() {
			continue
		}
		if e.boot != 0 && e.boot != 0x80 {
			return nil, fmt.Errorf("read MBR: entry %d has boot flag %#02x (not a partition table)", slot+1, e.boot)
		}
		p := MBRPartition{Number: slot + 1, Type: e.typ, Bootable: e.boot == 0x80,
			Start: uint64(e.start), Size: uint64(e.size), Extended: isExtendedType(e.typ), slot: slot}
		if p.Start == 0 {
			return nil, fmt.Errorf("read MBR: partition %d starts at sector 0", p.Number)
		}
		for _, o := range m.Partitions {
			if overlaps(p.Start, p.End(), o.Start, o.End()) {
				return nil, fmt.Errorf("read MBR: partitions %d and %d overlap", o.Number, p.Number)
			}
		}
		if p.Extended {
			if ext != nil {
				return nil, fmt.Errorf("read MBR: partitions %d and %d are both extended partitions", ext.Number, p.Number)
			}
			pp := p
			ext = &pp
		}
		m.Partitions = append(m.Partitions, p)
	}
	if ext != nil {
		if err := m.readLogicals(dev, *ext, sectors); err != nil {
			return nil, fmt.Errorf("read MBR: extended partition %d: %w", ext.Number, err)
		}
	}
	return m, nil
}

func (m *MBR) readLogicals(dev Device, ext MBRPartition, diskSectors uint64) error {
	ebr := ext.Start
	visited := map[uint64]bool{}
	var prevEBR uint64
	prevSlot := -1
	number := 5
	for range maxLogicals {
		if visited[ebr] {
			return fmt.Errorf("EBR chain loops back to sector %d", ebr)
		}
		visited[ebr] = true
		if ebr >= diskSectors {
			return fmt.Errorf("EBR at sector %d is past the disk's end", ebr)
		}
		sector := make([]byte, m.SectorSize)
		if err := readFull(dev, sector, int64(ebr)*int64(m.SectorSize)); err != nil {
			return fmt.Errorf("read EBR: %w", err)
		}
		if !hasBootSignature(sector) {
			return fmt.Errorf("EBR at sector %d has no boot signature", ebr)
		}
		m.sectors[ebr] = sector
		data, link := parseEntry(sector, 0), parseEntry(sector, 1)
		for slot := 2; slot < 4; slot++ {
			if !parseEntry(sector, slot).empty() {
				return fmt.Errorf("EBR at sector %d uses entry %d, which fdisk never writes", ebr, slot+1)
			}
		}
		if !link.empty() && !isExtendedType(link.typ) {
			return fmt.Errorf("EBR at sector %d holds a second data partition in entry 2", ebr)
		}
		if !data.empty() {
			if isExtendedType(data.typ) {
				return fmt.Errorf("EBR at sector %d has a link in entry 1", ebr)
			}
			p := MBRPartition{Number: number, Type: data.typ, Bootable: data.boot == 0x80,
				Start: ebr + uint64(data.start), Size: uint64(data.size), EBR: ebr, table: ebr, slot: 0}
			if data.start == 0 || p.End() > ext.End() {
				return fmt.Errorf("logical partition %d [%d, %d] is not inside the container [%d, %d] after its EBR",
					number, p.Start, p.End(), ext.Start, ext.End())
			}
			for _, o := range m.Partitions {
				if o.Logical() && overlaps(p.EBR, p.End(), o.EBR, o.End()) {
					return fmt.Errorf("logical partitions %d and %d overlap", o.Number, p.Number)
				}
			}
			if prevSlot >= 0 {
				m.links[number] = mbrLink{table: prevEBR, slot: prevSlot}
			}
			m.Partitions = append(m.Partitions, p)
			number++
		}
		if link.empty() {
			return nil
		}
		next := ext.Start + uint64(link.start)
		if next <= ext.Start || next > ext.End() {
			return fmt.Errorf("EBR at sector %d links to sector %d outside the container", ebr, next)
		}
		prevEBR, prevSlot = ebr, 1
		ebr = next
	}
	return fmt.Errorf("more than %d logical partitions", maxLogicals)
}

// Partition returns partition number n.
func (m *MBR) Partition(n int) (MBRPartition, bool) {
	for _, p := range m.Partitions {
		if p.Number == n {
			return p, true
		}
	}
	return MBRPartition{}, false
}

// Extended returns the extended container, if any.
func (m *MBR) Extended() (MBRPartition, bool) {
	for _, p := range m.Partitions {
		if p.Extended {
			return p, true
		}
	}
	return MBRPartition{}, false
}

// setEntrySize rewrites an entry's size and end CHS in the raw sector.
// lastLBA is the absolute last sector the entry covers.
func (m *MBR) setEntrySize(table uint64, slot int, size uint32, lastLBA uint64) {
	b := m.sectors[table][mbrTableOffset+slot*mbrEntrySize:]
	binary.LittleEndian.PutUint32(b[12:16], size)
	copy(b[5:8], chs(lastLBA))
}

// chs encodes an LBA as fdisk does for the conventional 255-head,
// 63-sector geometry, saturating at cylinder 1023 past its reach.
func chs(lba uint64) []byte {
	const heads, sectorsPerTrack = 255, 63
	if lba >= 1024*heads*sectorsPerTrack {
		return []byte{0xFE, 0xFF, 0xFF}
	}
	c := lba / (heads * sectorsPerTrack)
	h := (lba / sectorsPerTrack) % heads
	s := lba%sectorsPerTrack + 1
	return []byte{byte(h), byte(s) | byte((c>>2)&0xC0), byte(c)}
}

// String lists the partitions like `sfdisk --dump`, for logs and tests.
func (m *MBR) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "dos id=0x%08x\n", m.DiskID)
	parts := append([]MBRPartition(nil), m.Partitions...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].Number < parts[j].Number })
	for _, p := range parts {
		fmt.Fprintf(&sb, "%d start=%d size=%d type=%x\n", p.Number, p.Start, p.Size, p.Type)
	}
	return sb.String()
}
