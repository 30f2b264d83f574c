// Package disksetup is cloud-init's disk_setup module (cc_disk_setup): it
// writes MBR and GPT partition tables from disk_setup layouts given in
// percentages of the disk, with the same sector arithmetic as the sfdisk
// script and sgdisk commands cloud-init runs, and makes filesystems from
// fs_setup with the target's mkfs.* (FAT32 without one). It never replaces
// a partition table or a filesystem it finds unless told to.
package disksetup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Table types cloud-init knows.
const (
	MBR = "mbr"
	GPT = "gpt"
)

// PartSpec is one item of a layout list: a share of the disk in percent
// and an optional type (an MBR id in hex such as 83, or a gdisk code such
// as 8200 or 82, or a type GUID). An empty Type is the tool's default
// (Linux).
type PartSpec struct {
	Percent float64
	Type    string
}

// Layout is disk_setup's layout key: Whole is "layout: true" (one
// partition over the disk), otherwise Parts lists the partitions.
type Layout struct {
	Whole bool
	Parts []PartSpec
}

// Empty reports whether the layout asks for no partitioning at all
// (layout false, missing or an empty list), which cloud-init skips.
func (l Layout) Empty() bool { return !l.Whole && len(l.Parts) == 0 }

// Extent is one planned partition, in logical sectors; Type is the MBR id
// or GPT type GUID it gets.
type Extent struct {
	Start, Size uint64
	MBRType     byte
	GPTType     string
}

// End is the last sector of the extent.
func (e Extent) End() uint64 { return e.Start + e.Size - 1 }

// grain is the alignment of partition starts that sfdisk and sgdisk both
// use by default: one MiB in sectors.
func grain(sectorSize int) uint64 {
	g := uint64(1<<20) / uint64(sectorSize)
	if g == 0 {
		return 1
	}
	return g
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) / a * a }

// shareOf is cloud-init's int(float(size) * (float(percent) / 100)), with
// size the disk's size in sectors as a float (Python 3's true division of
// bytes by sector size).
func shareOf(totalBytes int64, sectorSize int, percent float64) uint64 {
	size := float64(totalBytes) / float64(sectorSize)
	v := size * (percent / 100)
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// PlanMBR computes the partitions that cloud-init's sfdisk script
// (",SIZE,TYPE" lines, the last ",,TYPE") gives on a disk of totalBytes:
// sfdisk puts each start on the next MiB boundary after the previous
// partition, keeps explicit sizes as they are and lets the last partition
// run to the disk's end.
func PlanMBR(totalBytes int64, sectorSize int, l Layout) ([]Extent, error) {
	if l.Empty() {
		return nil, errors.New("layout: nothing to partition")
	}
	parts := l.Parts
	if l.Whole {
		// cloud-init 22.4.2 sends "0," which sfdisk 2.38 rejects (start 0
		// is out of range); later cloud-init sends ",,83", one Linux
		// partition over the disk, which is what we make.
		parts = []PartSpec{{Percent: 100}}
	}
	if len(parts) > 4 {
		return nil, fmt.Errorf("layout: %d partitions, an MBR layout takes at most 4 (cloud-init makes no extended partitions)", len(parts))
	}
	total := uint64(totalBytes) / uint64(sectorSize)
	g := grain(sectorSize)
	next := g
	var out []Extent
	for i, p := range parts {
		typ, err := mbrType(p.Type)
		if err != nil {
			return nil, fmt.Errorf("layout item %d: %w", i, err)
		}
		start := alignUp(next, g)
		if start >= total {
			return nil, fmt.Errorf("layout item %d: no room left on a disk of %d sectors (next start %d)", i, total, start)
		}
		size := total - start
		if i < len(parts)-1 {
			size = shareOf(totalBytes, sectorSize, p.Percent)
			if size == 0 {
				return nil, fmt.Errorf("layout item %d: %v%% of the disk is no sectors", i, p.Percent)
			}
			if start+size > total {
				return nil, fmt.Errorf("layout item %d: %d sectors from sector %d run past the disk's end (%d sectors)", i, size, start, total)
			}
		}
		if start+size > 1<<32 || size >= 1<<32 {
			return nil, fmt.Errorf("layout item %d: ends past 2 TiB in 512-byte sectors, beyond what an MBR can address; use table_type: gpt", i)
		}
		out = append(out, Extent{Start: start, Size: size, MBRType: typ})
		next = start + size
	}
	return out, nil
}

// gptEntrySectors is the size of the 128-entry partition array sgdisk
// writes, in sectors.
func gptEntrySectors(sectorSize int) uint64 {
	return (128*128 + uint64(sectorSize) - 1) / uint64(sectorSize)
}

// PlanGPT computes the partitions that cloud-init's sgdisk commands
// (sgdisk -n N:0:+SIZE, the last -n N:0:0) give: each start is the first
// MiB-aligned free sector, each end start+SIZE-1, the last partition ends
// at the last usable sector.
func PlanGPT(totalBytes int64, sectorSize int, l Layout) ([]Extent, error) {
	if l.Empty() {
		return nil, errors.New("layout: nothing to partition")
	}
	parts := l.Parts
	if l.Whole {
		parts = []PartSpec{{Percent: 100}}
	}
	if len(parts) > 128 {
		return nil, fmt.Errorf("layout: %d partitions, a GPT holds 128", len(parts))
	}
	total := uint64(totalBytes) / uint64(sectorSize)
	es := gptEntrySectors(sectorSize)
	firstUsable := 2 + es
	if total < 2*es+3 {
		return nil, fmt.Errorf("layout: a disk of %d sectors is too small for a GPT", total)
	}
	lastUsable := total - 2 - es
	g := grain(sectorSize)
	next := firstUsable
	var out []Extent
	for i, p := range parts {
		typ, err := gptType(p.Type)
		if err != nil {
			return nil, fmt.Errorf("layout item %d: %w", i, err)
		}
		start := alignUp(next, g)
		if start > lastUsable {
			return nil, fmt.Errorf("layout item %d: no room left on the disk (next start %d, last usable sector %d)", i, start, lastUsable)
		}
		end := lastUsable
		if i < len(parts)-1 {
			size := shareOf(totalBytes, sectorSize, p.Percent)
			if size == 0 {
				return nil, fmt.Errorf("layout item %d: %v%% of the disk is no sectors", i, p.Percent)
			}
			end = start + size - 1
			if end > lastUsable {
				return nil, fmt.Errorf("layout item %d: %d sectors from sector %d run past the last usable sector %d", i, size, start, lastUsable)
			}
		}
		out = append(out, Extent{Start: start, Size: end - start + 1, GPTType: typ})
		next = end + 1
	}
	return out, nil
}

// sfdiskAliases are the one-letter type names sfdisk accepts in scripts.
var sfdiskAliases = map[string]byte{"l": 0x83, "s": 0x82, "e": 0x05, "x": 0x85, "u": 0xef, "r": 0xfd, "v": 0x8e}

// mbrType reads a type the way sfdisk reads a script's type field: hex.
func mbrType(s string) (byte, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0x83, nil
	}
	if b, ok := sfdiskAliases[s]; ok {
		return b, nil
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 8)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("partition type %q is not an MBR type id (hex, such as 83 or 82)", s)
	}
	return byte(v), nil
}

