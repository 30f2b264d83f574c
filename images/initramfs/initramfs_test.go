package initramfs

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/u-root/u-root/pkg/cpio"

	"github.com/seedinit/seedinit/boot/kmod"

	"github.com/seedinit/seedinit/internal/testenv"
)

const fakeRelease = "6.1.0-test-amd64"

// fakeModule writes a minimal ELF64 relocatable object whose only content is
// a .modinfo section, which is all the index reads from a .ko.
func fakeModule(t *testing.T, file string, modinfo ...string) {
	t.Helper()
	fakeModuleFor(t, elf.EM_X86_64, file, modinfo...)
}

// fakeModuleFor is fakeModule for another machine's kernel.
func fakeModuleFor(t *testing.T, machine elf.Machine, file string, modinfo ...string) {
	t.Helper()
	var info bytes.Buffer
	for _, kv := range modinfo {
		info.WriteString(kv)
		info.WriteByte(0)
	}
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	const headerSize = 64
	infoOff := uint64(headerSize)
	strOff := infoOff + uint64(info.Len())
	shOff := (strOff + uint64(len(shstrtab)) + 7) &^ 7

	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Shoff: shOff, Ehsize: headerSize, Shentsize: 64, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	sections := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC), Off: infoOff, Size: uint64(info.Len()), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstrtab)), Addralign: 1},
	}

	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, hdr)
	out.Write(info.Bytes())
	out.Write(shstrtab)
	out.Write(make([]byte, int(shOff)-out.Len()))
	binary.Write(&out, binary.LittleEndian, sections)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeKernel lays out lib/modules/<release> the way Debian's kernel package
// does: modules and modules.builtin, no modules.dep.
func fakeKernel(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "lib/modules", fakeRelease)
	mods := map[string][]string{
		"kernel/drivers/net/virtio_net.ko":     {"alias=virtio:d00000001v*", "depends=net_failover", "name=virtio_net"},
		"kernel/drivers/net/net_failover.ko":   {"depends=failover"},
		"kernel/net/core/failover.ko":          {"depends="},
		"kernel/fs/ext4/ext4.ko":               {"alias=fs-ext4", "depends=mbcache,jbd2", "softdep=pre: crc32c"},
		"kernel/fs/mbcache.ko":                 {"depends="},
		"kernel/fs/jbd2/jbd2.ko":               {"depends="},
		"kernel/crypto/crc32c_generic.ko":      {"alias=crypto-crc32c", "alias=crc32c", "depends="},
		"kernel/drivers/block/virtio_blk.ko":   {"alias=virtio:d00000002v*", "depends="},
		"kernel/drivers/misc/unrelated-mod.ko": {"depends="},
	}
	for p, info := range mods {
		fakeModule(t, filepath.Join(dir, p), info...)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte("kernel/fs/isofs/isofs.ko\nkernel/drivers/virtio/virtio_pci.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func build(t *testing.T, o Options) ([]byte, *Report) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := Build(&buf, o)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return buf.Bytes(), rep
}

// readArchive decodes the image with u-root's newc reader, the same format
// the kernel unpacks.
func readArchive(t *testing.T, img []byte) map[string]cpio.Record {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return readRawArchive(t, raw)
}

// readRawArchive decodes a bare newc cpio, as u-root's -base reads it
// (with this same reader).
func readRawArchive(t *testing.T, raw []byte) map[string]cpio.Record {
	t.Helper()
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("read cpio: %v", err)
	}
	byName := map[string]cpio.Record{}
	for _, r := range recs {
		if _, dup := byName[r.Name]; dup {
			t.Errorf("record %q written twice", r.Name)
		}
		byName[r.Name] = r
	}
	return byName
}

func content(t *testing.T, r cpio.Record) string {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(r.ReaderAt, 0, int64(r.FileSize)))
	if err != nil {
		t.Fatalf("read %s: %v", r.Name, err)
	}
	return string(b)
}

func fakeOptions(t *testing.T) Options {
	t.Helper()
	tmp := t.TempDir()
	bin := writeFile(t, filepath.Join(tmp, "seedinit"), "\x7fELF fake seedinit", 0o755)
	extraScript := writeFile(t, filepath.Join(tmp, "hook"), "#!/bin/sh\necho hook\n", 0o750)
	extraConf := writeFile(t, filepath.Join(tmp, "conf"), "key: value\n", 0o600)
	return Options{
		Seedinit:      bin,
		ModulesRoot:   fakeKernel(t),
		KernelRelease: fakeRelease,
		Modules:       []string{"virtio_net", "fs-ext4", "isofs", "virtio:d00000002v00001AF4", "no_such_module"},
		Extra: []Extra{
			{Src: extraScript, Dst: "/usr/lib/seedinit/hooks/hook"},
			{Src: extraConf, Dst: "/etc/seedinit.yaml"},
			{Dst: "/etc/seedinit/trust-policy", Data: []byte("require\n")},
		},
	}
}

