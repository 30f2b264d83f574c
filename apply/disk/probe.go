package disk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// FS is what a filesystem's superblock says about it, as blkid reports it.
type FS struct {
	Type  string
	Label string
	UUID  string
}

// ErrUnknownFS means no supported superblock was found.
var ErrUnknownFS = errors.New("no ext2/3/4, XFS, btrfs, ISO 9660 or FAT superblock")

// Probe reads the superblock of the filesystem on r (a partition or an
// image) for its type, label and UUID, without blkid.
func Probe(r io.ReaderAt) (FS, error) {
	for _, p := range []func(io.ReaderAt) (FS, bool){probeExt, probeXFS, probeBtrfs, probeISO9660, probeFAT} {
		if fs, ok := p(r); ok {
			return fs, nil
		}
	}
	return FS{}, ErrUnknownFS
}

func readAt(r io.ReaderAt, off int64, n int) ([]byte, bool) {
	b := make([]byte, n)
	m, err := r.ReadAt(b, off)
	return b, m == n && (err == nil || err == io.EOF)
}

// uuidString formats 16 bytes the way blkid prints filesystem UUIDs.
func uuidString(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func probeExt(r io.ReaderAt) (FS, bool) {
	sb, ok := readAt(r, 1024, 1024)
	if !ok || binary.LittleEndian.Uint16(sb[56:58]) != 0xEF53 {
		return FS{}, false
	}
	compat := binary.LittleEndian.Uint32(sb[0x5C:])
	incompat := binary.LittleEndian.Uint32(sb[0x60:])
	roCompat := binary.LittleEndian.Uint32(sb[0x64:])
	typ := "ext2"
	switch {
	case incompat&0x2C0 != 0 || roCompat&0x8 != 0: // extents, 64bit, flex_bg; huge_file
		typ = "ext4"
	case compat&0x4 != 0: // has_journal
		typ = "ext3"
	}
	return FS{Type: typ, Label: cString(sb[120:136]), UUID: uuidString(sb[104:120])}, true
}

func probeXFS(r io.ReaderAt) (FS, bool) {
	sb, ok := readAt(r, 0, 120)
	if !ok || string(sb[0:4]) != "XFSB" {
		return FS{}, false
	}
	return FS{Type: "xfs", Label: cString(sb[108:120]), UUID: uuidString(sb[32:48])}, true
}

func probeBtrfs(r io.ReaderAt) (FS, bool) {
	sb, ok := readAt(r, 0x10000, 0x12b+256)
	if !ok || string(sb[0x40:0x48]) != "_BHRfS_M" {
		return FS{}, false
	}
	return FS{Type: "btrfs", Label: cString(sb[0x12b : 0x12b+256]), UUID: uuidString(sb[0x20:0x30])}, true
}

// probeISO9660 reads the primary volume descriptor; blkid makes the UUID
// from its creation time (YYYY-MM-DD-HH-MM-SS-CC).
func probeISO9660(r io.ReaderAt) (FS, bool) {
	pvd, ok := readAt(r, 32768, 2048)
	if !ok || pvd[0] != 1 || string(pvd[1:6]) != "CD001" {
		return FS{}, false
	}
	fs := FS{Type: "iso9660", Label: strings.TrimRight(string(pvd[40:72]), " \x00")}
	date := pvd[813 : 813+16]
	if isDigits(date) && string(date) != "0000000000000000" {
		d := string(date)
		fs.UUID = fmt.Sprintf("%s-%s-%s-%s-%s-%s-%s", d[0:4], d[4:6], d[6:8], d[8:10], d[10:12], d[12:14], d[14:16])
	}
	return fs, true
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// probeFAT reads a FAT boot sector's label and volume id. blkid prefers
// the label in the root directory when there is one; mkfs.vfat writes
// the same label to both.
func probeFAT(r io.ReaderAt) (FS, bool) {
	bs, ok := readAt(r, 0, 512)
	if !ok || bs[510] != 0x55 || bs[511] != 0xAA {
		return FS{}, false
	}
	bytesPerSector := binary.LittleEndian.Uint16(bs[11:13])
	if bytesPerSector < 512 || bytesPerSector > 4096 || bytesPerSector&(bytesPerSector-1) != 0 || bs[13] == 0 {
		return FS{}, false
	}
	var id, label []byte
	switch {
	case binary.LittleEndian.Uint16(bs[22:24]) == 0 && string(bs[82:87]) == "FAT32":
		id, label = bs[67:71], bs[71:82]
	case string(bs[54:57]) == "FAT":
		id, label = bs[39:43], bs[43:54]
	default:
		return FS{}, false
	}
	fs := FS{Type: "vfat", UUID: fmt.Sprintf("%02X%02X-%02X%02X", id[3], id[2], id[1], id[0])}
	if l := strings.TrimRight(string(label), " \x00"); l != "NO NAME" {
		fs.Label = l
	}
	return fs, true
}
