package disk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DefaultFudge is cloud-utils growpart's default: a partition that could
// grow by less than this many bytes is left alone (NOCHANGE).
const DefaultFudge = 1 << 20

// gptBackupPad is the room growpart leaves after the last partition for a
// secondary GPT (a header and 32 sectors of entries), on MBR disks too so
// they can be converted to GPT later without shrinking.
const gptBackupPad = 33

// Exit codes of cloud-utils growpart.
const (
	ExitChanged  = 0
	ExitNoChange = 1
	ExitError    = 2
)

// GrowOptions tune Grow.
type GrowOptions struct {
	// DryRun computes and reports without writing.
	DryRun bool
	// Fudge is growpart's --fudge in bytes; 0 means DefaultFudge.
	Fudge int64
}

func (o GrowOptions) fudgeSectors(ss int) uint64 {
	f := o.Fudge
	if f == 0 {
		f = DefaultFudge
	}
	if f < 0 {
		return 0
	}
	return uint64(f) / uint64(ss)
}

// Result is what a grow did (or, in a dry run, would do), in sectors of
// SectorSize as growpart reports them.
type Result struct {
	Disk       string
	Partition  int
	Table      string // "gpt" or "dos"
	SectorSize int
	Start      uint64
	OldSize    uint64
	NewSize    uint64
	// Changed is true when the partition grew (or would grow in a dry run).
	Changed bool
	DryRun  bool
	// CouldGrowBy is the growth (in sectors) that was too small to bother
	// with, below Fudge sectors; 0 when the partition cannot grow at all.
	CouldGrowBy uint64
	Fudge       uint64
	// Repaired lists damage that was fixed (or would be, in a dry run)
	// even though the partition did not grow: a primary GPT restored from
	// its backup after an interrupted grow, a missing backup, a stale
	// protective MBR.
	Repaired []string
	// Kernel says what the running kernel was told (BLKPG), if anything.
	Kernel string
}

// OldEnd and NewEnd are the partition's last sector before and after.
func (r Result) OldEnd() uint64 { return r.Start + r.OldSize - 1 }
func (r Result) NewEnd() uint64 { return r.Start + r.NewSize - 1 }

// String is the line cloud-utils growpart prints on stdout.
func (r Result) String() string {
	if r.Changed {
		verb := "CHANGED"
		if r.DryRun {
			verb = "CHANGE"
		}
		return fmt.Sprintf("%s: partition=%d start=%d old: size=%d end=%d new: size=%d end=%d",
			verb, r.Partition, r.Start, r.OldSize, r.OldEnd(), r.NewSize, r.NewEnd())
	}
	if r.CouldGrowBy > 0 {
		return fmt.Sprintf("NOCHANGE: partition %d could only be grown by %d [fudge=%d]", r.Partition, r.CouldGrowBy, r.Fudge)
	}
	return fmt.Sprintf("NOCHANGE: partition %d is size %d. it cannot be grown", r.Partition, r.OldSize)
}

// ExitCode is growpart's exit code for the result: 0 grown (or would grow
// in a dry run), 1 no change.
func (r Result) ExitCode() int {
	if r.Changed {
		return ExitChanged
	}
	return ExitNoChange
}

// FailedLine is what growpart prints on stdout when it fails (exit 2).
func FailedLine(err error) string { return "FAILED: " + err.Error() }

// GrowPart grows partition partnum of disk (a block device or an image
// file) to fill the space after it, with cloud-utils growpart's rules, and
// tells the running kernel the new size when disk is a block device.
func GrowPart(disk string, partnum int, dryRun bool) (Result, error) {
	dev, err := OpenFile(disk, !dryRun)
	if err != nil {
		return Result{Disk: disk, Partition: partnum}, err
	}
	defer dev.Close()
	res, err := Grow(dev, partnum, GrowOptions{DryRun: dryRun})
	res.Disk = disk
	if err != nil || dryRun || !dev.IsBlock() {
		return res, err
	}
	// Even an unchanged table may need the kernel told: a run killed after
	// the table write but before BLKPG leaves the kernel behind.
	note, kerr := syncKernelPartition(DefaultHost, dev, partnum, res)
	res.Kernel = note
	if kerr != nil {
		return res, fmt.Errorf("grow %s partition %d: %w", disk, partnum, kerr)
	}
	return res, nil
}