func TestBuildFakeKernel(t *testing.T) {
	o := fakeOptions(t)
	img, rep := build(t, o)
	recs := readArchive(t, img)
	modDir := "lib/modules/" + fakeRelease

	t.Run("report", func(t *testing.T) {
		want := &Report{
			Modules: []string{"crc32c_generic", "ext4", "failover", "jbd2", "mbcache", "net_failover", "virtio_blk", "virtio_net"},
			Missing: []string{"no_such_module"},
			Builtin: []string{"isofs"},
			Files:   rep.Files,
			Arch:    "amd64",
		}
		if diff := cmp.Diff(want, rep); diff != "" {
			t.Errorf("report (-want +got):\n%s", diff)
		}
	})

	t.Run("init", func(t *testing.T) {
		r, ok := recs["init"]
		if !ok {
			t.Fatal("no /init")
		}
		if r.Mode&cpio.S_IFMT != cpio.S_IFREG || r.Mode&0o111 != 0o111 {
			t.Errorf("/init mode %o, want a regular file executable by all", r.Mode)
		}
		if got := content(t, r); got != "\x7fELF fake seedinit" {
			t.Errorf("/init content %q, want the seedinit binary", got)
		}
	})

	t.Run("device nodes", func(t *testing.T) {
		for _, tc := range []struct {
			name         string
			major, minor uint64
		}{{"dev/console", 5, 1}, {"dev/null", 1, 3}, {"dev/kmsg", 1, 11}} {
			t.Run(tc.name, func(t *testing.T) {
				r, ok := recs[tc.name]
				if !ok {
					t.Fatalf("no /%s", tc.name)
				}
				if r.Mode&cpio.S_IFMT != cpio.S_IFCHR || r.Rmajor != tc.major || r.Rminor != tc.minor {
					t.Errorf("/%s: mode %o dev %d:%d, want a char device %d:%d", tc.name, r.Mode, r.Rmajor, r.Rminor, tc.major, tc.minor)
				}
			})
		}
	})

	t.Run("directories", func(t *testing.T) {
		for _, d := range []string{"dev", "proc", "sys", "run", "sysroot", "tmp", "usr/lib/seedinit/hooks", modDir + "/kernel/fs/ext4"} {
			if r, ok := recs[d]; !ok || r.Mode&cpio.S_IFMT != cpio.S_IFDIR {
				t.Errorf("/%s: not a directory in the archive", d)
			}
		}
	})

	t.Run("modules", func(t *testing.T) {
		var got []string
		for name := range recs {
			if strings.HasSuffix(name, ".ko") {
				got = append(got, strings.TrimPrefix(name, modDir+"/"))
			}
		}
		sort.Strings(got)
		want := []string{
			"kernel/crypto/crc32c_generic.ko",
			"kernel/drivers/block/virtio_blk.ko",
			"kernel/drivers/net/net_failover.ko",
			"kernel/drivers/net/virtio_net.ko",
			"kernel/fs/ext4/ext4.ko",
			"kernel/fs/jbd2/jbd2.ko",
			"kernel/fs/mbcache.ko",
			"kernel/net/core/failover.ko",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("modules in the archive (-want +got):\n%s", diff)
		}
		orig, err := os.ReadFile(filepath.Join(o.ModulesRoot, "lib/modules", fakeRelease, "kernel/fs/ext4/ext4.ko"))
		if err != nil {
			t.Fatal(err)
		}
		if content(t, recs[modDir+"/kernel/fs/ext4/ext4.ko"]) != string(orig) {
			t.Error("ext4.ko in the archive differs from the source")
		}
	})

	t.Run("depmod files", func(t *testing.T) {
		want := map[string]string{
			"modules.dep": "kernel/crypto/crc32c_generic.ko:\n" +
				"kernel/fs/ext4/ext4.ko: kernel/fs/jbd2/jbd2.ko kernel/fs/mbcache.ko\n" +
				"kernel/net/core/failover.ko:\n" +
				"kernel/fs/jbd2/jbd2.ko:\n" +
				"kernel/fs/mbcache.ko:\n" +
				"kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko\n" +
				"kernel/drivers/block/virtio_blk.ko:\n" +
				"kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko\n",
			"modules.alias": "alias crypto-crc32c crc32c_generic\n" +
				"alias crc32c crc32c_generic\n" +
				"alias fs-ext4 ext4\n" +
				"alias virtio:d00000002v* virtio_blk\n" +
				"alias virtio:d00000001v* virtio_net\n",
			"modules.softdep": "softdep ext4 pre: crc32c\n",
			"modules.builtin": "isofs.ko\nvirtio_pci.ko\n",
		}
		got := map[string]string{}
		for name := range want {
			r, ok := recs[path.Join(modDir, name)]
			if !ok {
				t.Errorf("no %s", name)
				continue
			}
			got[name] = content(t, r)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("depmod files (-want +got):\n%s", diff)
		}
	})

	t.Run("depmod files resolve as the source tree does", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), modDir)
		for name, r := range recs {
			if strings.HasPrefix(name, modDir+"/modules.") {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, path.Base(name)), content(t, r), 0o644)
			}
		}
		packed, err := kmod.ReadDepmod(dir)
		if err != nil {
			t.Fatalf("ReadDepmod on the archive's files: %v", err)
		}
		source, err := kmod.BuildIndex(filepath.Join(o.ModulesRoot, modDir))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"ext4", "virtio_net", "virtio_blk"} {
			want, err := source.LoadOrder(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := packed.LoadOrder(m)
			if err != nil {
				t.Errorf("LoadOrder(%s) from the archive: %v", m, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("LoadOrder(%s) (-source +archive):\n%s", m, diff)
			}
		}
	})

	t.Run("added files", func(t *testing.T) {
		for _, tc := range []struct {
			name, content string
			perm          uint64
		}{
			{"usr/lib/seedinit/hooks/hook", "#!/bin/sh\necho hook\n", 0o750},
			{"etc/seedinit.yaml", "key: value\n", 0o600},
			{"etc/seedinit/trust-policy", "require\n", 0o644},
		} {
			r, ok := recs[tc.name]
			if !ok {
				t.Errorf("no /%s", tc.name)
				continue
			}
			if r.Mode&cpio.S_IFMT != cpio.S_IFREG || r.Mode&0o7777 != tc.perm {
				t.Errorf("/%s: mode %o, want a regular file %o", tc.name, r.Mode, tc.perm)
			}
			if got := content(t, r); got != tc.content {
				t.Errorf("/%s: content %q, want %q", tc.name, got, tc.content)
			}
		}
	})
}

