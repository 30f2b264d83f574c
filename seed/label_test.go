package seed

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// Seed disks made by the tools clouds use (genisoimage, mkfs.vfat) are
// recognised by label without mounting.
func TestReadLabelOfRealImages(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "meta-data"), []byte("instance-id: x\n"), 0o644)
	tests := []struct {
		name, tool string
		make       func(img string) *exec.Cmd
		wantType   string
		wantLabel  string
	}{
		{"iso cidata", "genisoimage", func(img string) *exec.Cmd {
			return exec.Command("genisoimage", "-quiet", "-output", img, "-volid", "cidata", "-joliet", "-rock", dir)
		}, "iso9660", "cidata"},
		{"iso config-2", "genisoimage", func(img string) *exec.Cmd {
			return exec.Command("genisoimage", "-quiet", "-output", img, "-volid", "config-2", "-joliet", "-rock", dir)
		}, "iso9660", "config-2"},
		{"vfat CIDATA", "mkfs.vfat", func(img string) *exec.Cmd {
			os.WriteFile(img, make([]byte, 0), 0o644)
			os.Truncate(img, 4<<20)
			return exec.Command("mkfs.vfat", "-n", "CIDATA", img)
		}, "vfat", "CIDATA"},
		{"vfat32 config-2", "mkfs.vfat", func(img string) *exec.Cmd {
			os.WriteFile(img, make([]byte, 0), 0o644)
			os.Truncate(img, 64<<20)
			return exec.Command("mkfs.vfat", "-F", "32", "-n", "config-2", img)
		}, "vfat", "config-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath(tt.tool); err != nil {
				testenv.Skipf(t, "%s not installed (scripts/install-deps installs it)", tt.tool)
			}
			img := filepath.Join(t.TempDir(), "seed.img")
			if out, err := tt.make(img).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tt.tool, err, out)
			}
			f, err := os.Open(img)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			typ, label, err := ReadLabel(f)
			if err != nil || typ != tt.wantType || label != tt.wantLabel {
				t.Errorf("ReadLabel = %q, %q, %v; want %q, %q", typ, label, err, tt.wantType, tt.wantLabel)
			}
		})
	}
	typ, label, err := ReadLabel(bytes.NewReader(make([]byte, 100)))
	if typ != "" || label != "" || err == nil {
		t.Errorf("a 100-byte device: %q %q %v, want a short-read error", typ, label, err)
	}
}

func FuzzReadLabel(f *testing.F) {
	f.Add(make([]byte, 512))
	iso := make([]byte, 17*2048)
	copy(iso[16*2048:], "\x01CD001")
	f.Add(iso)
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadLabel(bytes.NewReader(b))
	})
}