// Grow is GrowPart on an open device, without telling the kernel.
func Grow(dev Device, partnum int, opt GrowOptions) (Result, error) {
	res := Result{Partition: partnum, SectorSize: dev.SectorSize(), DryRun: opt.DryRun, Fudge: opt.fudgeSectors(dev.SectorSize())}
	if partnum < 1 {
		return res, fmt.Errorf("grow partition %d: partition numbers start at 1", partnum)
	}
	m, err := ReadMBR(dev)
	switch {
	case err == nil:
		res.Table = "dos"
		err = growMBR(dev, m, &res, opt)
	case errors.Is(err, ErrProtectiveMBR), errors.Is(err, ErrNoTable):
		g, gerr := ReadGPT(dev)
		if gerr != nil {
			if errors.Is(err, ErrNoTable) {
				return res, fmt.Errorf("grow partition %d: %w; %w", partnum, err, gerr)
			}
			return res, fmt.Errorf("grow partition %d: %w", partnum, gerr)
		}
		res.Table = "gpt"
		err = growGPT(dev, g, &res, opt)
	}
	if err != nil {
		return res, fmt.Errorf("grow partition %d: %w", partnum, err)
	}
	return res, nil
}

// maxEnd applies growpart's limits to the first sector a partition may not
// reach (the next partition's start, or the disk's end): the backup-GPT
// pad, and limit (the last usable LBA, or the MBR's 32-bit reach).
func maxEnd(next, sectors, limit uint64) uint64 {
	end := next - 1
	if sectors > gptBackupPad && end > sectors-gptBackupPad {
		end = sectors - gptBackupPad - 1
	}
	return min(end, limit)
}

// decide fills res from the partition's extent and the end it may reach,
// and reports whether it should grow.
func decide(res *Result, start, end, limit uint64) bool {
	res.Start = start
	res.OldSize = end - start + 1
	res.NewSize = res.OldSize
	if limit <= end {
		return false
	}
	if limit-end < res.Fudge {
		res.CouldGrowBy = limit - end
		return false
	}
	res.Changed = true
	res.NewSize = limit - start + 1
	return true
}

// diskWrite is one planned write. orig is what the region held when the
// plan was made: a region that no longer holds it (or the new data) was
// changed under us and is not overwritten.
type diskWrite struct {
	what string
	lba  uint64
	data []byte
	orig []byte
}

func planWrite(dev Device, what string, lba uint64, data []byte) (diskWrite, error) {
	orig := make([]byte, len(data))
	if err := readFull(dev, orig, int64(lba)*int64(dev.SectorSize())); err != nil {
		return diskWrite{}, fmt.Errorf("read %s at LBA %d: %w", what, lba, err)
	}
	return diskWrite{what: what, lba: lba, data: data, orig: orig}, nil
}

func (w diskWrite) needed() bool { return !bytes.Equal(w.orig, w.data) }

// applyWrites writes in order, each checked before (still what was read) and
// after (reads back what was written), then syncs.
func applyWrites(dev Device, writes []diskWrite) error {
	for _, w := range writes {
		off := int64(w.lba) * int64(dev.SectorSize())
		cur := make([]byte, len(w.data))
		if err := readFull(dev, cur, off); err != nil {
			return fmt.Errorf("re-read %s at LBA %d: %w", w.what, w.lba, err)
		}
		if bytes.Equal(cur, w.data) {
			continue
		}
		if !bytes.Equal(cur, w.orig) {
			return fmt.Errorf("write %s at LBA %d: the disk changed since it was read; not overwriting", w.what, w.lba)
		}
		if n, err := dev.WriteAt(w.data, off); err != nil || n != len(w.data) {
			if err == nil {
				err = io.ErrShortWrite
			}
			return fmt.Errorf("write %s at LBA %d: %w", w.what, w.lba, err)
		}
		// Each step must be durable before the next one relies on it: the
		// backup GPT before the primary that points at it.
		if err := dev.Sync(); err != nil {
			return fmt.Errorf("sync %s at LBA %d: %w", w.what, w.lba, err)
		}
		if err := readFull(dev, cur, off); err != nil {
			return fmt.Errorf("verify %s at LBA %d: %w", w.what, w.lba, err)
		}
		if !bytes.Equal(cur, w.data) {
			return fmt.Errorf("verify %s at LBA %d: read back differs from what was written", w.what, w.lba)
		}
	}
	return nil
}

func describe(writes []diskWrite) []string {
	var out []string
	for _, w := range writes {
		out = append(out, fmt.Sprintf("%s at LBA %d", w.what, w.lba))
	}
	return out
}

