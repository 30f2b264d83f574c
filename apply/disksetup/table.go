package disksetup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/apply/disk"
)

// Found is what a disk holds before disk_setup touches it.
type Found struct {
	// Table is "gpt", "mbr" or "" (none).
	Table string
	// Parts are the partitions in the table, in table order.
	Parts []Extent
	// Types are the partitions' types the way cloud-init compares them
	// with a layout: MBR ids in hex, gdisk codes for GPT (8300 -> 83).
	Types []string
	// FS is the filesystem on the whole disk, when it has no table.
	FS *disk.FS
	// Unreadable says why a table that is there could not be read; such a
	// disk counts as in use.
	Unreadable error
}

// InUse is cloud-init's is_disk_used or is_filesystem: partitions, a
// filesystem on the bare disk, or a table we cannot read.
func (f Found) InUse() bool {
	return len(f.Parts) > 0 || f.FS != nil || f.Unreadable != nil
}

// Inspect reads dev's partition table and, without one, probes the bare
// disk for a filesystem.
func Inspect(dev disk.Device) Found {
	var f Found
	if g, err := disk.ReadGPT(dev); err == nil {
		f.Table = GPT
		for _, e := range g.Entries {
			f.Parts = append(f.Parts, Extent{Start: e.FirstLBA, Size: e.LastLBA - e.FirstLBA + 1, GPTType: strings.ToUpper(e.Type.String())})
			f.Types = append(f.Types, gdiskCode(e.Type.String()))
		}
		return f
	}
	m, err := disk.ReadMBR(dev)
	switch {
	case err == nil:
		f.Table = MBR
		for _, p := range m.Partitions {
			f.Parts = append(f.Parts, Extent{Start: p.Start, Size: p.Size, MBRType: p.Type})
			// cloud-init's reading of sfdisk -l skips extended containers.
			if !p.Extended {
				f.Types = append(f.Types, fmt.Sprintf("%x", p.Type))
			}
		}
		return f
	case errors.Is(err, disk.ErrProtectiveMBR):
		f.Table = GPT
		f.Unreadable = errors.New("a GPT protective MBR but no valid GPT header")
		return f
	case errors.Is(err, disk.ErrNoTable):
	default:
		f.Unreadable = err
		return f
	}
	if fs, err := disk.Probe(dev); err == nil {
		f.FS = &fs
	}
	return f
}

// Matches is cloud-init's check_partition_layout: layout true is happy
// with any partition, a list with the same number of partitions whose
// given types agree.
func (f Found) Matches(tableType string, l Layout) bool {
	if f.Table != tableType || f.Unreadable != nil {
		return false
	}
	if l.Whole {
		return len(f.Types) >= 1
	}
	if len(f.Types) != len(l.Parts) {
		return false
	}
	for i, p := range l.Parts {
		if p.Type == "" {
			continue
		}
		if !sameType(tableType, p.Type, f.Types[i]) {
			return false
		}
	}
	return true
}

func sameType(tableType, want, found string) bool {
	if tableType == MBR {
		w, err := mbrType(want)
		return err == nil && fmt.Sprintf("%x", w) == found
	}
	g, err := gptType(want)
	return err == nil && gdiskCode(g) == found
}

// gptTableSectors is how many sectors at each end of the disk hold GPT
// structures; they are zeroed before a new table goes down so that no
// stale header or backup survives (what sgdisk -Z does).
func gptTableSectors(sectorSize int) int64 { return int64(2 + gptEntrySectors(sectorSize)) }

