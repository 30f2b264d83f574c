// Package initramfs builds seedinit's initramfs: a gzip'd newc cpio with
// seedinit as /init, the kernel modules a machine needs to reach its disks,
// network and seed, their depmod index, and any extra files.
package initramfs

import (
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

// DefaultModules are loaded for the usual virtual and physical hardware:
// virtio, common NICs and disk controllers, CD-ROMs, the filesystems of
// roots and seed disks, and an entropy source for early randomness.
var DefaultModules = []string{
	"virtio_pci", "virtio_net", "virtio_blk", "virtio_scsi", "virtio_rng", "virtio_console",
	"e1000", "e1000e", "igb", "ixgbe", "vmxnet3", "ena", "hv_netvsc", "hv_storvsc",
	"nvme", "ahci", "ata_piix", "sd_mod", "sr_mod", "isofs", "vfat",
	"nls_cp437", "nls_iso8859_1", "nls_ascii", "ext4", "xfs", "btrfs",
	"crc32c_generic", "crc32c_intel", "af_packet", "bonding", "8021q", "bridge",
}

// Options describe one initramfs.
type Options struct {
	Seedinit      string // the seedinit binary to put at /init
	ModulesRoot   string // a root holding lib/modules/<release> (a dpkg -x of a kernel package)
	KernelRelease string
	Modules       []string // modules to include with their dependencies; nil: DefaultModules
	Extra         []Extra  // --add SRC:DST
}

// Extra is an extra file copied in.
type Extra struct{ Src, Dst string }

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
}

// Build writes the initramfs to w.
func Build(w io.Writer, o Options) (*Report, error) {
	rep := &Report{}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	cw := newNewcWriter(gz)
	var recs []record
	for _, d := range []string{"dev", "proc", "sys", "run", "sysroot", "tmp", "etc", "bin", "lib", "lib/modules"} {
		recs = append(recs, dirRecord(d, 0o755))
	}
	recs = append(recs,
		charDevRecord("dev/console", 0o600, 5, 1),
		charDevRecord("dev/null", 0o666, 1, 3),
		charDevRecord("dev/kmsg", 0o644, 1, 11),
		fileRecord("etc/initrd-release", 0o644, []byte("NAME=seedinit\nID=seedinit\n")),
	)
	bin, err := os.ReadFile(o.Seedinit)
	if err != nil {
		return nil, fmt.Errorf("build initramfs: read seedinit binary: %w", err)
	}
	recs = append(recs, fileRecord("init", 0o755, bin))

	if o.ModulesRoot != "" {
		mrecs, err := moduleRecords(o, rep)
		if err != nil {
			return nil, err
		}
		recs = append(recs, mrecs...)
	}
	for _, e := range o.Extra {
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
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("build initramfs: %w", err)
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
	want := o.Modules
	if want == nil {
		want = DefaultModules
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
