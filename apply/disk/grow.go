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
	// Repaired lists damage that was fixed (or would be, in a dry run):
	// a primary GPT restored from its backup before a grow or instead of
	// one, and, when the partition did not grow, a missing backup, a
	// backup short of a grown disk's end, a stale protective MBR.
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

// plan is the writes of a change in the order they must reach the disk,
// and a view of the disk as they will leave it: each write is planned (and
// what it overwrites recorded) against what the writes before it leave, so
// one plan can restore a table and then grow it, and a dry run can show
// both without writing.
type plan struct {
	dev    Device
	writes []diskWrite
}

func (p *plan) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.dev.ReadAt(b, off)
	for _, w := range p.writes {
		wo := int64(w.lba) * int64(p.dev.SectorSize())
		lo, hi := max(off, wo), min(off+int64(n), wo+int64(len(w.data)))
		if lo < hi {
			copy(b[lo-off:hi-off], w.data[lo-wo:hi-wo])
		}
	}
	return n, err
}

func (p *plan) WriteAt([]byte, int64) (int, error) {
	return 0, errors.New("write to a plan: plans take writes through add")
}

func (p *plan) Size() int64     { return p.dev.Size() }
func (p *plan) SectorSize() int { return p.dev.SectorSize() }
func (p *plan) Sync() error     { return nil }

// add plans writing data at lba, unless the disk will hold it already.
func (p *plan) add(what string, lba uint64, data []byte) error {
	w, err := planWrite(p, what, lba, data)
	if err != nil {
		return err
	}
	if w.needed() {
		p.writes = append(p.writes, w)
	}
	return nil
}

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

	// The writes are ordered so that a cut (power lost, the process
	// killed, a write torn or lost) at any byte leaves a GPT that readers
	// find, valid by its CRCs, holding the old table or the new one. Each
	// write lies wholly outside the copy that keeps the disk readable while
	// it is written (a header and its entries), and applyWrites syncs it
	// before the next one starts, so however a write is torn it can only
	// break the copy it belongs to, and no write can land before the one
	// it relies on:
	//  1. A damaged primary is restored from the backup, first. Until then
	//     the backup is the only copy, and step 2 rewrites the backup in
	//     place when the disk did not grow: growing first could tear the
	//     only copy. While the primary is written, the backup at the disk's
	//     end keeps the disk readable. A backup short of the end (the disk
	//     grew) is reached only through the primary header this step
	//     rewrites, so before that the disk's last sector gets a header of
	//     its own over that backup's entries where they lie (moving them
	//     could overwrite them: the disk may have grown by less than they
	//     take).
	//  2. The backup, entries and header, at the disk's end: the primary,
	//     valid by now, keeps the disk readable.
	//  3. The primary: the backup at the disk's end, where readers look
	//     when the primary is bad, keeps the disk readable.
	//  4. The protective MBR, last: only its size (and CHS end) changes,
	//     which nothing reads to find the GPT (the kernel checks its type
	//     and start and at most logs a stale size), so a torn or missing
	//     update of it costs nothing.
	// A damaged backup needs no step of its own: the valid primary keeps
	// the disk readable while step 2 replaces the backup.
	p := &plan{dev: dev}
	before := g
	if g.FromBackup {
		if err := g.planPrimaryRepair(p, sectors, newLastUsable); err != nil {
			return err
		}
		res.Repaired = describe(p.writes)
		restored, err := ReadGPT(p)
		if err == nil && restored.FromBackup {
			err = restored.PrimaryErr
		}
		if err != nil {
			return fmt.Errorf("plan the primary GPT's repair: it would not read back: %w", err)
		}
		g = restored
	}
	var err error
	if grow {
		ng := g.clone()
		ng.setLastLBA(e.Number, res.NewEnd())
		err = ng.placement(p, sectors-1, g.Header.EntriesLBA, newLastUsable, true, true)
	} else {
		err = g.repairs(p, sectors, newLastUsable)
	}
	if err != nil {
		return err
	}
	alt := g.Header.AlternateLBA
	spansDisk := grow || alt == sectors-1 || alt < sectors-1 && newLastUsable >= g.Header.LastUsableLBA
	if err := protectiveMBRWrite(p, sectors, spansDisk); err != nil {
		return err
	}
	if !grow {
		res.Repaired = describe(p.writes)
	}
	if opt.DryRun || len(p.writes) == 0 {
		return nil
	}
	if err := applyWrites(dev, p.writes); err != nil {
		return err
	}
	return verifyGPT(dev, before, res)
}