// WriteTable writes the planned partitions to f (an image or a block
// device of size bytes) as a fresh table of tableType, then reads it back
// and checks it is what was planned. random supplies the disk identifier.
func WriteTable(f *os.File, size int64, sectorSize int, tableType string, plan []Extent, random io.Reader) error {
	if err := zeroTableAreas(f, size, sectorSize); err != nil {
		return err
	}
	switch tableType {
	case GPT:
		t := &gpt.Table{LogicalSectorSize: sectorSize, PhysicalSectorSize: sectorSize, ProtectiveMBR: true}
		for i, e := range plan {
			t.Partitions = append(t.Partitions, &gpt.Partition{
				Index: i + 1, Start: e.Start, End: e.End(), Size: e.Size * uint64(sectorSize), Type: gpt.Type(e.GPTType),
			})
		}
		if err := t.Write(f, size); err != nil {
			return fmt.Errorf("write GPT: %w", err)
		}
	case MBR:
		t := &mbr.Table{LogicalSectorSize: sectorSize, PhysicalSectorSize: sectorSize}
		for i, e := range plan {
			t.Partitions = append(t.Partitions, &mbr.Partition{
				Index: i + 1, Type: mbr.Type(e.MBRType), Start: uint32(e.Start), Size: uint32(e.Size),
			})
		}
		if err := t.Write(f, size); err != nil {
			return fmt.Errorf("write MBR: %w", err)
		}
		// sfdisk gives every new label a random disk identifier (the
		// first half of PARTUUID); go-diskfs leaves it zero.
		id := make([]byte, 4)
		if _, err := io.ReadFull(random, id); err != nil {
			return fmt.Errorf("make an MBR disk identifier: %w", err)
		}
		if _, err := f.WriteAt(id, 440); err != nil {
			return fmt.Errorf("write the MBR disk identifier: %w", err)
		}
	default:
		return fmt.Errorf("table_type %q: want mbr or gpt", tableType)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync the new partition table: %w", err)
	}
	return verifyTable(f, tableType, plan)
}

func zeroTableAreas(f *os.File, size int64, sectorSize int) error {
	n := gptTableSectors(sectorSize) * int64(sectorSize)
	if 2*n > size {
		return fmt.Errorf("a disk of %d bytes is too small for a partition table", size)
	}
	zero := make([]byte, n)
	if _, err := f.WriteAt(zero, 0); err != nil {
		return fmt.Errorf("clear the old partition table at the disk's start: %w", err)
	}
	if _, err := f.WriteAt(zero, size-n); err != nil {
		return fmt.Errorf("clear the old backup GPT at the disk's end: %w", err)
	}
	return nil
}

// verifyTable re-reads the table with seedinit's own readers, so what the
// kernel and growpart will see is checked, not go-diskfs's idea of it.
func verifyTable(f *os.File, tableType string, plan []Extent) error {
	dev, err := disk.OpenFile(f.Name(), false)
	if err != nil {
		return fmt.Errorf("re-read the new table: %w", err)
	}
	defer dev.Close()
	found := Inspect(dev)
	if found.Unreadable != nil || found.Table != tableType {
		return fmt.Errorf("re-read the new table: found %q (%v), want a valid %s", found.Table, found.Unreadable, tableType)
	}
	if len(found.Parts) != len(plan) {
		return fmt.Errorf("re-read the new table: %d partitions, want %d", len(found.Parts), len(plan))
	}
	for i, p := range plan {
		got := found.Parts[i]
		if got.Start != p.Start || got.Size != p.Size || got.MBRType != p.MBRType || !strings.EqualFold(got.GPTType, p.GPTType) {
			return fmt.Errorf("re-read the new table: partition %d is %+v, want %+v", i+1, got, p)
		}
	}
	return nil
}

// TellKernel makes the running kernel see the new table of the block
// device f: BLKRRPART re-reads it; where the kernel does not parse tables
// for this device (a loop device without partscan) or refuses because an
// old partition is open, the partitions are replaced one by one with
// BLKPG, as partx does.
func TellKernel(f *os.File, sectorSize int, plan []Extent) (string, error) {
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKRRPART, 0); err == nil {
		return "kernel re-read the partition table (BLKRRPART)", nil
	}
	ss := int64(sectorSize)
	for pno := 1; pno <= 128; pno++ {
		// ENXIO: no such partition; anything else (EBUSY) is real.
		if err := disk.BLKPG(f, unix.BLKPG_DEL_PARTITION, pno, 0, 0); err != nil && !errors.Is(err, unix.ENXIO) {
			return "", fmt.Errorf("remove the kernel's old partition %d (BLKPG_DEL_PARTITION): %w", pno, err)
		}
	}
	for i, e := range plan {
		if err := disk.BLKPG(f, unix.BLKPG_ADD_PARTITION, i+1, int64(e.Start)*ss, int64(e.Size)*ss); err != nil {
			return "", fmt.Errorf("add partition %d to the kernel (BLKPG_ADD_PARTITION): %w", i+1, err)
		}
	}
	return fmt.Sprintf("kernel told of %d partitions (BLKPG)", len(plan)), nil
}
