package disksetup

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/disk"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

func sparseImage(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func inspectPath(t *testing.T, p string) Found {
	t.Helper()
	d, err := disk.OpenFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return Inspect(d)
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Skipf(t, "%s not installed (Debian: fdisk/gdisk); it is the oracle for cloud-init's partition commands", name)
	}
	return p
}

// cloudInitCommands runs what cloud-init 22.4.2 runs for the layout on
// the image: its sfdisk script for MBR, its sgdisk -n/-t commands for GPT.
func cloudInitCommands(t *testing.T, tableType string, img string, size int64, l Layout) {
	t.Helper()
	total := float64(size) / 512
	if tableType == MBR {
		sfdisk := needTool(t, "sfdisk")
		var lines []string
		parts := l.Parts
		if l.Whole {
			parts = []PartSpec{{Percent: 100}}
		}
		for i, p := range parts {
			typ := p.Type
			if typ == "" {
				typ = "83"
			}
			if i == len(parts)-1 {
				lines = append(lines, ",,"+typ)
			} else {
				lines = append(lines, fmt.Sprintf(",%d,%s", uint64(total*(p.Percent/100)), typ))
			}
		}
		cmd := exec.Command(sfdisk, "--Linux", "--unit=S", "--force", img)
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sfdisk: %v\n%s", err, out)
		}
		return
	}
	sgdisk := needTool(t, "sgdisk")
	run := func(args ...string) {
		if out, err := exec.Command(sgdisk, append(args, img)...).CombinedOutput(); err != nil {
			t.Fatalf("sgdisk %v: %v\n%s", args, err, out)
		}
	}
	// One sgdisk run with cloud-init's -n/-t options in its order: each
	// separate run costs a second of sgdisk's re-read wait, and the
	// image is fresh, so -Z has nothing to zap.
	var args []string
	parts := l.Parts
	if l.Whole {
		parts = []PartSpec{{Percent: 100}}
	}
	for i, p := range parts {
		end := fmt.Sprintf("+%d", uint64(total*(p.Percent/100)))
		if i == len(parts)-1 {
			end = "0"
		}
		args = append(args, "-n", fmt.Sprintf("%d:0:%s", i+1, end))
		if p.Type != "" {
			code := p.Type
			for len(code) < 4 {
				code += "0"
			}
			args = append(args, "-t", fmt.Sprintf("%d:%s", i+1, code))
		}
	}
	run(args...)
}

func TestPlanMatchesCloudInitTools(t *testing.T) {
	layouts := []struct {
		name string
		l    Layout
	}{
		{"whole", Layout{Whole: true}},
		{"33-66swap", Layout{Parts: []PartSpec{{Percent: 33}, {Percent: 66, Type: "82"}}}},
		{"three", Layout{Parts: []PartSpec{{Percent: 10}, {Percent: 45.5, Type: "82"}, {Percent: 30}}}},
		{"four", Layout{Parts: []PartSpec{{Percent: 25}, {Percent: 25}, {Percent: 25}, {Percent: 25}}}},
	}
	sizes := []int64{100 << 20, 1000<<20 + 1024, 3<<30 + 7*512}
	for _, tableType := range []string{MBR, GPT} {
		for _, lt := range layouts {
			for _, size := range sizes {
				t.Run(fmt.Sprintf("%s/%s/%d", tableType, lt.name, size), func(t *testing.T) {
					oracle := sparseImage(t, size)
					cloudInitCommands(t, tableType, oracle, size, lt.l)
					want := inspectPath(t, oracle)

					ours := sparseImage(t, size)
					note, err := SetupDisk(DiskSpec{Device: ours, TableType: tableType, Layout: lt.l}, ours, rand.Reader)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(note, "wrote") {
						t.Fatalf("SetupDisk = %q, want a write", note)
					}
					got := inspectPath(t, ours)
					if diff := cmp.Diff(want.Parts, got.Parts); diff != "" {
						t.Errorf("partitions differ from cloud-init's tools (-sfdisk/sgdisk +ours):\n%s", diff)
					}
					if tableType == GPT {
						out, err := exec.Command("sgdisk", "-v", ours).CombinedOutput()
						if err != nil || !strings.Contains(string(out), "No problems found") {
							t.Errorf("sgdisk -v: %v\n%s", err, out)
						}
					} else if out, err := exec.Command("sfdisk", "-d", ours).CombinedOutput(); err != nil {
						t.Errorf("sfdisk -d: %v\n%s", err, out)
					}
					// A second run finds the layout in place.
					note, err = SetupDisk(DiskSpec{Device: ours, TableType: tableType, Layout: lt.l}, ours, rand.Reader)
					if err != nil || note != "partition layout already matches" {
						t.Errorf("second SetupDisk = %q, %v; want a match", note, err)
					}
				})
			}
		}
	}
}

func fileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNeverOverwrite(t *testing.T) {
	const size = 64 << 20
	twoParts := Layout{Parts: []PartSpec{{Percent: 50}, {Percent: 50}}}
	tests := []struct {
		name      string
		prepare   func(t *testing.T, img string)
		spec      DiskSpec
		wantWrite bool
		wantNote  string
	}{
		{
			name:     "different MBR layout kept",
			prepare:  func(t *testing.T, img string) { cloudInitCommands(t, MBR, img, size, Layout{Whole: true}) },
			spec:     DiskSpec{TableType: MBR, Layout: twoParts},
			wantNote: "disk in use (mbr table with 1 partitions)",
		},
		{
			name:      "different MBR layout replaced with overwrite",
			prepare:   func(t *testing.T, img string) { cloudInitCommands(t, MBR, img, size, Layout{Whole: true}) },
			spec:      DiskSpec{TableType: MBR, Layout: twoParts, Overwrite: true},
			wantWrite: true,
		},
		{
			name:     "GPT kept when MBR asked",
			prepare:  func(t *testing.T, img string) { cloudInitCommands(t, GPT, img, size, twoParts) },
			spec:     DiskSpec{TableType: MBR, Layout: twoParts},
			wantNote: "disk in use (gpt table with 2 partitions)",
		},
		{
			name: "filesystem on bare disk kept",
			prepare: func(t *testing.T, img string) {
				mkfs := needTool(t, "mkfs.ext4")
				if out, err := exec.Command(mkfs, "-q", "-F", "-L", "data", img).CombinedOutput(); err != nil {
					t.Fatalf("mkfs.ext4: %v\n%s", err, out)
				}
			},
			spec:     DiskSpec{TableType: GPT, Layout: Layout{Whole: true}},
			wantNote: "disk in use (a ext4 filesystem on the bare disk)",
		},
		{
			name: "unreadable GPT kept",
			prepare: func(t *testing.T, img string) {
				cloudInitCommands(t, GPT, img, size, twoParts)
				f, _ := os.OpenFile(img, os.O_RDWR, 0)
				defer f.Close()
				// Break both headers' CRCs (flipping a byte: writing a fixed
				// value left the CRC intact when the byte already had it);
				// the protective MBR remains.
				for _, off := range []int64{512 + 16, size - 512 + 16} {
					b := make([]byte, 1)
					f.ReadAt(b, off)
					f.WriteAt([]byte{^b[0]}, off)
				}
			},
			spec:     DiskSpec{TableType: GPT, Layout: twoParts},
			wantNote: "disk in use (unreadable partition table: a GPT protective MBR but no valid GPT header)",
		},
		{
			name:      "empty disk partitioned",
			prepare:   func(t *testing.T, img string) {},
			spec:      DiskSpec{TableType: GPT, Layout: twoParts},
			wantWrite: true,
		},
		{
			name:     "layout false does nothing",
			prepare:  func(t *testing.T, img string) {},
			spec:     DiskSpec{TableType: GPT},
			wantNote: "no layout: not partitioning",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := sparseImage(t, size)
			tt.prepare(t, img)
			before := fileBytes(t, img)
			tt.spec.Device = img
			note, err := SetupDisk(tt.spec, img, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			changed := !bytes.Equal(before, fileBytes(t, img))
			if changed != tt.wantWrite {
				t.Errorf("disk changed = %v, want %v (note %q)", changed, tt.wantWrite, note)
			}
			if tt.wantNote != "" && !strings.HasPrefix(note, tt.wantNote) {
				t.Errorf("note = %q, want prefix %q", note, tt.wantNote)
			}
		})
	}
}

