package disk

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

// blkidExport is blkid's view of an image, the oracle for Probe.
func blkidExport(t *testing.T, path string) FS {
	t.Helper()
	out, err := exec.Command("blkid", "-p", "-o", "export", path).Output()
	if err != nil {
		t.Fatalf("blkid %s: %v", path, err)
	}
	var fs FS
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "TYPE":
			fs.Type = v
		case "LABEL":
			fs.Label = v
		case "UUID":
			fs.UUID = v
		}
	}
	return fs
}

// TestProbeMatchesBlkid makes each filesystem with its own mkfs and
// compares Probe with blkid.
func TestProbeMatchesBlkid(t *testing.T) {
	needTools(t, "blkid")
	tests := []struct {
		name string
		size int64
		mkfs func(path string) *exec.Cmd
	}{
		{"ext4", 16 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.ext4", "-q", "-F", "-L", "cloudimg-rootfs", p) }},
		{"ext2", 16 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.ext2", "-q", "-F", "-L", "boot", p) }},
		{"xfs", 320 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.xfs", "-q", "-f", "-L", "root", p) }},
		{"btrfs", 128 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.btrfs", "-q", "-f", "-L", "data", p) }},
		{"vfat", 64 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.vfat", "-n", "CONFIG-2", p) }},
		{"vfat16", 16 * mib, func(p string) *exec.Cmd { return exec.Command("mkfs.vfat", "-F", "16", "-n", "CIDATA", p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempImage(t)
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			truncate(t, path, tt.size)
			cmd := tt.mkfs(path)
			if _, err := exec.LookPath(cmd.Path); err != nil {
				testenv.Skipf(t, "%s not installed", cmd.Path)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := Probe(f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(blkidExport(t, path), got); diff != "" {
				t.Errorf("(-blkid +Probe):\n%s", diff)
			}
		})
	}
	t.Run("iso9660", func(t *testing.T) {
		needTools(t, "genisoimage")
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "meta-data"), []byte("instance-id: i-1\n"), 0o644)
		path := filepath.Join(t.TempDir(), "seed.iso")
		if out, err := exec.Command("genisoimage", "-quiet", "-o", path, "-V", "cidata", "-r", "-J", dir).CombinedOutput(); err != nil {
			t.Fatalf("genisoimage: %v\n%s", err, out)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := Probe(f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(blkidExport(t, path), got); diff != "" {
			t.Errorf("(-blkid +Probe):\n%s", diff)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		if _, err := Probe(bytes.NewReader(make([]byte, 1<<20))); err != ErrUnknownFS {
			t.Errorf("Probe(zeros) = %v, want ErrUnknownFS", err)
		}
	})
}
