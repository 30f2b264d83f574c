package kmod

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newPlugTest(t *testing.T) (*Loader, *fakeKernel) {
	t.Helper()
	dir := writeTree(t, depmodTree)
	idx, err := ReadDepmod(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKernel{have: map[string]bool{}}
	return &Loader{Index: idx, Dir: dir, Kernel: k}, k
}

// The devices on sysfs's buses, the CPU and DMI are read; a device met
// twice loads once; what a device announced later needs is loaded as it
// comes; Settle waits for both.
func TestPlugScanAndEvents(t *testing.T) {
	l, k := newPlugTest(t)
	sys := writeTree(t, map[string]string{
		"bus/virtio/devices/virtio1/modalias":   "virtio:d00000001v00001AF4\n",
		"bus/virtio/devices/virtio2/modalias":   "virtio:d00000001v00001AF4\n",
		"bus/pci/devices/0000:00:05.0/modalias": "pci:v00008086d00007010sv*\n",
		"devices/system/cpu/modalias":           "cpu:type:x86,ven0000fam0006:feature:,0000\n",
		"devices/virtual/dmi/id/modalias":       "dmi:bvnSeaBIOS:\n",
		"bus/virtio/devices/virtio3/uevent":     "DRIVER=virtio_rng\n", // no modalias
		// A system bus is not read: were such a file there, nothing
		// would load it.
		"bus/memory/devices/memory0/modalias": "fs-ext4\n",
	})
	events := make(chan string, 4)
	p := l.NewPlug(events)
	if n := p.Scan(sys); n != 1 {
		t.Errorf("Scan started %d loads, want 1 (virtio_net, once for both devices; no ext4 from the memory bus)", n)
	}
	events <- "fs-ext4"
	loaded, errs, settled := p.Settle(20*time.Millisecond, 5*time.Second)
	if !settled || len(errs) > 0 {
		t.Fatalf("settled %v, errors %v", settled, errs)
	}
	if d := cmp.Diff([]string{"ext4", "virtio_net"}, loaded); d != "" {
		t.Errorf("loaded (-want +got):\n%s", d)
	}
	got := slices.Clone(k.loaded)
	slices.Sort(got)
	want := []string{"crc16", "crc32c_generic", "crc32c_intel", "ext4", "failover", "jbd2", "mbcache", "net_failover", "virtio_net"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kernel loads (-want +got):\n%s", d)
	}
	if n := p.Scan(sys); n != 0 {
		t.Errorf("a second scan started %d loads", n)
	}
	close(events)
}

// Lost events make the Plug read sysfs again; a stopped Plug starts
// nothing.
func TestPlugRescanAndStop(t *testing.T) {
	l, k := newPlugTest(t)
	sys := writeTree(t, map[string]string{"bus/platform/devices/serial8250/modalias": "platform:serial8250\n"})
	events := make(chan string)
	p := l.NewPlug(events)
	p.Scan(sys)
	writeFile(t, sys, "bus/virtio/devices/virtio1/modalias", "virtio:d00000001v00001AF4\n")
	events <- Rescan
	loaded, _, _ := p.Settle(20*time.Millisecond, 5*time.Second)
	if d := cmp.Diff([]string{"virtio_net"}, loaded); d != "" {
		t.Errorf("after a rescan (-want +got):\n%s", d)
	}
	p.Stop()
	if n := p.Add("fs-ext4"); n != 0 || k.Loaded("ext4") {
		t.Errorf("a stopped plug started %d loads", n)
	}
	close(events)
}

func TestAddedModalias(t *testing.T) {
	tests := []struct {
		msg   string
		alias string
		ok    bool
	}{
		{"add@/devices/pci0000:00/0000:00:04.0/virtio1\x00ACTION=add\x00DEVPATH=/devices/pci0000:00/0000:00:04.0/virtio1\x00SUBSYSTEM=virtio\x00MODALIAS=virtio:d00000002v00001AF4\x00SEQNUM=1000", "virtio:d00000002v00001AF4", true},
		{"bind@/devices/x\x00ACTION=bind\x00MODALIAS=virtio:d1", "", false},
		{"remove@/devices/x\x00ACTION=remove\x00MODALIAS=virtio:d1", "", false},
		{"add@/devices/virtual/block/loop0\x00ACTION=add\x00SUBSYSTEM=block", "", false},
		{"add@/x\x00MODALIAS=pci:v1", "", false}, // no ACTION
		{"libudev\x00\xfe\xed\xca\xfe", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		alias, ok := addedModalias([]byte(tt.msg))
		if alias != tt.alias || ok != tt.ok {
			t.Errorf("addedModalias(%q) = %q, %v; want %q, %v", tt.msg, alias, ok, tt.alias, tt.ok)
		}
	}
}

func FuzzAddedModalias(f *testing.F) {
	f.Add([]byte("add@/devices/x\x00ACTION=add\x00MODALIAS=virtio:d00000002v00001AF4\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if alias, ok := addedModalias(msg); ok && alias == "" {
			t.Fatal("an added device with an empty modalias")
		}
	})
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