func TestParseLayout(t *testing.T) {
	tests := []struct {
		in      any
		want    Layout
		wantErr string
	}{
		{true, Layout{Whole: true}, ""},
		{false, Layout{}, ""},
		{nil, Layout{}, ""},
		{[]any{33, []any{66, 82}}, Layout{Parts: []PartSpec{{Percent: 33}, {Percent: 66, Type: "82"}}}, ""},
		{[]any{12.5, []any{"50", "fd00"}}, Layout{Parts: []PartSpec{{Percent: 12.5}, {Percent: 50, Type: "fd00"}}}, ""},
		{[]any{[]any{1, 2, 3}}, Layout{}, "layout item 0: want [percent, type]"},
		{[]any{0}, Layout{}, "layout item 0: percentage 0"},
		{"remove", Layout{}, "layout: remove"},
		{map[string]any{}, Layout{}, "layout: a mapping"},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got, err := parseLayout(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name      string
		tableType string
		l         Layout
		want      string
	}{
		{"five MBR", MBR, Layout{Parts: []PartSpec{{Percent: 10}, {Percent: 10}, {Percent: 10}, {Percent: 10}, {Percent: 10}}}, "at most 4"},
		{"bad MBR type", MBR, Layout{Parts: []PartSpec{{Percent: 10, Type: "zz"}}}, "not an MBR type"},
		{"bad GPT type", GPT, Layout{Parts: []PartSpec{{Percent: 10, Type: "9999"}}}, "not a gdisk type"},
		{"over full", GPT, Layout{Parts: []PartSpec{{Percent: 100}, {Percent: 1}}}, "run past"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.tableType == MBR {
				_, err = PlanMBR(64<<20, 512, tt.l)
			} else {
				_, err = PlanGPT(64<<20, 512, tt.l)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseFSSetup(t *testing.T) {
	cfg := apply.Config{"fs_setup": []any{
		map[string]any{"label": "eph", "filesystem": "ext4", "device": "/dev/vdb.2", "partition": "auto"},
		map[string]any{"filesystem": "swap", "device": "/dev/vdc", "partition": "none", "overwrite": "yes", "extra_opts": []any{"-U", "x"}},
		"junk",
		map[string]any{"device": "/dev/vdd"},
		map[string]any{"device": "/dev/vde", "filesystem": "xfs", "partition": "first"},
	}}
	got, err := ParseFSSetup(cfg)
	want := []FSSpec{
		{Label: "eph", Filesystem: "ext4", Device: "/dev/vdb", Partition: "2"},
		{Filesystem: "swap", Device: "/dev/vdc", Partition: "none", Overwrite: true, ExtraOpts: []string{"-U", "x"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	for _, w := range []string{"fs_setup item 2: invalid filesystem definition", "fs_setup item 3: no way to create", "fs_setup item 4: partition \"first\""} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to mention %q", err, w)
		}
	}
}

func TestMkfsArgvAndCmd(t *testing.T) {
	tests := []struct {
		name string
		s    FSSpec
		bare bool
		want []string
	}{
		{"ext4 partition", FSSpec{Label: "data", Filesystem: "ext4"}, false, []string{"/sbin/mkfs.ext4", "-L", "data", "/dev/x"}},
		{"ext4 bare disk forces", FSSpec{Label: "data", Filesystem: "ext4"}, true, []string{"/sbin/mkfs.ext4", "-L", "data", "-F", "/dev/x"}},
		{"xfs overwrite", FSSpec{Filesystem: "xfs", Overwrite: true, ExtraOpts: []string{"-m", "crc=1"}}, false, []string{"/sbin/mkfs.ext4", "-f", "-m", "crc=1", "/dev/x"}},
		{"vfat has no force flag", FSSpec{Filesystem: "vfat", Overwrite: true}, true, []string{"/sbin/mkfs.ext4", "/dev/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MkfsArgv("/sbin/mkfs.ext4", tt.s, "/dev/x", tt.bare)); diff != "" {
				t.Error(diff)
			}
		})
	}
	got, err := ExpandCmd("mkfs -t %(filesystem)s -L %(label)s %(device)s 100%%", FSSpec{Label: "l", Filesystem: "ext3"}, "/dev/sdb1")
	if err != nil || got != "mkfs -t ext3 -L l /dev/sdb1 100%" {
		t.Errorf("ExpandCmd = %q, %v", got, err)
	}
	if _, err := ExpandCmd("mkfs %(bogus)s", FSSpec{}, "/d"); err == nil {
		t.Error("ExpandCmd accepted %(bogus)s")
	}
}

func fakeMkfs(t *testing.T, env *apply.Env, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := env.Root.MkdirAll("/usr/sbin", 0o755, rootfs.Owner{}); err != nil {
			t.Fatal(err)
		}
		if err := env.Root.WriteFile("/usr/sbin/"+n, []byte("#!/bin/sh\n"), 0o755, rootfs.Owner{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSetupFS(t *testing.T) {
	tests := []struct {
		name    string
		mkfs    []string
		prepare func(t *testing.T, img string)
		spec    FSSpec
		wantRan []string
		wantErr string
		wantFAT bool
	}{
		{
			name: "ext4 on bare disk with target mkfs", mkfs: []string{"mkfs.ext4"},
			spec:    FSSpec{Label: "data", Filesystem: "ext4", Partition: "none"},
			wantRan: []string{"/usr/sbin/mkfs.ext4 -L data -F IMG"},
		},
		{
			name: "swap via mkswap", mkfs: []string{"mkswap"},
			spec:    FSSpec{Label: "sw", Filesystem: "swap", Partition: "any"},
			wantRan: []string{"/usr/sbin/mkswap -L sw -f IMG"},
		},
		{
			name: "no mkfs in image", spec: FSSpec{Filesystem: "btrfs", Partition: "none"},
			wantErr: "filesystem btrfs: no mkfs.btrfs in this image",
		},
		{
			name: "existing other filesystem kept", mkfs: []string{"mkfs.xfs"},
			prepare: mkfsImage("ext4", "old"),
			spec:    FSSpec{Label: "new", Filesystem: "xfs", Partition: "none"},
			wantErr: "holds a ext4 filesystem labelled \"old\"",
		},
		{
			name: "existing same filesystem reused", mkfs: []string{"mkfs.ext4"},
			prepare: mkfsImage("ext4", "data"),
			spec:    FSSpec{Label: "data", Filesystem: "ext4", Partition: "any"},
		},
		{
			name: "replace_fs allows replacing", mkfs: []string{"mkfs.xfs"},
			prepare: mkfsImage("ext4", "old"),
			spec:    FSSpec{Label: "new", Filesystem: "xfs", Partition: "any", ReplaceFS: "ext4"},
			wantRan: []string{"/usr/sbin/mkfs.xfs -L new -f IMG"},
		},
		{
			name: "overwrite allows replacing", mkfs: []string{"mkfs.xfs"},
			prepare: mkfsImage("ext4", "old"),
			spec:    FSSpec{Label: "new", Filesystem: "xfs", Partition: "none", Overwrite: true},
			wantRan: []string{"/usr/sbin/mkfs.xfs -L new -f IMG"},
		},
		{
			name: "FAT32 with go-diskfs when no mkfs.vfat",
			spec: FSSpec{Label: "EFI", Filesystem: "vfat", Partition: "none"}, wantFAT: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := applytest.NewEnv(t, apply.Config{})
			env, sys := te.Env, te.Sys
			fakeMkfs(t, env, tt.mkfs...)
			img := sparseImage(t, 64<<20)
			if tt.prepare != nil {
				tt.prepare(t, img)
			}
			_, err := SetupFS(context.Background(), env, tt.spec, img)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ran []string
			for _, r := range sys.Ran() {
				ran = append(ran, strings.ReplaceAll(r, img, "IMG"))
			}
			if diff := cmp.Diff(tt.wantRan, ran); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if tt.wantFAT {
				fs, ok, err := probeFS(img)
				if err != nil || !ok || fs.Type != "vfat" || fs.Label != "EFI" {
					t.Errorf("probe after FAT32 = %+v, %v, %v", fs, ok, err)
				}
			}
		})
	}
}

func mkfsImage(fsType, label string) func(t *testing.T, img string) {
	return func(t *testing.T, img string) {
		mkfs := needTool(t, "mkfs."+fsType)
		if out, err := exec.Command(mkfs, "-q", "-F", "-L", label, img).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.%s: %v\n%s", fsType, err, out)
		}
	}
}

func TestModuleSkipsWhenNotLive(t *testing.T) {
	te := applytest.NewEnv(t, apply.Config{"disk_setup": map[string]any{"/dev/vdb": map[string]any{"layout": true}}})
	err := run(context.Background(), te.Env)
	if !errors.Is(err, apply.ErrSkipped) {
		t.Fatalf("run = %v, want a skip", err)
	}
}

func TestResolveDevice(t *testing.T) {
	if _, err := resolveDevice(nil, "ephemeral0"); err == nil || !strings.Contains(err.Error(), "device_aliases") {
		t.Errorf("ephemeral0 without alias: %v", err)
	}
	img := sparseImage(t, 1<<20)
	got, err := resolveDevice(map[string]string{"data": img}, "data")
	if err != nil || got != img {
		t.Errorf("alias = %q, %v", got, err)
	}
}

func FuzzInspect(f *testing.F) {
	f.Add(make([]byte, 4096))
	mbr := make([]byte, 4096)
	mbr[510], mbr[511] = 0x55, 0xAA
	mbr[446+4], mbr[446+8], mbr[446+12] = 0x83, 1, 4
	f.Add(mbr)
	f.Fuzz(func(t *testing.T, b []byte) {
		img := filepath.Join(t.TempDir(), "fuzz.img")
		if err := os.WriteFile(img, b, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := disk.OpenFile(img, false)
		if err != nil {
			return
		}
		defer d.Close()
		found := Inspect(d)
		found.Matches(MBR, Layout{Whole: true})
		found.Matches(GPT, Layout{Parts: []PartSpec{{Percent: 50, Type: "82"}}})
	})
}

func FuzzParseLayout(f *testing.F) {
	f.Add("true")
	f.Add("[33, [66, 82]]")
	f.Add("[[50, ef00], 50]")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := yaml11Load(s)
		if err != nil {
			return
		}
		l, err := parseLayout(v)
		if err != nil || l.Empty() {
			return
		}
		PlanMBR(1<<30, 512, l)
		PlanGPT(1<<30, 4096, l)
	})
}

func yaml11Load(s string) (any, error) { return yaml11.Load([]byte(s)) }