// planPrimaryRepair plans restoring the primary GPT from the backup g was
// read from (step 1 of growGPT's order).
func (g *GPT) planPrimaryRepair(p *plan, sectors, newLastUsable uint64) error {
	h := g.Header
	last := sectors - 1
	lastUsable := h.LastUsableLBA
	if h.MyLBA != last {
		if err := p.add("backup GPT header at the disk's end", last, g.headerSector(last, 1, h.EntriesLBA, h.LastUsableLBA)); err != nil {
			return err
		}
	}
	if h.EntriesLBA+h.entriesSectors(g.SectorSize) != last {
		// A backup header at the end over entries elsewhere (the one just
		// planned, or one a cut left) is a bridge that the steps after
		// this replace with a whole backup at the end. The restored
		// primary claims the disk up to that backup already, as an
		// undamaged table does once its backup is moved to the end; its
		// disagreement with the bridge is what makes the later steps
		// rewrite the bridge even when the partition does not grow.
		lastUsable = newLastUsable
	}
	return p.add("primary GPT header and entries", 1, append(g.headerSector(1, last, 2, lastUsable), g.entriesRegion()...))
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
// The primary must be valid when it is planned (see growGPT).
func (g *GPT) placement(p *plan, backupLBA, primaryEntriesLBA, lastUsable uint64, backup, primary bool) error {
	entSectors := g.Header.entriesSectors(g.SectorSize)
	if backup {
		backupEntriesLBA := backupLBA - entSectors
		region := append(g.entriesRegion(), g.headerSector(backupLBA, 1, backupEntriesLBA, lastUsable)...)
		if err := p.add("backup GPT entries and header", backupEntriesLBA, region); err != nil {
			return err
		}
	}
	if !primary {
		return nil
	}
	header := g.headerSector(1, backupLBA, primaryEntriesLBA, lastUsable)
	if primaryEntriesLBA == 2 {
		return p.add("primary GPT header and entries", 1, append(header, g.entriesRegion()...))
	}
	if err := p.add("primary GPT entries", primaryEntriesLBA, g.entriesRegion()); err != nil {
		return err
	}
	return p.add("primary GPT header", 1, header)
}

// repairs plans the fixes an unchanged table with a valid primary may
// need: the backup moved to the end of a disk that grew, or a backup
// restored from the primary where the primary says it is.
func (g *GPT) repairs(p *plan, sectors, newLastUsable uint64) error {
	h := g.Header
	alt := h.AlternateLBA
	if alt < sectors-1 && newLastUsable >= h.LastUsableLBA {
		// The disk grew but the partition cannot (or need not): move the
		// backup to the disk's end anyway, as sgdisk -e would, so the table
		// describes the whole disk and the next tools see no damage.
		return g.placement(p, sectors-1, h.EntriesLBA, newLastUsable, true, true)
	}
	entSectors := h.entriesSectors(g.SectorSize)
	if alt >= sectors || alt <= h.LastUsableLBA+entSectors {
		// Not a place we can prove is free: leave it to a human.
		return nil
	}
	b, err := readGPTAt(p, alt, g.SectorSize, sectors)
	if err == nil && bytes.Equal(b.rawEntries, g.rawEntries) && b.Header.AlternateLBA == 1 &&
		b.Header.FirstUsableLBA == h.FirstUsableLBA && b.Header.LastUsableLBA == h.LastUsableLBA && b.Header.DiskGUID == h.DiskGUID {
		return nil
	}
	return g.placement(p, alt, h.EntriesLBA, h.LastUsableLBA, true, false)
}

// protectiveMBRWrite plans updating a protective MBR's size to the disk's
// (as sfdisk does when it rewrites a GPT), once the table spans the disk.
// Hybrid MBRs and disks without a protective MBR are left alone.
func protectiveMBRWrite(p *plan, sectors uint64, spansDisk bool) error {
	if !spansDisk {
		return nil
	}
	ss := p.SectorSize()
	sector := make([]byte, ss)
	if err := readFull(p, sector, 0); err != nil {
		return fmt.Errorf("read protective MBR: %w", err)
	}
	if !hasBootSignature(sector) {
		return nil
	}
	slot := -1
	for i := 0; i < 4; i++ {
		e := parseEntry(sector, i)
		switch {
		case e.typ == typeProtective && slot < 0:
			slot = i
		case !e.empty():
			return nil
		}
	}
	if slot < 0 {
		return nil
	}
	e := parseEntry(sector, slot)
	want := min(sectors-uint64(e.start), 0xFFFFFFFF)
	if e.start != 1 || uint64(e.size) == want {
		return nil
	}
	m := &MBR{sectors: map[uint64][]byte{0: sector}}
	m.setEntrySize(0, slot, uint32(want), min(uint64(e.start)+want-1, 0xFFFFFFFF))
	return p.add("protective MBR", 0, m.sectors[0])
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
