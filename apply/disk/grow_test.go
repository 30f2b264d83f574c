package disk

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type span struct{ First, Last uint64 }

func gptSpans(t *testing.T, g *GPT) []span {
	t.Helper()
	var s []span
	for _, e := range g.Entries {
		s = append(s, span{e.FirstLBA, e.LastLBA})
	}
	return s
}

// checkGPT reads both copies of the table and checks they agree, that the
// backup is at the disk's last sector and the protective MBR spans the disk.
func checkGPT(t *testing.T, dev Device, want []span) {
	t.Helper()
	ss := dev.SectorSize()
	n := uint64(dev.Size()) / uint64(ss)
	p, err := readGPTAt(dev, 1, ss, n)
	if err != nil {
		t.Fatalf("primary GPT: %v", err)
	}
	b, err := readGPTAt(dev, n-1, ss, n)
	if err != nil {
		t.Fatalf("backup GPT at the last sector: %v", err)
	}
	if diff := cmp.Diff(want, gptSpans(t, p)); diff != "" {
		t.Errorf("primary partitions (-want +got):\n%s", diff)
	}
	if !bytes.Equal(p.rawEntries, b.rawEntries) {
		t.Errorf("backup entries differ from the primary's")
	}
	if p.Header.AlternateLBA != n-1 || b.Header.AlternateLBA != 1 {
		t.Errorf("alternate LBAs: primary %d backup %d, want %d and 1", p.Header.AlternateLBA, b.Header.AlternateLBA, n-1)
	}
	if p.Header.LastUsableLBA != b.Header.LastUsableLBA || p.Header.LastUsableLBA != n-2-p.Header.entriesSectors(ss) {
		t.Errorf("last usable LBA: primary %d backup %d, want %d", p.Header.LastUsableLBA, b.Header.LastUsableLBA, n-2-p.Header.entriesSectors(ss))
	}
	mbr := make([]byte, ss)
	if err := readFull(dev, mbr, 0); err != nil {
		t.Fatal(err)
	}
	if e := parseEntry(mbr, 0); e.typ != typeProtective || uint64(e.size) != min(n-1, 0xFFFFFFFF) {
		t.Errorf("protective MBR entry %+v, want type ee size %d", e, min(n-1, 0xFFFFFFFF))
	}
}

func TestGrowGPT(t *testing.T) {
	tests := []struct {
		name       string
		ss         int
		size, grow int64
		parts      []testPart
		partnum    int
		wantLine   string
		wantCode   int
		wantSpans  []span
		wantErr    string
		wantRepair []string
	}{
		{
			name: "last partition grows to the last usable sector", ss: 512, size: 100 * mib, grow: 200 * mib,
			parts:    []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}},
			partnum:  2,
			wantLine: "CHANGED: partition=2 start=43008 old: size=61440 end=104447 new: size=366559 end=409566",
			wantCode: 0, wantSpans: []span{{2048, 43007}, {43008, 409566}},
		},
		{
			name: "already full", ss: 512, size: 100 * mib, grow: 100 * mib,
			parts:    []testPart{{2048, 204766, "root"}},
			partnum:  1,
			wantLine: "NOCHANGE: partition 1 is size 202719. it cannot be grown",
			wantCode: 1, wantSpans: []span{{2048, 204766}},
		},
		{
			name: "blocked by its neighbour", ss: 512, size: 100 * mib, grow: 200 * mib,
			parts:    []testPart{{2048, 43007, "root"}, {43008, 104447, "data"}},
			partnum:  1,
			wantLine: "NOCHANGE: partition 1 is size 40960. it cannot be grown",
			wantCode: 1, wantSpans: []span{{2048, 43007}, {43008, 104447}},
			wantRepair: []string{"backup GPT entries and header at LBA 409567", "primary GPT header and entries at LBA 1", "protective MBR at LBA 0"},
		},
		{
			name: "grows up to a neighbour further on", ss: 512, size: 100 * mib, grow: 100 * mib,
			parts:    []testPart{{2048, 43007, "root"}, {100000, 104447, "data"}},
			partnum:  1,
			wantLine: "CHANGED: partition=1 start=2048 old: size=40960 end=43007 new: size=97952 end=99999",
			wantCode: 0, wantSpans: []span{{2048, 99999}, {100000, 104447}},
		},
		{
			name: "growth below the fudge", ss: 512, size: 100 * mib, grow: 100*mib + 512*kib,
			parts:    []testPart{{2048, 204766, "root"}},
			partnum:  1,
			wantLine: "NOCHANGE: partition 1 could only be grown by 1024 [fudge=2048]",
			wantCode: 1, wantSpans: []span{{2048, 204766}},
			wantRepair: []string{"backup GPT entries and header at LBA 205791", "primary GPT header and entries at LBA 1", "protective MBR at LBA 0"},
		},
		{
			name: "4096-byte sectors", ss: 4096, size: 100 * mib, grow: 200 * mib,
			parts:    []testPart{{256, 20000, "root"}},
			partnum:  1,
			wantLine: "CHANGED: partition=1 start=256 old: size=19745 end=20000 new: size=50911 end=51166",
			wantCode: 0, wantSpans: []span{{256, 51166}},
		},
		{
			name: "no such partition", ss: 512, size: 100 * mib, grow: 200 * mib,
			parts: []testPart{{2048, 43007, "root"}}, partnum: 3,
			wantErr: "no partition 3 in the GPT (it has partitions 1)",
		},
		{
			name: "disk smaller than its table", ss: 512, size: 100 * mib, grow: 50 * mib,
			parts: []testPart{{2048, 204766, "root"}}, partnum: 1,
			wantErr: "the disk is smaller than its partition table",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempImage(t)
			writeGPT(t, path, tt.size, tt.ss, tt.parts)
			truncate(t, path, tt.grow)
			dev := openImage(t, path)
			if dev.SectorSize() != tt.ss {
				t.Fatalf("sector size %d, want %d", dev.SectorSize(), tt.ss)
			}
			res, err := Grow(dev, tt.partnum, GrowOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Grow error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.String(); got != tt.wantLine {
				t.Errorf("line\n got %s\nwant %s", got, tt.wantLine)
			}
			if res.ExitCode() != tt.wantCode {
				t.Errorf("exit code %d, want %d", res.ExitCode(), tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantRepair, res.Repaired); diff != "" {
				t.Errorf("repairs (-want +got):\n%s", diff)
			}
			checkGPT(t, dev, tt.wantSpans)
			// A second run converges: nothing left to do.
			again, err := Grow(dev, tt.partnum, GrowOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.Changed || len(again.Repaired) > 0 {
				t.Errorf("second run changed %v repaired %v", again.Changed, again.Repaired)
			}
		})
	}
}