// TestBuildNoInit is the module set for u-root's -base: a bare cpio with
// the modules, their index, the added files and the device nodes the
// kernel needs before any init runs, but no /init (u-root would keep it
// as /inito and run it first) and no seedinit binary read at all.
func TestBuildNoInit(t *testing.T) {
	o := fakeOptions(t)
	o.NoInit, o.Uncompressed = true, true
	o.Seedinit = "/nonexistent/seedinit"
	raw, rep := build(t, o)
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		t.Fatal("the archive is gzip'd; u-root's -base reads only a bare cpio")
	}
	recs := readRawArchive(t, raw)
	for _, absent := range []string{"init", "etc/initrd-release"} {
		if _, ok := recs[absent]; ok {
			t.Errorf("/%s in an archive built without an init", absent)
		}
	}
	modDir := "lib/modules/" + fakeRelease
	for _, want := range []string{"dev/console", "dev/null", "dev/kmsg", modDir + "/modules.dep", modDir + "/kernel/fs/ext4/ext4.ko", "etc/seedinit.yaml"} {
		if _, ok := recs[want]; !ok {
			t.Errorf("no /%s", want)
		}
	}
	if len(rep.Modules) == 0 {
		t.Error("no modules reported")
	}
	// The same set as the initramfs with seedinit: only /init and the
	// initrd marker differ.
	withInit := fakeOptions(t)
	withInit.ModulesRoot, withInit.Extra = o.ModulesRoot, o.Extra
	full := readArchive(t, func() []byte { b, _ := build(t, withInit); return b }())
	var extra []string
	for name := range full {
		if _, ok := recs[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	if diff := cmp.Diff([]string{"etc/initrd-release", "init"}, extra); diff != "" {
		t.Errorf("members only in the full initramfs (-want +got):\n%s", diff)
	}
}

func TestBuildReproducible(t *testing.T) {
	o := fakeOptions(t)
	first, _ := build(t, o)
	// Later timestamps on every input must not change a byte.
	later := time.Now().Add(time.Hour)
	filepath.Walk(o.ModulesRoot, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, later, later) })
	for _, e := range o.Extra {
		os.Chtimes(e.Src, later, later)
	}
	second, _ := build(t, o)
	if !bytes.Equal(first, second) {
		t.Errorf("two builds from the same inputs differ (%d and %d bytes)", len(first), len(second))
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"missing seedinit", func(o *Options) { o.Seedinit = "/nonexistent/seedinit" }, "read seedinit binary"},
		{"missing extra", func(o *Options) { o.Extra = []Extra{{Src: "/nonexistent/x", Dst: "/x"}} }, "--add /nonexistent/x:/x"},
		{"missing modules root", func(o *Options) { o.ModulesRoot = "/nonexistent" }, "/nonexistent/lib/modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t)
			tc.modify(&o)
			_, err := Build(io.Discard, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// archKernel lays out a kernel of one machine whose modules include
// drivers from both architectures' default sets.
func archKernel(t *testing.T, machine elf.Machine) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "lib/modules", fakeRelease)
	for _, m := range []string{"virtio_mmio", "virtio_pci", "gve", "e1000", "ata_piix"} {
		fakeModuleFor(t, machine, filepath.Join(dir, "kernel/drivers", m+".ko"), "depends=")
	}
	return root
}

