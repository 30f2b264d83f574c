// Package initramfs builds seedinit's initramfs: a gzip'd newc cpio with
// seedinit as /init, the kernel modules a machine needs to reach its disks,
// network and seed, their depmod index, and any extra files. Without its
// /init it is the module set for another initramfs (u-root's -base).
package initramfs

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/boot/kmod"
)

// DefaultModules are loaded for the usual virtual and physical hardware of
// x86-64 machines: virtio, common NICs and disk controllers, CD-ROMs, the
// filesystems of roots and seed disks, an entropy source for early
// randomness, and QEMU's fw_cfg device and the SMBIOS tables' entries
// (a seed may be in either). It is also the set for a kernel whose
// architecture cannot be told from its modules.
var DefaultModules = []string{
	"virtio_pci", "virtio_net", "virtio_blk", "virtio_scsi", "virtio_rng", "virtio_console",
	"e1000", "e1000e", "igb", "ixgbe", "vmxnet3", "ena", "hv_netvsc", "hv_storvsc",
	"nvme", "ahci", "ata_piix", "sd_mod", "sr_mod", "isofs", "vfat",
	"nls_cp437", "nls_iso8859_1", "nls_ascii", "ext4", "xfs", "btrfs",
	"crc32c_generic", "crc32c_intel", "af_packet", "bonding", "8021q", "bridge",
	"qemu_fw_cfg", "dmi_sysfs",
}

// DefaultModulesARM64 is the set for arm64 kernels. Intel's NICs, AHCI,
// the PIIX IDE controller and Intel's CRC32C are x86 hardware (Debian's
// arm64 cloud kernel builds most of them not at all); arm64 machines add
// virtio over MMIO (QEMU's virt machine and Firecracker put devices
// there, without PCI), Google's gVNIC (Tau T2A, Axion) and Azure's MANA
// (its arm64 VMs have no other NIC).
var DefaultModulesARM64 = []string{
	"virtio_pci", "virtio_mmio", "virtio_net", "virtio_blk", "virtio_scsi", "virtio_rng", "virtio_console",
	"vmxnet3", "ena", "gve", "mana", "hv_netvsc", "hv_storvsc",
	"nvme", "sd_mod", "sr_mod", "isofs", "vfat",
	"nls_cp437", "nls_iso8859_1", "nls_ascii", "ext4", "xfs", "btrfs",
	"crc32c_generic", "af_packet", "bonding", "8021q", "bridge",
	"qemu_fw_cfg", "dmi_sysfs",
}

// DefaultModulesFor is the default set for a kernel of arch (GOARCH's
// names, as Report.Arch gives them).
func DefaultModulesFor(arch string) []string {
	if arch == "arm64" {
		return DefaultModulesARM64
	}
	return DefaultModules
}

// Options describe one initramfs.
type Options struct {
	Seedinit      string // the seedinit binary to put at /init
	ModulesRoot   string // a root holding lib/modules/<release> (a dpkg -x of a kernel package)
	KernelRelease string
	Modules       []string // modules to include with their dependencies; nil: DefaultModulesFor the kernel's architecture
	Extra         []Extra  // --add SRC:DST
	// NoInit leaves out /init (and Seedinit is not read): the archive is
	// the modules, their index and the extra files, to be merged into an
	// initramfs that has its own init, such as u-root's.
	NoInit bool
	// Uncompressed writes the bare newc cpio: u-root's -base reads no
	// other form. The kernel unpacks either.
	Uncompressed bool
}

// Extra is an extra file: the host's file Src copied in, or Data, made
// by the caller (mode 0644), when Src is "".
type Extra struct {
	Src, Dst string
	Data     []byte
}

// ParseExtra reads SRC:DST.
func ParseExtra(s string) (Extra, error) {
	src, dst, ok := strings.Cut(s, ":")
	if !ok || src == "" || dst == "" || !strings.HasPrefix(dst, "/") {
		return Extra{}, fmt.Errorf("--add %q: want SRC:/ABSOLUTE/DST", s)
	}
	return Extra{Src: src, Dst: dst}, nil
}

// Report says what went in.
type Report struct {
	Modules []string // included modules
	Missing []string // asked for, neither a module nor built in
	Builtin []string // asked for, built into the kernel
	Files   int
	// Arch is the kernel's architecture as GOARCH names it, read from its
	// modules' ELF headers; "" when there are none to read.
	Arch string
}