func TestGrowDryRunWritesNothing(t *testing.T) {
	path := tempImage(t)
	writeGPT(t, path, 100*mib, 512, []testPart{{2048, 43007, "root"}})
	truncate(t, path, 200*mib)
	before := tableRegions(t, path)
	res, err := GrowPart(path, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "CHANGE: partition=1 start=2048 old: size=40960 end=43007 new: size=407519 end=409566"
	if res.String() != want || res.ExitCode() != 0 {
		t.Errorf("dry run: %q exit %d, want %q exit 0", res.String(), res.ExitCode(), want)
	}
	if !bytes.Equal(before, tableRegions(t, path)) {
		t.Error("dry run changed the image")
	}
}

// growReference grows an identical image without interruption, for the
// interrupted runs to be compared with.
func growReference(t *testing.T, parts []testPart, size, grown int64) []byte {
	t.Helper()
	path := tempImage(t)
	writeGPT(t, path, size, 512, parts)
	truncate(t, path, grown)
	if _, err := Grow(openImage(t, path), len(parts), GrowOptions{}); err != nil {
		t.Fatal(err)
	}
	return tableRegions(t, path)
}

// tableRegions reads where GPT tables live: the first 34 and last 33
// sectors of a 512-byte-sector image.
func tableRegions(t *testing.T, path string) []byte {
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
	b := make([]byte, 67*512)
	if _, err := f.ReadAt(b[:34*512], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(b[34*512:], st.Size()-33*512); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGrowGPTInterrupted(t *testing.T) {
	parts := []testPart{{2048, 43007, "boot"}, {43008, 104447, "root"}}
	want := growReference(t, parts, 100*mib, 200*mib)
	wantSpans := []span{{2048, 43007}, {43008, 409566}}
	tests := []struct {
		name string
		// writes lets this many writes through before the kill.
		writes int
		// damage runs after the kill, before the second run.
		damage     func(t *testing.T, path string)
		wantLine   string
		wantRepair []string
	}{
		{
			name: "killed before any write", writes: 0,
			wantLine: "CHANGED: partition=2 start=43008 old: size=61440 end=104447 new: size=366559 end=409566",
		},
		{
			name: "killed between the backup and the primary", writes: 1,
			wantLine: "CHANGED: partition=2 start=43008 old: size=61440 end=104447 new: size=366559 end=409566",
		},
		{
			name: "primary torn after the backup was written", writes: 1,
			damage: func(t *testing.T, path string) {
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// Half a new header: the signature survives, the CRC does not.
				if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 40), 512+24); err != nil {
					t.Fatal(err)
				}
			},
			wantLine:   "NOCHANGE: partition 2 is size 366559. it cannot be grown",
			wantRepair: []string{"primary GPT header and entries at LBA 1", "protective MBR at LBA 0"},
		},
		{
			name: "killed before the protective MBR", writes: 2,
			wantLine:   "NOCHANGE: partition 2 is size 366559. it cannot be grown",
			wantRepair: []string{"protective MBR at LBA 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempImage(t)
			writeGPT(t, path, 100*mib, 512, parts)
			truncate(t, path, 200*mib)
			dev := openImage(t, path)
			_, err := Grow(&killAfter{Device: dev, n: tt.writes}, 2, GrowOptions{})
			if !errors.Is(err, errKilled) {
				t.Fatalf("interrupted grow returned %v, want the kill", err)
			}
			if tt.damage != nil {
				tt.damage(t, path)
			}
			res, err := Grow(dev, 2, GrowOptions{})
			if err != nil {
				t.Fatalf("second run: %v", err)
			}
			if res.String() != tt.wantLine {
				t.Errorf("second run\n got %s\nwant %s", res.String(), tt.wantLine)
			}
			if diff := cmp.Diff(tt.wantRepair, res.Repaired); diff != "" {
				t.Errorf("repairs (-want +got):\n%s", diff)
			}
			checkGPT(t, dev, wantSpans)
			// The repaired table must be byte for byte what an uninterrupted
			// grow writes (the old backup left inside the partition aside).
			if !bytes.Equal(tableRegions(t, path), want) {
				t.Errorf("the table differs from an uninterrupted grow's")
			}
		})
	}
}

func TestGrowGPTBothHeadersBad(t *testing.T) {
	path := tempImage(t)
	writeGPT(t, path, 10*mib, 512, []testPart{{2048, 4095, "root"}})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 512), 512)
	f.Close()
	truncate(t, path, 20*mib) // the backup is no longer at the end
	_, err = Grow(openImage(t, path), 1, GrowOptions{})
	if err == nil || !strings.Contains(err.Error(), "primary header at LBA 1: no GPT signature; backup header at LBA 40959") {
		t.Fatalf("error %v, want both headers named", err)
	}
}