func growGPT(dev Device, g *GPT, res *Result, opt GrowOptions) error {
	ss := dev.SectorSize()
	sectors := uint64(dev.Size()) / uint64(ss)
	entSectors := g.Header.entriesSectors(ss)
	if sectors < 2*entSectors+4 {
		return fmt.Errorf("disk of %d sectors is too small for its GPT", sectors)
	}
	newLastUsable := sectors - 2 - entSectors
	e, ok := g.Entry(res.Partition)
	if !ok {
		return fmt.Errorf("no partition %d in the GPT (it has %s)", res.Partition, gptNumbers(g))
	}
	next := sectors
	for _, o := range g.Entries {
		if o.LastLBA > newLastUsable {
			return fmt.Errorf("partition %d ends at LBA %d, past the last usable LBA %d of this %d-sector disk: the disk is smaller than its partition table",
				o.Number, o.LastLBA, newLastUsable, sectors)
		}
		if o.Number != e.Number && o.FirstLBA > e.LastLBA && o.FirstLBA < next {
			next = o.FirstLBA
		}
	}
	grow := decide(res, e.FirstLBA, e.LastLBA, maxEnd(next, sectors, newLastUsable))

	primaryEntriesLBA := g.Header.EntriesLBA
	if g.FromBackup {
		// The primary's own fields are not trustworthy; put its entries
		// where every partitioning tool does.
		primaryEntriesLBA = 2
	}
	if primaryEntriesLBA+entSectors > g.Header.FirstUsableLBA || primaryEntriesLBA < 2 {
		return fmt.Errorf("primary partition entries at LBA %d (%d sectors) would overlap the first usable LBA %d", primaryEntriesLBA, entSectors, g.Header.FirstUsableLBA)
	}

	var writes []diskWrite
	var err error
	if grow {
		ng := g.clone()
		ng.setLastLBA(e.Number, res.NewEnd())
		writes, err = ng.placement(dev, sectors-1, primaryEntriesLBA, newLastUsable, true, true)
	} else {
		writes, err = g.repairs(dev, sectors, primaryEntriesLBA, newLastUsable)
	}
	if err != nil {
		return err
	}
	alt := g.Header.AlternateLBA
	spansDisk := grow || g.FromBackup || alt == sectors-1 || alt < sectors-1 && newLastUsable >= g.Header.LastUsableLBA
	if pm, ok, err := protectiveMBRWrite(dev, sectors, spansDisk); err != nil {
		return err
	} else if ok {
		writes = append(writes, pm)
	}
	var needed []diskWrite
	for _, w := range writes {
		if w.needed() {
			needed = append(needed, w)
		}
	}
	if !grow {
		res.Repaired = describe(needed)
	}
	if opt.DryRun || len(needed) == 0 {
		return nil
	}
	if err := applyWrites(dev, needed); err != nil {
		return err
	}
	return verifyGPT(dev, g, res)
}

func gptNumbers(g *GPT) string {
	if len(g.Entries) == 0 {
		return "no partitions"
	}
	var s []string
	for _, e := range g.Entries {
		s = append(s, fmt.Sprint(e.Number))
	}
	return "partitions " + strings.Join(s, ", ")
}

func (g *GPT) clone() *GPT {
	c := *g
	c.rawEntries = append([]byte(nil), g.rawEntries...)
	c.Entries = append([]GPTEntry(nil), g.Entries...)
	return &c
}

// placement plans writing the table with its backup header at backupLBA:
// the backup copy first, so that a grow killed before the primary is
// written leaves the old primary valid (a second run redoes the grow), and
// a primary torn mid-write leaves a complete new backup to restore from.
func (g *GPT) placement(dev Device, backupLBA, primaryEntriesLBA, lastUsable uint64, backup, primary bool) ([]diskWrite, error) {
	ss := g.SectorSize
	entSectors := g.Header.entriesSectors(ss)
	var writes []diskWrite
	if backup {
		backupEntriesLBA := backupLBA - entSectors
		region := append(g.entriesRegion(), g.headerSector(backupLBA, 1, backupEntriesLBA, lastUsable)...)
		w, err := planWrite(dev, "backup GPT entries and header", backupEntriesLBA, region)
		if err != nil {
			return nil, err
		}
		writes = append(writes, w)
	}
	if primary {
		header := g.headerSector(1, backupLBA, primaryEntriesLBA, lastUsable)
		if primaryEntriesLBA == 2 {
			w, err := planWrite(dev, "primary GPT header and entries", 1, append(header, g.entriesRegion()...))
			if err != nil {
				return nil, err
			}
			writes = append(writes, w)
		} else {
			we, err := planWrite(dev, "primary GPT entries", primaryEntriesLBA, g.entriesRegion())
			if err != nil {
				return nil, err
			}
			wh, err := planWrite(dev, "primary GPT header", 1, header)
			if err != nil {
				return nil, err
			}
			writes = append(writes, we, wh)
		}
	}
	return writes, nil
}