// The default set follows the kernel's architecture, read from its
// modules: an arm64 kernel gets virtio-mmio and gVNIC and none of the x86
// controllers, an x86-64 one the set it always had.
func TestBuildDefaultModulesByArch(t *testing.T) {
	for _, tc := range []struct {
		machine  elf.Machine
		arch     string
		want     []string
		wantMiss []string
	}{
		{elf.EM_AARCH64, "arm64", []string{"gve", "virtio_mmio", "virtio_pci"}, nil},
		{elf.EM_X86_64, "amd64", []string{"ata_piix", "e1000", "virtio_pci"}, nil},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			o := fakeOptions(t)
			o.ModulesRoot = archKernel(t, tc.machine)
			o.Modules = nil
			_, rep := build(t, o)
			if rep.Arch != tc.arch {
				t.Errorf("Arch %q, want %q", rep.Arch, tc.arch)
			}
			if diff := cmp.Diff(tc.want, rep.Modules); diff != "" {
				t.Errorf("modules packed (-want +got):\n%s", diff)
			}
			for _, m := range rep.Missing {
				if !slices.Contains(DefaultModulesFor(tc.arch), m) {
					t.Errorf("missing %s, which is not in %s's default set", m, tc.arch)
				}
			}
		})
	}
}

// An /init the kernel cannot execute would be a panic at boot ("No
// working init found"): the builder refuses it, and names the fix.
func TestBuildRejectsInitOfAnotherArch(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.Skip(t, "no executable path:", err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		testenv.Skip(t, "the test binary is not ELF:", err)
	}
	mine := f.Machine
	f.Close()
	other, otherArch := elf.EM_AARCH64, "arm64"
	if mine == elf.EM_AARCH64 {
		other, otherArch = elf.EM_X86_64, "amd64"
	}
	o := fakeOptions(t)
	o.ModulesRoot = archKernel(t, other)
	o.Seedinit = exe
	_, err = Build(io.Discard, o)
	if err == nil || !strings.Contains(err.Error(), "GOARCH="+otherArch) {
		t.Errorf("an /init of this machine with %s modules: %v, want an error naming GOARCH=%s", otherArch, err, otherArch)
	}
	// The same kernel with a script as /init (the benchmarks' busybox
	// baseline) is fine: the script's interpreter is the initramfs's.
	o.Seedinit = writeFile(t, filepath.Join(t.TempDir(), "init"), "#!/bin/busybox sh\nexec switch_root /sysroot /sbin/init\n", 0o755)
	if _, err := Build(io.Discard, o); err != nil {
		t.Errorf("a script /init: %v", err)
	}
}