func TestGrowMBR(t *testing.T) {
	primary := []mbrPart{{0x83, 2048, 20480}, {0x83, 22528, 40960}}
	extended := []mbrPart{{0x83, 2048, 20480}, {0x05, 22528, 80000}}
	tests := []struct {
		name      string
		size      int64
		primaries []mbrPart
		logicals  []mbrPart
		partnum   int
		wantLine  string
		want      string
		wantErr   string
	}{
		{
			name: "last primary", size: 200 * mib, primaries: primary, partnum: 2,
			wantLine: "CHANGED: partition=2 start=22528 old: size=40960 end=63487 new: size=387039 end=409566",
			want:     "dos id=0x28a8ad50\n1 start=2048 size=20480 type=83\n2 start=22528 size=387039 type=83\n",
		},
		{
			name: "primary blocked by its neighbour", size: 200 * mib, primaries: primary, partnum: 1,
			wantLine: "NOCHANGE: partition 1 is size 20480. it cannot be grown",
			want:     "dos id=0x28a8ad50\n1 start=2048 size=20480 type=83\n2 start=22528 size=40960 type=83\n",
		},
		{
			name: "primary blocked by the extended container", size: 200 * mib, primaries: extended,
			logicals: []mbrPart{{0x83, 24576, 20480}}, partnum: 1,
			wantLine: "NOCHANGE: partition 1 is size 20480. it cannot be grown",
			want:     "dos id=0x28a8ad50\n1 start=2048 size=20480 type=83\n2 start=22528 size=80000 type=5\n5 start=24576 size=20480 type=83\n",
		},
		{
			name: "last logical grows with its container", size: 200 * mib, primaries: extended,
			logicals: []mbrPart{{0x83, 24576, 20480}, {0x83, 47104, 10240}}, partnum: 6,
			wantLine: "CHANGED: partition=6 start=47104 old: size=10240 end=57343 new: size=362463 end=409566",
			want:     "dos id=0x28a8ad50\n1 start=2048 size=20480 type=83\n2 start=22528 size=387039 type=5\n5 start=24576 size=20480 type=83\n6 start=47104 size=362463 type=83\n",
		},
		{
			name: "logical blocked by the next logical's EBR", size: 200 * mib, primaries: extended,
			logicals: []mbrPart{{0x83, 24576, 20480}, {0x83, 47104, 10240}}, partnum: 5,
			wantLine: "NOCHANGE: partition 5 is size 20480. it cannot be grown",
			want:     "dos id=0x28a8ad50\n1 start=2048 size=20480 type=83\n2 start=22528 size=80000 type=5\n5 start=24576 size=20480 type=83\n6 start=47104 size=10240 type=83\n",
		},
		{
			name: "the extended container itself", size: 200 * mib, primaries: extended,
			logicals: []mbrPart{{0x83, 24576, 20480}}, partnum: 2,
			wantErr: "partition 2 is the extended container",
		},
		{
			name: "no partition table", size: 10 * mib, partnum: 1,
			wantErr: "no partition table",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempImage(t)
			if tt.primaries != nil {
				writeMBR(t, path, 100*mib, tt.primaries, tt.logicals)
			} else {
				os.WriteFile(path, nil, 0o644)
			}
			truncate(t, path, tt.size)
			dev := openImage(t, path)
			res, err := Grow(dev, tt.partnum, GrowOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.String() != tt.wantLine {
				t.Errorf("line\n got %s\nwant %s", res.String(), tt.wantLine)
			}
			m, err := ReadMBR(dev)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m.String()); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
			again, err := Grow(dev, tt.partnum, GrowOptions{})
			if err != nil || again.Changed {
				t.Errorf("second run: %v changed=%v", err, again.Changed)
			}
		})
	}
}