// Build writes the initramfs to w.
func Build(w io.Writer, o Options) (*Report, error) {
	rep := &Report{}
	var gz *gzip.Writer
	out := w
	if !o.Uncompressed {
		gz, _ = gzip.NewWriterLevel(w, gzip.BestCompression)
		out = gz
	}
	cw := newNewcWriter(out)
	var recs []record
	for _, d := range []string{"dev", "proc", "sys", "run", "sysroot", "tmp", "etc", "bin", "lib", "lib/modules"} {
		recs = append(recs, dirRecord(d, 0o755))
	}
	// The device nodes come along without an init too: the kernel opens
	// /dev/console for the init's output before any devtmpfs exists, and
	// u-root's -base replaces u-root's own skeleton, which has them.
	recs = append(recs,
		charDevRecord("dev/console", 0o600, 5, 1),
		charDevRecord("dev/null", 0o666, 1, 3),
		charDevRecord("dev/kmsg", 0o644, 1, 11),
	)
	var bin []byte // empty with --no-init: no architecture to compare
	if !o.NoInit {
		var err error
		bin, err = os.ReadFile(o.Seedinit)
		if err != nil {
			return nil, fmt.Errorf("build initramfs: read seedinit binary: %w", err)
		}
		recs = append(recs,
			fileRecord("etc/initrd-release", 0o644, []byte("NAME=seedinit\nID=seedinit\n")),
			fileRecord("init", 0o755, bin))
	}

	if o.ModulesRoot != "" {
		mrecs, err := moduleRecords(o, rep)
		if err != nil {
			return nil, err
		}
		// A script /init (the benchmarks' busybox baseline) has no
		// architecture of its own to compare.
		if initArch := elfArch(bytes.NewReader(bin)); initArch != "" && rep.Arch != "" && initArch != rep.Arch {
			return nil, fmt.Errorf("build initramfs: %s is an %s program but the kernel's modules are %s (build seedinit with GOARCH=%s)",
				o.Seedinit, initArch, rep.Arch, rep.Arch)
		}
		recs = append(recs, mrecs...)
	}
	for _, e := range o.Extra {
		if e.Src == "" {
			recs = append(recs, fileRecord(strings.TrimPrefix(e.Dst, "/"), 0o644, e.Data))
			continue
		}
		b, err := os.ReadFile(e.Src)
		if err != nil {
			return nil, fmt.Errorf("build initramfs: --add %s:%s: %w", e.Src, e.Dst, err)
		}
		fi, _ := os.Stat(e.Src)
		recs = append(recs, fileRecord(strings.TrimPrefix(e.Dst, "/"), uint32(fi.Mode().Perm()), b))
	}
	// The same inputs give the same bytes.
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	rep.Files = len(recs)
	for _, r := range recs {
		if err := cw.Write(r); err != nil {
			return nil, fmt.Errorf("build initramfs: %w", err)
		}
	}
	if err := cw.Close(); err != nil {
		return nil, fmt.Errorf("build initramfs: %w", err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return nil, fmt.Errorf("build initramfs: %w", err)
		}
	}
	return rep, nil
}

func moduleRecords(o Options, rep *Report) ([]record, error) {
	dir := filepath.Join(o.ModulesRoot, "lib/modules", o.KernelRelease)
	idx, err := kmod.ReadDepmod(dir)
	if err != nil {
		// Debian's packages ship no modules.dep: compute it.
		if idx, err = kmod.BuildIndex(dir); err != nil {
			return nil, fmt.Errorf("build initramfs: %w", err)
		}
	}
	rep.Arch = modulesArch(dir, idx)
	want := o.Modules
	if want == nil {
		want = DefaultModulesFor(rep.Arch)
	}
	keep := map[string]bool{}
	for _, m := range want {
		mods, builtin := idx.Lookup(m)
		if builtin && len(mods) == 0 {
			rep.Builtin = append(rep.Builtin, m)
			continue
		}
		if len(mods) == 0 {
			rep.Missing = append(rep.Missing, m)
			continue
		}
		for _, name := range mods {
			order, err := idx.LoadOrder(name)
			if err != nil {
				return nil, fmt.Errorf("build initramfs: %w", err)
			}
			for _, n := range order {
				keep[n] = true
			}
		}
	}
	var recs []record
	base := path.Join("lib/modules", o.KernelRelease)
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := idx.Modules[n]
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m.Path)))
		if err != nil {
			return nil, fmt.Errorf("build initramfs: module %s: %w", n, err)
		}
		recs = append(recs, fileRecord(path.Join(base, m.Path), 0o644, b))
	}
	rep.Modules = names
	err = idx.WriteDepmod(func(name string, data []byte) error {
		recs = append(recs, fileRecord(path.Join(base, name), 0o644, append([]byte(nil), data...)))
		return nil
	}, keep)
	if err != nil {
		return nil, fmt.Errorf("build initramfs: %w", err)
	}
	return recs, nil
}

// elfArches maps ELF machines to GOARCH's names, for the architectures
// Debian builds kernels for.
var elfArches = map[uint16]string{
	3: "386", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390x", 40: "arm",
	62: "amd64", 183: "arm64", 243: "riscv64", 258: "loong64",
}

// elfArch is the architecture of an ELF file, "" when it is no ELF file
// or one of a machine not in elfArches.
func elfArch(r io.ReaderAt) string {
	m, err := kmod.ELFMachine(r)
	if err != nil {
		return ""
	}
	return elfArches[m]
}

// modulesArch is the architecture of a kernel's modules, told by the
// first uncompressed one: compressed modules would need a decompressor
// for four bytes of header. "" when there is none.
func modulesArch(dir string, idx *kmod.Index) string {
	names := make([]string, 0, len(idx.Modules))
	for n, m := range idx.Modules {
		if strings.HasSuffix(m.Path, ".ko") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(idx.Modules[n].Path)))
		if err != nil {
			continue
		}
		arch := elfArch(f)
		f.Close()
		if arch != "" {
			return arch
		}
	}
	return ""
}
