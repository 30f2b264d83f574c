package kmod

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/testenv"
)

// fakeKernel records loads; fail makes a module's load fail with an errno.
type fakeKernel struct {
	mu     sync.Mutex
	loaded []string
	fail   map[string]error
	have   map[string]bool
}

func (k *fakeKernel) FinitModule(f *os.File, params string, flags int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	name := Name(f.Name())
	if err := k.fail[name]; err != nil {
		return err
	}
	k.loaded = append(k.loaded, name)
	k.have[name] = true
	return nil
}

func (k *fakeKernel) Loaded(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.have[name]
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A generic Debian kernel's shape: ext4 as a module with a soft dependency
// on crc32c, which two modules offer; one of them fails under TCG.
var depmodTree = map[string]string{
	"modules.dep": `kernel/fs/ext4/ext4.ko: kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko kernel/lib/crc16.ko
kernel/fs/mbcache.ko:
kernel/fs/jbd2/jbd2.ko:
kernel/lib/crc16.ko:
kernel/arch/x86/crypto/crc32c-intel.ko:
kernel/crypto/crc32c_generic.ko:
kernel/drivers/net/virtio_net.ko: kernel/net/core/failover.ko kernel/drivers/net/net_failover.ko
kernel/net/core/failover.ko:
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/fs/isofs/isofs.ko.xz:
`,
	"modules.alias": `alias crypto-crc32c crc32c_intel
alias crc32c crc32c_intel
alias crypto-crc32c crc32c_generic
alias crc32c crc32c_generic
alias virtio:d00000001v* virtio_net
alias fs-ext4 ext4
`,
	"modules.softdep":        "softdep ext4 pre: crc32c\n",
	"modules.builtin":        "kernel/drivers/virtio/virtio.ko\nkernel/drivers/virtio/virtio_pci.ko\n",
	"kernel/fs/ext4/ext4.ko": "", "kernel/fs/mbcache.ko": "", "kernel/fs/jbd2/jbd2.ko": "", "kernel/lib/crc16.ko": "",
	"kernel/arch/x86/crypto/crc32c-intel.ko": "", "kernel/crypto/crc32c_generic.ko": "",
	"kernel/drivers/net/virtio_net.ko": "", "kernel/net/core/failover.ko": "", "kernel/drivers/net/net_failover.ko": "",
	"kernel/fs/isofs/isofs.ko.xz": "",
}

func TestLoadResolvesDepsSoftdepsAndTolerates(t *testing.T) {
	dir := writeTree(t, depmodTree)
	idx, err := ReadDepmod(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKernel{fail: map[string]error{"crc32c_intel": unix.ENODEV}, have: map[string]bool{"mbcache": true}}
	var timed []string
	l := &Loader{Index: idx, Dir: dir, Kernel: k, Loaded: func(name string, start time.Time, d time.Duration) {
		if start.IsZero() || d < 0 {
			t.Errorf("%s timed from %v for %v", name, start, d)
		}
		timed = append(timed, name)
	}}

	if err := l.Load("ext4"); err != nil {
		t.Fatalf("ext4: %v", err)
	}
	// mbcache was loaded already; crc32c_intel failed (soft) and
	// crc32c_generic served; the hard deps come before ext4.
	want := []string{"crc32c_generic", "crc16", "jbd2", "ext4"}
	if d := cmp.Diff(want, k.loaded); d != "" {
		t.Errorf("load order (-want +got):\n%s", d)
	}
	// Only what the kernel took is timed.
	if d := cmp.Diff(want, timed); d != "" {
		t.Errorf("modules timed (-want +got):\n%s", d)
	}
	k.loaded = nil
	if err := l.Load("virtio:d00000001v00001AF4"); err != nil {
		t.Fatalf("virtio alias: %v", err)
	}
	if d := cmp.Diff([]string{"failover", "net_failover", "virtio_net"}, k.loaded); d != "" {
		t.Errorf("alias load (-want +got):\n%s", d)
	}
	if err := l.Load("virtio_pci"); err != nil {
		t.Errorf("a built-in module is not an error: %v", err)
	}
	if err := l.Load("no_such_module"); err == nil || !strings.Contains(err.Error(), "no_such_module") {
		t.Errorf("missing module: %v", err)
	}
	k.fail["jbd2"] = unix.ENOEXEC
	delete(k.have, "ext4")
	delete(k.have, "jbd2")
	if err := l.Load("ext4"); err == nil || !strings.Contains(err.Error(), "jbd2") {
		t.Errorf("a failing hard dependency must fail the module and name it: %v", err)
	}
}

func TestWriteDepmodRoundTrip(t *testing.T) {
	dir := writeTree(t, depmodTree)
	idx, err := ReadDepmod(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	err = idx.WriteDepmod(func(name string, data []byte) error {
		return os.WriteFile(filepath.Join(out, name), data, 0o644)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadDepmod(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ext4", "virtio_net", "crc32c"} {
		a, _ := idx.LoadOrder(n)
		b, _ := back.LoadOrder(n)
		if d := cmp.Diff(a, b); d != "" {
			t.Errorf("%s load order changed through WriteDepmod (-before +after):\n%s", n, d)
		}
	}
}

// realModulesDir is the Debian kernel that scripts/fetch-kernel unpacks.
func realModulesDir(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		testenv.SkipOptional(t, "the cached Debian kernel is amd64")
	}
	matches, _ := filepath.Glob("../../.cache/kernel/root/lib/modules/*")
	if len(matches) == 0 {
		testenv.Skip(t, "no Debian kernel in .cache/kernel: run scripts/fetch-kernel (CI does)")
	}
	return matches[0]
}

func TestBuildIndexOnDebianKernel(t *testing.T) {
	dir := realModulesDir(t)
	idx, err := BuildIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Modules) < 500 {
		t.Fatalf("indexed %d modules, want the whole kernel", len(idx.Modules))
	}
	order, err := idx.LoadOrder("isofs")
	if err != nil {
		t.Fatal(err)
	}
	if order[len(order)-1] != "isofs" {
		t.Errorf("isofs order %v", order)
	}
	order, err = idx.LoadOrder("virtio_net")
	if err != nil || !slices.Contains(order, "net_failover") || order[len(order)-1] != "virtio_net" {
		t.Errorf("virtio_net order %v, %v: want net_failover before it", order, err)
	}
	order, _ = idx.LoadOrder("sr_mod")
	if !slices.Contains(order, "cdrom") {
		t.Errorf("sr_mod must pull cdrom: %v", order)
	}
	// virtio-net's PCI device and block device aliases resolve.
	for alias, want := range map[string]string{
		"virtio:d00000001v00001AF4": "virtio_net",
		"virtio:d00000002v00001AF4": "virtio_blk",
		"fs-vfat":                   "vfat",
	} {
		mods, builtin := idx.Lookup(alias)
		if !builtin && !slices.Contains(mods, want) {
			t.Errorf("alias %s → %v, want %s", alias, mods, want)
		}
	}
	// The cloud kernel builds ext4 in; its index must say so rather than
	// fail, by name and by the alias PID 1 asks for.
	for _, n := range []string{"ext4", "fs-ext4"} {
		if mods, builtin := idx.Lookup(n); !builtin && len(mods) == 0 {
			t.Errorf("%s is neither a module nor built in", n)
		}
	}
}

// TestBuildIndexOnDebianARM64Kernel indexes Debian's arm64 cloud kernel
// (scripts/fetch-kernel arm64): the ELF reader is the same for AArch64
// objects, and the devices of QEMU's virt machine, by the modaliases its
// sysfs shows, resolve to their drivers, which is what coldplug asks.
func TestBuildIndexOnDebianARM64Kernel(t *testing.T) {
	matches, _ := filepath.Glob("../../.cache/kernel-arm64/root/lib/modules/*")
	if len(matches) == 0 {
		testenv.Skip(t, "no Debian arm64 kernel in .cache/kernel-arm64: run scripts/fetch-kernel arm64")
	}
	dir := matches[0]
	idx, err := BuildIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Modules) < 500 {
		t.Fatalf("indexed %d modules, want the whole kernel", len(idx.Modules))
	}
	f, err := os.Open(filepath.Join(dir, idx.Modules["virtio_mmio"].Path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if m, err := ELFMachine(f); err != nil || m != 183 {
		t.Errorf("virtio_mmio.ko: machine %d, %v; want EM_AARCH64 (183)", m, err)
	}
	for alias, want := range map[string]string{
		"of:Nvirtio_mmioT(null)Cvirtio,mmio":                    "virtio_mmio",
		"pci:v00001AF4d00001042sv00001AF4sd00001100bc01sc00i00": "virtio_pci",
		"virtio:d00000002v00001AF4":                             "virtio_blk",
		"virtio:d00000004v00001AF4":                             "virtio_rng",
	} {
		if mods, _ := idx.Lookup(alias); !slices.Contains(mods, want) {
			t.Errorf("alias %s → %v, want %s", alias, mods, want)
		}
	}
	if order, err := idx.LoadOrder("virtio_blk"); err != nil || !slices.Contains(order, "virtio_ring") {
		t.Errorf("virtio_blk order %v, %v: want virtio_ring before it", order, err)
	}
	for _, n := range []string{"ext4", "fs-ext4", "nvme"} {
		if mods, builtin := idx.Lookup(n); !builtin && len(mods) == 0 {
			t.Errorf("%s is neither a module nor built in", n)
		}
	}
}

func FuzzReadDepmod(f *testing.F) {
	f.Add(depmodTree["modules.dep"], depmodTree["modules.alias"], depmodTree["modules.softdep"])
	f.Add("a.ko: b.ko\nb.ko: a.ko\n", "alias x* a\n", "softdep a pre: b post: a\n")
	f.Fuzz(func(t *testing.T, dep, als, soft string) {
		idx := &Index{Modules: map[string]*Module{}, Builtin: map[string]bool{}}
		if idx.readDep([]byte(dep)) != nil {
			return
		}
		idx.readAlias([]byte(als))
		idx.readSoftdep([]byte(soft))
		for n := range idx.Modules {
			idx.LoadOrder(n)
		}
	})
}

// Coldplug loads what the devices' modaliases ask for, once each, with
// dependencies first, and reports only what it newly loaded.