// repairs plans the fixes an unchanged table may need: a primary restored
// from the backup, the backup moved to the end of a disk that grew, or a
// backup restored from the primary where the primary says it is.
func (g *GPT) repairs(dev Device, sectors, primaryEntriesLBA, newLastUsable uint64) ([]diskWrite, error) {
	h := g.Header
	if g.FromBackup {
		return g.placement(dev, h.MyLBA, primaryEntriesLBA, h.LastUsableLBA, false, true)
	}
	alt := h.AlternateLBA
	if alt < sectors-1 && newLastUsable >= h.LastUsableLBA {
		// The disk grew but the partition cannot (or need not): move the
		// backup to the disk's end anyway, as sgdisk -e would, so the table
		// describes the whole disk and the next tools see no damage.
		return g.placement(dev, sectors-1, h.EntriesLBA, newLastUsable, true, true)
	}
	entSectors := h.entriesSectors(g.SectorSize)
	if alt >= sectors || alt <= h.LastUsableLBA+entSectors {
		// Not a place we can prove is free: leave it to a human.
		return nil, nil
	}
	b, err := readGPTAt(dev, alt, g.SectorSize, sectors)
	if err == nil && bytes.Equal(b.rawEntries, g.rawEntries) && b.Header.AlternateLBA == 1 &&
		b.Header.FirstUsableLBA == h.FirstUsableLBA && b.Header.LastUsableLBA == h.LastUsableLBA && b.Header.DiskGUID == h.DiskGUID {
		return nil, nil
	}
	return g.placement(dev, alt, h.EntriesLBA, h.LastUsableLBA, true, false)
}

// protectiveMBRWrite plans updating a protective MBR's size to the disk's
// (as sfdisk does when it rewrites a GPT), once the table spans the disk.
// Hybrid MBRs and disks without a protective MBR are left alone.
func protectiveMBRWrite(dev Device, sectors uint64, spansDisk bool) (diskWrite, bool, error) {
	if !spansDisk {
		return diskWrite{}, false, nil
	}
	ss := dev.SectorSize()
	sector := make([]byte, ss)
	if err := readFull(dev, sector, 0); err != nil {
		return diskWrite{}, false, fmt.Errorf("read protective MBR: %w", err)
	}
	if !hasBootSignature(sector) {
		return diskWrite{}, false, nil
	}
	slot := -1
	for i := 0; i < 4; i++ {
		e := parseEntry(sector, i)
		switch {
		case e.typ == typeProtective && slot < 0:
			slot = i
		case !e.empty():
			return diskWrite{}, false, nil
		}
	}
	if slot < 0 {
		return diskWrite{}, false, nil
	}
	e := parseEntry(sector, slot)
	want := min(sectors-uint64(e.start), 0xFFFFFFFF)
	if e.start != 1 || uint64(e.size) == want {
		return diskWrite{}, false, nil
	}
	m := &MBR{sectors: map[uint64][]byte{0: append([]byte(nil), sector...)}}
	m.setEntrySize(0, slot, uint32(want), min(uint64(e.start)+want-1, 0xFFFFFFFF))
	w := diskWrite{what: "protective MBR", lba: 0, data: m.sectors[0], orig: sector}
	return w, true, nil
}

// verifyGPT re-reads the table after a write: the primary and the backup
// at the disk's end must both be valid and agree, the grown partition
// must have its new end and every other entry must be as it was.
func verifyGPT(dev Device, before *GPT, res *Result) error {
	ss := dev.SectorSize()
	sectors := uint64(dev.Size()) / uint64(ss)
	p, err := readGPTAt(dev, 1, ss, sectors)
	if err != nil {
		return fmt.Errorf("verify primary GPT after writing: %w", err)
	}
	alt := p.Header.AlternateLBA
	b, err := readGPTAt(dev, alt, ss, sectors)
	if err != nil {
		return fmt.Errorf("verify backup GPT at LBA %d after writing: %w", alt, err)
	}
	if !bytes.Equal(p.rawEntries, b.rawEntries) {
		return errors.New("verify GPT after writing: primary and backup entries differ")
	}
	want := before.clone()
	if res.Changed {
		want.setLastLBA(res.Partition, res.NewEnd())
	}
	if !bytes.Equal(p.rawEntries, want.rawEntries) {
		return errors.New("verify GPT after writing: the entries are not what was planned")
	}
	return nil
}

