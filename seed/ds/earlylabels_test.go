package ds

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seedinit/seedinit/internal/devprobe"

	"github.com/seedinit/seedinit/internal/testenv"
)

// fakeBlock is a /sys/class/block and a /dev of plain files.
type fakeBlock struct {
	t             *testing.T
	sysBlock, dev string
}

func newFakeBlock(t *testing.T) *fakeBlock {
	return &fakeBlock{t: t, sysBlock: t.TempDir(), dev: t.TempDir()}
}

// add makes the device's sysfs entry (number and size) and, with
// content, its node.
func (b *fakeBlock) add(name, devno, size string, content []byte) {
	b.t.Helper()
	dir := filepath.Join(b.sysBlock, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	// size before dev: the kernel shows both at once, and a device is
	// taken for there once its number is.
	for _, f := range [][2]string{{"size", size}, {"dev", devno}} {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]+"\n"), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	if content != nil {
		b.node(name, content)
	}
}

func (b *fakeBlock) node(name string, content []byte) {
	b.t.Helper()
	if err := os.WriteFile(filepath.Join(b.dev, name), content, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// labelled is an ISO9660 primary volume descriptor with label, all that
// seed.ReadLabel reads.
func labelled(label string) []byte {
	img := make([]byte, 17*2048)
	pvd := img[16*2048:]
	pvd[0] = 1
	copy(pvd[1:6], "CD001")
	copy(pvd[40:72], label+"                                ")
	return img
}

// waitRead waits until e has a sure answer for name.
func waitRead(t *testing.T, e *EarlyLabels, b *fakeBlock, name string) labelProbe {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if id, ok := readDeviceID(b.sysBlock, name); ok {
			if p, ok := e.lookup(name, id); ok {
				return p
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was not read within 10 s", name)
	return labelProbe{}
}

func labels(t *testing.T, d *SysDevices) map[string]string {
	t.Helper()
	devs, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, bd := range devs {
		out[filepath.Base(bd.Path)] = bd.Label
	}
	return out
}

// A device is read when it appears, also after the start, and the search
// takes that answer instead of reading the device again.
func TestEarlyLabelsReadDevicesAsTheyAppear(t *testing.T) {
	b := newFakeBlock(t)
	b.add("vda", "253:0", "20971520", make([]byte, 64<<10))
	e := StartEarlyLabels(b.sysBlock, b.dev)
	defer e.Stop()
	if p := waitRead(t, e, b, "vda"); p.found {
		t.Errorf("vda, a disk without a seed label: %+v", p)
	}
	b.add("vdb", "253:16", "2048", labelled("cidata"))
	if p := waitRead(t, e, b, "vdb"); !p.found || p.bd.Label != "cidata" || p.bd.FSType != "iso9660" {
		t.Errorf("vdb read early: %+v, want the cidata ISO", p)
	}
	e.Stop()
	// The nodes now say otherwise: the answers read early are what the
	// search sees, so nothing was opened again.
	b.node("vda", labelled("config-2"))
	b.node("vdb", make([]byte, 64<<10))
	got := labels(t, &SysDevices{SysBlock: b.sysBlock, Dev: b.dev, Early: e})
	if len(got) != 1 || got["vdb"] != "cidata" {
		t.Errorf("labels after the early read: %v, want vdb=cidata only", got)
	}
}

// What changed or came after the early reads is read by the search: a
// device with another number or size, a device added after Stop, a node
// that was not there yet.
func TestEarlyLabelsSearchReadsWhatTheyMissed(t *testing.T) {
	b := newFakeBlock(t)
	b.add("sr0", "11:0", "0", make([]byte, 0))
	b.add("vdb", "253:16", "2048", labelled("cidata"))
	b.add("vdc", "253:32", "2048", nil) // no node yet
	e := StartEarlyLabels(b.sysBlock, b.dev)
	waitRead(t, e, b, "sr0")
	waitRead(t, e, b, "vdb")
	e.Stop()
	vdc, _ := readDeviceID(b.sysBlock, "vdc")
	if p, ok := e.lookup("vdc", vdc); ok {
		t.Fatalf("vdc, whose node was missing, has a sure answer: %+v", p)
	}
	// A disc in the drive (its size changed), vdb replaced by another
	// disk under the same name, vdc's node made, vdd new.
	b.add("sr0", "11:0", "1024", labelled("config-2"))
	b.add("vdb", "253:17", "2048", make([]byte, 64<<10))
	b.node("vdc", labelled("CIDATA"))
	b.add("vdd", "253:48", "2048", labelled("cidata"))
	got := labels(t, &SysDevices{SysBlock: b.sysBlock, Dev: b.dev, Early: e})
	want := map[string]string{"sr0": "config-2", "vdc": "CIDATA", "vdd": "cidata"}
	if len(got) != len(want) {
		t.Fatalf("labels: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("labels: %v, want %v", got, want)
		}
	}
}

func TestProbeLabelSureness(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name        string
		path        string
		found, sure bool
	}{
		{"labelled", write("iso", labelled("cidata")), true, true},
		{"no filesystem seedinit reads", write("zeros", make([]byte, 64<<10)), false, true},
		{"empty (size 0)", write("empty", nil), false, true},
		{"shorter than a boot sector", write("short", make([]byte, 100)), false, true},
		{"no node", filepath.Join(dir, "missing"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := probeLabel(tc.path)
			if p.found != tc.found || p.sure != tc.sure {
				t.Errorf("probeLabel: found %v sure %v, want %v %v", p.found, p.sure, tc.found, tc.sure)
			}
		})
	}
}

func TestEarlyLabelsStopTwiceAndNil(t *testing.T) {
	var none *EarlyLabels
	none.Stop()
	if _, ok := none.lookup("vda", deviceID{}); ok {
		t.Error("a nil EarlyLabels answered")
	}
	e := StartEarlyLabels(t.TempDir(), t.TempDir())
	e.Stop()
	e.Stop()
}

// A device whose read never returns held Stop, and with it PID 1's
// search, for as long as the read: Stop must come back within its bound
// and leave the read behind.
func TestEarlyLabelsStopDoesNotWaitForAStalledDevice(t *testing.T) {
	b := newFakeBlock(t)
	b.add("sr0", "11:0", "2048", make([]byte, 64<<10))
	reading := make(chan struct{})
	probeLabelFunc = func(p string) labelProbe {
		close(reading)
		time.Sleep(time.Hour)
		return labelProbe{}
	}
	t.Cleanup(func() { stallDevice("") })
	e := StartEarlyLabels(b.sysBlock, b.dev)
	<-reading
	stopped := make(chan struct{})
	go func() { e.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		// Not a timing claim: a Stop that waits for the read never ends.
		t.Fatal("Stop still waits for a read that never returns")
	}
}

// In PID 1 the search reads through helpers it abandons (devprobe): a
// device whose read never returns costs the search devprobe.Bound, and
// the seed on another device is still found.
func TestSearchGoesOnWithoutAStalledDevice(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.Skipf(t, "no path to this test binary: %v", err)
	}
	b := newFakeBlock(t)
	b.add("sr0", "11:0", "2048", make([]byte, 64<<10))
	b.add("vdb", "253:16", "2048", labelled("cidata"))
	t.Setenv(stalledEnv, "sr0") // for the helpers
	var abandoned []any
	devprobe.Enable(exe, func(msg string, args ...any) { abandoned = append(abandoned, args...) })
	t.Cleanup(devprobe.Disable)
	old := devprobe.Bound
	devprobe.Bound = time.Second
	t.Cleanup(func() { devprobe.Bound = old })
	got := labels(t, &SysDevices{SysBlock: b.sysBlock, Dev: b.dev})
	if len(got) != 1 || got["vdb"] != "cidata" {
		t.Errorf("labels with sr0 stalled: %v, want vdb=cidata", got)
	}
	if len(abandoned) < 2 || abandoned[1] != "sr0" {
		t.Errorf("the log heard %q, want sr0 abandoned", abandoned)
	}
	if s := devprobe.Stalled(); len(s) != 1 || s[0] != "sr0" {
		t.Errorf("devices left out %q, want sr0", s)
	}
}