// gdiskCodes maps the gdisk type codes people write in layouts to type
// GUIDs. cloud-init pads the code with zeros to four characters (82 ->
// 8200) before handing it to sgdisk.
var gdiskCodes = map[string]string{
	"0700": "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
	"0c01": "E3C9E316-0B5C-4DB8-817D-F92DF00215AE",
	"2700": "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC",
	"8200": "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F",
	"8300": "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
	"8301": "8DA63339-0007-60C0-C436-083AC8230908",
	"8302": "933AC7E1-2EB4-4F13-B844-0E14E2AEF915",
	"8303": "44479540-F297-41B2-9AF7-D131D5F0458A",
	"8304": "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709",
	"8305": "B921B045-1DF0-41C3-AF44-4C6F280D3FAE",
	"8306": "3B8F8425-20E0-4F3B-907F-1A25A76F98E8",
	"8310": "4D21B016-B534-45C2-A9FB-5C16E091FD2D",
	"8e00": "E6D6D379-F507-44C2-A23C-238F2A3DF928",
	"a504": "516E7CB6-6ECF-11D6-8FF8-00022D09712B",
	"ef00": "C12A7328-F81F-11D2-BA4B-00A0C93EC93B",
	"ef01": "024DEE41-33E7-11D3-9D69-0008C781F39F",
	"ef02": "21686148-6449-6E6F-744E-656564454649",
	"fd00": "A19D880F-05FC-4D3B-A006-743F0F84911E",
}

// gptType turns a layout type into a type GUID.
func gptType(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return gdiskCodes["8300"], nil
	}
	if len(s) == 36 && strings.Count(s, "-") == 4 {
		return strings.ToUpper(s), nil
	}
	code := s
	for len(code) < 4 {
		code += "0"
	}
	if g, ok := gdiskCodes[code]; ok {
		return g, nil
	}
	return "", fmt.Errorf("partition type %q is not a gdisk type code this build knows (such as 8300, 8200, ef00, fd00, 8e00) or a type GUID", s)
}

// gdiskCode is the reverse of gptType for comparing a table with a layout
// the way cloud-init reads sgdisk -p: codes ending in 00 lose the zeros.
func gdiskCode(guid string) string {
	for code, g := range gdiskCodes {
		if strings.EqualFold(g, guid) {
			if strings.HasSuffix(code, "00") {
				return code[:2]
			}
			return code
		}
	}
	return strings.ToUpper(guid)
}