func growMBR(dev Device, m *MBR, res *Result, opt GrowOptions) error {
	ss := dev.SectorSize()
	sectors := uint64(dev.Size()) / uint64(ss)
	p, ok := m.Partition(res.Partition)
	if !ok {
		return fmt.Errorf("no partition %d in the MBR", res.Partition)
	}
	if p.Extended {
		return fmt.Errorf("partition %d is the extended container: grow the logical partition inside it", p.Number)
	}
	ext, hasExt := m.Extended()
	next := sectors
	for _, o := range m.Partitions {
		if o.End() >= sectors {
			return fmt.Errorf("partition %d ends at sector %d, past the end of this %d-sector disk: the disk is smaller than its partition table", o.Number, o.End(), sectors)
		}
		if o.Number == p.Number {
			continue
		}
		start := o.Start
		switch {
		case p.Logical() && o.Extended:
			continue // the container grows with its logical partition
		case p.Logical() && o.Logical():
			start = o.EBR
		case !p.Logical() && o.Logical():
			continue // inside the extended container, which bounds p already
		}
		if start > p.End() && start < next {
			next = start
		}
	}
	// growpart caps MBR partitions at 2^32 512-byte sectors; the 32-bit size
	// fields cap each entry too (the container's when it must grow).
	limit := uint64(1<<32) * uint64(ss/512)
	limit = min(limit, p.Start+0xFFFFFFFF-1)
	if p.Logical() {
		limit = min(limit, ext.Start+0xFFFFFFFF-1)
	}
	grow := decide(res, p.Start, p.End(), maxEnd(next, sectors, limit))
	if !grow || opt.DryRun {
		return nil
	}
	newEnd := res.NewEnd()
	var writes []diskWrite
	plan := func(what string, table uint64) error {
		w, err := planWrite(dev, what, table, m.sectors[table])
		if err != nil {
			return err
		}
		writes = append(writes, w)
		return nil
	}
	// m.sectors are what ReadMBR read; change copies so the plan's orig
	// comparison sees the bytes the decision was based on.
	orig := map[uint64][]byte{}
	for lba, s := range m.sectors {
		orig[lba] = append([]byte(nil), s...)
	}
	// The container first: a run killed after it leaves a bigger container
	// and an unchanged logical partition, which a second run grows.
	if p.Logical() && hasExt && newEnd > ext.End() {
		m.setEntrySize(0, ext.slot, uint32(newEnd-ext.Start+1), newEnd)
		if err := plan("extended partition entry in the MBR", 0); err != nil {
			return err
		}
	}
	if link, ok := m.links[p.Number]; ok {
		e := parseEntry(m.sectors[link.table], link.slot)
		linkStart := ext.Start + uint64(e.start)
		if linkStart+uint64(e.size)-1 == p.End() {
			m.setEntrySize(link.table, link.slot, uint32(newEnd-linkStart+1), newEnd)
			if err := plan("link to partition "+fmt.Sprint(p.Number)+" in the EBR", link.table); err != nil {
				return err
			}
		}
	}
	m.setEntrySize(p.table, p.slot, uint32(res.NewSize), newEnd)
	if err := plan(fmt.Sprintf("partition %d entry", p.Number), p.table); err != nil {
		return err
	}
	for i := range writes {
		writes[i].orig = orig[writes[i].lba]
	}
	if err := applyWrites(dev, writes); err != nil {
		return err
	}
	after, err := ReadMBR(dev)
	if err != nil {
		return fmt.Errorf("verify MBR after writing: %w", err)
	}
	for _, o := range m.Partitions {
		a, ok := after.Partition(o.Number)
		want := o
		if o.Number == p.Number {
			want.Size = res.NewSize
		}
		if o.Extended && p.Logical() && newEnd > o.End() {
			want.Size = newEnd - o.Start + 1
		}
		if !ok || a.Start != want.Start || a.Size != want.Size || a.Type != want.Type {
			return fmt.Errorf("verify MBR after writing: partition %d is not what was planned", o.Number)
		}
	}
	return nil
}
