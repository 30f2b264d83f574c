package mounts

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeDevices makes a host tree under a temp dir with the given /dev
// nodes (plain files) and /sys/block entries ("sdb" or "sdb/sdb1").
func fakeDevices(t testing.TB, dev []string, sysBlock []string) HostDevices {
	t.Helper()
	dir := t.TempDir()
	for _, d := range dev {
		p := filepath.Join(dir, "dev", d)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sysBlock {
		if err := os.MkdirAll(filepath.Join(dir, "sys", "block", s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return HostDevices{Dir: dir}
}

// standardDevices: sdb with one partition, vdc without partitions, xvdd
// with two, nvme0n1 with p1.
func standardDevices(t testing.TB) HostDevices {
	return fakeDevices(t,
		[]string{"sdb", "sdb1", "vdc", "xvdd", "xvdd1", "xvdd2", "nvme0n1", "nvme0n1p1"},
		[]string{"sdb/sdb1", "vdc", "xvdd/xvdd1", "xvdd/xvdd2", "nvme0n1/nvme0n1p1"})
}
