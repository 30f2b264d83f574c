package disk

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/disktest"

	"github.com/seedinit/seedinit/internal/testenv"
)

func needRootAndLoop(t testing.TB) {
	t.Helper()
	disktest.NeedLoop(t)
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// attachLoop attaches img to a loop device with no partitions; the
// partitions the test adds are gone when it has run.
func attachLoop(t *testing.T, img string) string {
	t.Helper()
	return disktest.AttachLoop(t, img)
}

// addPartition adds partition pno over [start, start+size) sectors with
// BLKPG, since this kernel does not scan partition tables itself.
func addPartition(t *testing.T, loop string, pno int, start, size uint64) string {
	t.Helper()
	f, err := os.OpenFile(loop, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := addKernelPartition(f, pno, int64(start*512), int64(size*512)); err != nil {
		t.Fatalf("BLKPG_ADD_PARTITION %s %d: %v", loop, pno, err)
	}
	name := PartitionName(filepath.Base(loop), pno)
	b, err := DefaultHost.BlockDeviceByName(name)
	if err != nil {
		t.Fatal(err)
	}
	node, done, err := DefaultHost.Node(name, b.Major, b.Minor)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	return node
}

func mountFS(t *testing.T, node, fstype string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount(node, dir, fstype, 0, ""); err != nil {
		t.Fatalf("mount %s (%s): %v", node, fstype, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil && err != unix.EINVAL {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// writeFiles fills dir with random files and returns their checksums.
func writeFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	for i := range 8 {
		b := make([]byte, (i+1)*300*kib)
		rand.Read(b)
		name := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		sums[name] = sha256.Sum256(b)
	}
	unix.Sync()
	return sums
}

func checkFiles(t *testing.T, sums map[string][32]byte) {
	t.Helper()
	for name, want := range sums {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(b) != want {
			t.Errorf("%s changed during the grow", name)
		}
	}
}

// TestGrowLive grows partitions on loop devices while their filesystems
// are mounted, then checks the filesystems and the tables with their own
// tools. Packages: util-linux (losetup), xfsprogs, btrfs-progs,
// e2fsprogs, gdisk (sgdisk -v).
func TestGrowLive(t *testing.T) {
	needRootAndLoop(t)
	const start = 2048
	tests := []struct {
		name    string
		table   string // gpt, dos, logical
		fstype  string
		mkfs    []string
		check   []string
		size    uint64 // partition size in sectors
		wantErr string
		// damage runs on the image before it is attached.
		damage func(t *testing.T, path string)
	}{
		{name: "gpt xfs", table: "gpt", fstype: "xfs", mkfs: []string{"mkfs.xfs", "-q", "-f"}, check: []string{"xfs_repair", "-n"}, size: 320 * mib / 512},
		{name: "gpt xfs, primary entries damaged", table: "gpt", fstype: "xfs", mkfs: []string{"mkfs.xfs", "-q", "-f"}, check: []string{"xfs_repair", "-n"}, size: 320 * mib / 512,
			damage: xorAt(func(int64) int64 { return 2*512 + 56 })},
		{name: "gpt btrfs", table: "gpt", fstype: "btrfs", mkfs: []string{"mkfs.btrfs", "-q", "-f"}, check: []string{"btrfs", "check"}, size: 160 * mib / 512},
		{name: "dos btrfs", table: "dos", fstype: "btrfs", mkfs: []string{"mkfs.btrfs", "-q", "-f"}, check: []string{"btrfs", "check"}, size: 160 * mib / 512},
		{name: "logical xfs", table: "logical", fstype: "xfs", mkfs: []string{"mkfs.xfs", "-q", "-f"}, check: []string{"xfs_repair", "-n"}, size: 320 * mib / 512},
		{name: "gpt ext4", table: "gpt", fstype: "ext4", mkfs: []string{"mkfs.ext4", "-q", "-F"}, check: []string{"e2fsck", "-fn"}, size: 64 * mib / 512,
			wantErr: "CAP_SYS_RESOURCE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, tool := range []string{tt.mkfs[0], tt.check[0]} {
				if _, err := exec.LookPath(tool); err != nil {
					testenv.Skipf(t, "%s is not installed", tool)
				}
			}
			img := tempImage(t)
			pno, pstart := 1, uint64(start)
			initial := int64(start+tt.size+34) * 512
			switch tt.table {
			case "gpt":
				writeGPT(t, img, initial, 512, []testPart{{start, start + tt.size - 1, "root"}})
			case "dos":
				writeMBR(t, img, initial, []mbrPart{{0x83, start, uint32(tt.size)}}, nil)
			case "logical":
				pno, pstart = 5, 2*start
				initial += start * 512
				writeMBR(t, img, initial, []mbrPart{{0x05, start, uint32(start + tt.size)}}, []mbrPart{{0x83, 2 * start, uint32(tt.size)}})
			}
			if tt.damage != nil {
				tt.damage(t, img)
			}
			loop := attachLoop(t, img)
			node := addPartition(t, loop, pno, pstart, tt.size)
			run(t, tt.mkfs[0], append(tt.mkfs[1:], node)...)
			mnt := mountFS(t, node, tt.fstype)
			sums := writeFiles(t, mnt)

			truncate(t, img, initial+512*mib)
			run(t, "losetup", "-c", loop)

			res, err := growEntry(DefaultHost, mnt)
			if err != nil {
				t.Fatalf("growpart %s: %v", mnt, err)
			}
			if !res.Changed || !strings.HasPrefix(res.String(), "CHANGED: partition=") {
				t.Fatalf("growpart: %s", res)
			}
			if tt.damage != nil && len(res.Repaired) == 0 {
				t.Errorf("the damaged table was grown without a repair reported")
			}
			if !strings.Contains(res.Kernel, "kernel told") {
				t.Errorf("kernel note %q, want it told", res.Kernel)
			}
			b, err := DefaultHost.BlockDeviceByName(PartitionName(filepath.Base(loop), pno))
			if err != nil {
				t.Fatal(err)
			}
			if b.Size != res.NewSize {
				t.Errorf("kernel sees %d sectors, the table %d", b.Size, res.NewSize)
			}
			again, err := growEntry(DefaultHost, mnt)
			if err != nil || again.Changed {
				t.Errorf("second growpart: %s, %v", again, err)
			}

			fsres, err := GrowFS(mnt)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("GrowFS error %v, want one naming %s", err, tt.wantErr)
				}
				t.Logf("ext4 as expected in this sandbox: %v", err)
			} else {
				if err != nil {
					t.Fatalf("GrowFS: %v", err)
				}
				if !fsres.Changed || fsres.NewBytes <= fsres.OldBytes {
					t.Errorf("GrowFS: %s", fsres)
				}
				if again, err := GrowFS(mnt); err != nil || again.Changed {
					t.Errorf("second GrowFS: %s, %v", again, err)
				}
			}
			checkFiles(t, sums)
			if err := unix.Unmount(mnt, 0); err != nil {
				t.Fatal(err)
			}
			run(t, tt.check[0], append(tt.check[1:], node)...)
			if tt.table == "gpt" {
				if _, err := exec.LookPath("sgdisk"); err == nil {
					if out := run(t, "sgdisk", "-v", loop); !strings.Contains(out, "No problems found") {
						t.Errorf("sgdisk -v %s:\n%s", loop, out)
					}
				}
			} else if _, err := exec.LookPath("sfdisk"); err == nil {
				run(t, "sfdisk", "--verify", loop)
			}
		})
	}
}
