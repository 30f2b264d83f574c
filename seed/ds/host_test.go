package ds

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
)

// TestRootTreeRefusesPipes: a seed directory's user-data that is a named
// pipe used to block the read, and PID 1 with it, forever.
func TestRootTreeRefusesPipes(t *testing.T) {
	dir := t.TempDir()
	seedDir := filepath.Join(dir, "var/lib/cloud/seed/nocloud")
	if err := os.MkdirAll(seedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(seedDir, "user-data"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	_, err = rootTree{root: root, dir: "/var/lib/cloud/seed/nocloud"}.ReadFile("user-data")
	if !errors.Is(err, seed.ErrNotRegular) {
		t.Errorf("ReadFile of a named pipe: %v, want %v", err, seed.ErrNotRegular)
	}
}

// A DMI field is read from sysfs once; the probes that ask again get the
// same answer, a missing or oversized field "".
func TestSysDMIReadsEachFieldOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	write("sys_vendor", "QEMU\n")
	write("product_uuid", string(make([]byte, 5000)))
	d := &SysDMI{Dir: dir}
	if v := d.Field("sys_vendor"); v != "QEMU" {
		t.Errorf("sys_vendor: %q", v)
	}
	os.Remove(filepath.Join(dir, "sys_vendor"))
	write("sys_vendor", "Amazon EC2\n")
	if v := d.Field("sys_vendor"); v != "QEMU" {
		t.Errorf("sys_vendor read again: %q, want the first answer", v)
	}
	for _, name := range []string{"product_uuid", "product_serial", "../sys_vendor"} {
		if v := d.Field(name); v != "" {
			t.Errorf("%s: %q, want \"\"", name, v)
		}
	}
}