func TestGrowMBRLogicalInterrupted(t *testing.T) {
	path := tempImage(t)
	writeMBR(t, path, 100*mib, []mbrPart{{0x83, 2048, 20480}, {0x05, 22528, 80000}},
		[]mbrPart{{0x83, 24576, 20480}, {0x83, 47104, 10240}})
	truncate(t, path, 200*mib)
	dev := openImage(t, path)
	// The container is written first; the kill lands before the logical.
	if _, err := Grow(&killAfter{Device: dev, n: 1}, 6, GrowOptions{}); !errors.Is(err, errKilled) {
		t.Fatalf("interrupted grow returned %v", err)
	}
	m, err := ReadMBR(dev)
	if err != nil {
		t.Fatalf("table after the kill: %v", err)
	}
	if ext, _ := m.Extended(); ext.Size != 387039 {
		t.Fatalf("container size after the kill %d, want 387039", ext.Size)
	}
	res, err := Grow(dev, 6, GrowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "CHANGED: partition=6 start=47104 old: size=10240 end=57343 new: size=362463 end=409566"
	if res.String() != want {
		t.Errorf("second run\n got %s\nwant %s", res, want)
	}
	m, err = ReadMBR(dev)
	if err != nil {
		t.Fatal(err)
	}
	link := parseEntry(m.sectors[22528], 1)
	if link.size != 362463+2048 {
		t.Errorf("link to partition 6 covers %d sectors, want %d", link.size, 362463+2048)
	}
}

func TestResultLines(t *testing.T) {
	tests := []struct {
		res  Result
		want string
		code int
	}{
		{Result{Partition: 1, Start: 2048, OldSize: 100, NewSize: 300, Changed: true}, "CHANGED: partition=1 start=2048 old: size=100 end=2147 new: size=300 end=2347", 0},
		{Result{Partition: 1, Start: 2048, OldSize: 100, NewSize: 300, Changed: true, DryRun: true}, "CHANGE: partition=1 start=2048 old: size=100 end=2147 new: size=300 end=2347", 0},
		{Result{Partition: 3, Start: 2048, OldSize: 100, NewSize: 100}, "NOCHANGE: partition 3 is size 100. it cannot be grown", 1},
		{Result{Partition: 3, Start: 2048, OldSize: 100, NewSize: 100, CouldGrowBy: 7, Fudge: 2048}, "NOCHANGE: partition 3 could only be grown by 7 [fudge=2048]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.res.String(); got != tt.want {
				t.Errorf("got %q", got)
			}
			if got := tt.res.ExitCode(); got != tt.code {
				t.Errorf("exit code %d, want %d", got, tt.code)
			}
		})
	}
	if got := FailedLine(errors.New("boom")); got != "FAILED: boom" {
		t.Errorf("FailedLine = %q", got)
	}
}

// BenchmarkGrowGPT grows the last partition of a 1 GiB GPT image that was
// enlarged to 10 GiB (sparse), the first-boot case.
func BenchmarkGrowGPT(b *testing.B) {
	path := filepath.Join(b.TempDir(), "disk.img")
	for b.Loop() {
		b.StopTimer()
		writeGPT(b, path, 1*gib, 512, []testPart{{2048, 1*gib/512 - 34 - 2048, "root"}})
		truncate(b, path, 10*gib)
		b.StartTimer()
		res, err := GrowPart(path, 1, false)
		if err != nil || !res.Changed {
			b.Fatalf("%s: %v", res, err)
		}
	}
}