func TestParseExtra(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Extra
		wantErr bool
	}{
		{in: "hook.sh:/usr/lib/hook.sh", want: Extra{Src: "hook.sh", Dst: "/usr/lib/hook.sh"}},
		{in: "/abs/src:/dst", want: Extra{Src: "/abs/src", Dst: "/dst"}},
		{in: "nodst", wantErr: true},
		{in: ":/dst", wantErr: true},
		{in: "src:", wantErr: true},
		{in: "src:relative", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseExtra(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseExtra(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseExtra(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestBuildDebianKernel packs the real Debian cloud kernel's modules that
// scripts/fetch-kernel unpacks, the tree the e2e boots use.
func TestBuildDebianKernel(t *testing.T) {
	img, o, rep := buildDebianKernel(t, "kernel", "")
	if rep.Arch != "amd64" {
		t.Errorf("Arch %q, want amd64", rep.Arch)
	}
	recs := readArchive(t, img)
	modDir := "lib/modules/" + o.KernelRelease
	for _, m := range []string{"virtio_net", "virtio_blk", "virtio_rng", "isofs", "ext4"} {
		mods, builtin := lookupIn(t, recs, modDir, m)
		if len(mods) == 0 && !builtin {
			t.Errorf("%s: neither packed nor built in", m)
		}
	}
	if _, ok := recs[modDir+"/modules.dep"]; !ok {
		t.Error("no modules.dep")
	}
}

// TestBuildDebianKernelARM64 packs Debian's arm64 cloud kernel (what
// `scripts/fetch-kernel arm64` unpacks, scripts/e2e-arm64 boots): every
// module of the arm64 set is there, and the devices of QEMU's virt
// machine, as their modaliases read in its sysfs, find their drivers in
// the archive.
func TestBuildDebianKernelARM64(t *testing.T) {
	img, o, rep := buildDebianKernel(t, "kernel-arm64", "scripts/fetch-kernel arm64")
	if rep.Arch != "arm64" {
		t.Errorf("Arch %q, want arm64", rep.Arch)
	}
	if len(rep.Missing) > 0 {
		t.Errorf("arm64 default modules not in Debian's arm64 cloud kernel: %v", rep.Missing)
	}
	recs := readArchive(t, img)
	modDir := "lib/modules/" + o.KernelRelease
	for alias, want := range map[string]string{
		"of:Nvirtio_mmioT(null)Cvirtio,mmio":                    "virtio_mmio",
		"pci:v00001AF4d00001042sv00001AF4sd00001100bc01sc00i00": "virtio_pci",
		"virtio:d00000001v00001AF4":                             "virtio_net",
		"virtio:d00000002v00001AF4":                             "virtio_blk",
		"virtio:d00000004v00001AF4":                             "virtio_rng",
		"fs-iso9660":                                            "isofs",
		"fs-vfat":                                               "vfat",
	} {
		if mods, _ := lookupIn(t, recs, modDir, alias); !slices.Contains(mods, want) {
			t.Errorf("%s → %v, want %s packed", alias, mods, want)
		}
	}
	if mods, builtin := lookupIn(t, recs, modDir, "fs-ext4"); len(mods) == 0 && !builtin {
		t.Error("ext4: neither packed nor built in")
	}
}

// buildDebianKernel packs the default modules of the kernel that
// scripts/fetch-kernel unpacked into .cache/<cache>/root.
func buildDebianKernel(t *testing.T, cache, fetch string) ([]byte, Options, *Report) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("../../.cache", cache, "root"))
	if err != nil {
		t.Fatal(err)
	}
	releases, _ := filepath.Glob(filepath.Join(root, "lib/modules/*"))
	if len(releases) == 0 {
		if fetch == "" {
			fetch = "scripts/fetch-kernel"
		}
		testenv.Skipf(t, "no Debian kernel under .cache/%s/root (%s unpacks one)", cache, fetch)
	}
	if testing.Short() {
		testenv.SkipOptional(t, "packing a real kernel's modules is slow; skipped with -short")
	}
	o := fakeOptions(t)
	o.ModulesRoot = root
	o.KernelRelease = filepath.Base(releases[0])
	o.Modules = nil
	img, rep := build(t, o)
	if len(rep.Missing) > 0 {
		t.Logf("modules neither in the package nor built in: %v", rep.Missing)
	}
	return img, o, rep
}

func lookupIn(t *testing.T, recs map[string]cpio.Record, modDir, name string) ([]string, bool) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"modules.dep", "modules.alias", "modules.softdep", "modules.builtin"} {
		if r, ok := recs[path.Join(modDir, f)]; ok {
			writeFile(t, filepath.Join(dir, f), content(t, r), 0o644)
		}
	}
	idx, err := kmod.ReadDepmod(dir)
	if err != nil {
		t.Fatalf("ReadDepmod: %v", err)
	}
	mods, builtin := idx.Lookup(name)
	for _, m := range mods {
		if _, ok := recs[path.Join(modDir, idx.Modules[m].Path)]; !ok {
			t.Errorf("%s: listed in modules.dep but not in the archive", m)
		}
	}
	return mods, builtin
}
