package boot

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seedinit/seedinit/internal/disktest"
	"github.com/seedinit/seedinit/internal/rootfs"

	"github.com/seedinit/seedinit/internal/testenv"
)

const sampleMountInfo = `22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw
25 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 25 254:2 / /sysroot rw,relatime - ext4 /dev/vdb1 rw
31 30 254:3 / /sysroot/var rw - ext4 /dev/vdb2 rw
32 31 254:3 /log /sysroot/var/log rw - ext4 /dev/vdb3 rw
33 30 0:5 / /sysroot/dev rw - devtmpfs devtmpfs rw
34 33 0:6 / /sysroot/dev/pts rw - devpts devpts rw
35 30 0:7 / /sysroot/my\040data rw - ext4 LABEL=a\040b rw
36 25 0:8 / /run rw - tmpfs tmpfs rw
`

func TestParseMountInfoAndMountsBelow(t *testing.T) {
	table, err := parseMountInfo(strings.NewReader(sampleMountInfo))
	if err != nil {
		t.Fatal(err)
	}
	if table[7].Point != "/sysroot/my data" || table[7].Source != "LABEL=a b" {
		t.Errorf("escapes not undone: %+v", table[7])
	}
	var got []string
	for _, m := range mountsBelow(table, 30) {
		got = append(got, m.Point)
	}
	// Deepest first: /var/log before /var, /dev/pts before /dev.
	want := []string{"/sysroot/dev/pts", "/sysroot/var/log", "/sysroot/my data", "/sysroot/dev", "/sysroot/var"}
	if !slices.Equal(got, want) {
		t.Errorf("mountsBelow = %q\nwant %q", got, want)
	}
	if _, err := parseMountInfo(strings.NewReader("garbage line\n")); err == nil {
		t.Error("a line that is not mountinfo's format was accepted")
	}
}

func TestParseFstabAndWhatPID1Mounts(t *testing.T) {
	text := `# /etc/fstab: static file system information.
UUID=0a1b	/	ext4	errors=remount-ro	0	1
LABEL=var	/var	ext4	defaults,noatime	0	2
PARTUUID=5eed-3	/home	xfs	defaults,nofail	0	2
/dev/vdb1	/var/log	ext4	defaults	0	2
/dev/vdc1	/data	ext4	defaults	0	2
/dev/vdd1	/srv	ext4	noauto	0	2
server:/export	/home/shared	nfs	defaults	0	0
//nas/share	/opt/share	cifs	defaults	0	0
/dev/vde1	/usr/local	ext4	defaults,_netdev	0	2
tmpfs	/var/tmp	tmpfs	defaults	0	0
/swapfile	none	swap	sw	0	0
/srv/home	/home/bound	none	bind	0	0
/dev/sr0	/media/cdrom\040drive	iso9660	user,noauto	0	0
broken-line
/dev/vdf1	/opt	ext4
`
	entries, errs := parseFstab(text)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 15") {
		t.Errorf("errors %v, want one naming line 15", errs)
	}
	var mounted []string
	reasons := map[string]string{}
	for _, e := range entries {
		if why := e.skipReason(); why == "" {
			mounted = append(mounted, e.File)
		} else {
			reasons[e.File] = why
		}
	}
	want := []string{"/var", "/home", "/var/log", "/home/bound", "/opt"}
	if !slices.Equal(mounted, want) {
		t.Errorf("PID 1 mounts %q, want %q (skipped: %v)", mounted, want, reasons)
	}
	for file, why := range map[string]string{
		"/": "not where provisioning writes", "/data": "not where provisioning writes", "/srv": "noauto",
		"/home/shared": "a network filesystem", "/opt/share": "a network filesystem", "/usr/local": "a network filesystem",
		"/var/tmp": "not a filesystem on a disk", "none": "not where provisioning writes",
		"/media/cdrom drive": "not where provisioning writes",
	} {
		if reasons[file] != why {
			t.Errorf("%s skipped for %q, want %q", file, reasons[file], why)
		}
	}
	if entries[len(entries)-1].Options != "defaults" {
		t.Errorf("an entry without options: %q, want defaults", entries[len(entries)-1].Options)
	}
}

func TestMountArgs(t *testing.T) {
	for _, tc := range []struct {
		opts  string
		flags uintptr
		data  string
	}{
		{"defaults", 0, ""},
		{"defaults,noatime,nofail,x-systemd.device-timeout=5,comment=cloudconfig", unix.MS_NOATIME, ""},
		{"ro,nosuid,nodev,errors=remount-ro,data=ordered", unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV, "errors=remount-ro,data=ordered"},
		{"ro,rw", 0, ""},
		{"noexec,exec,subvol=@home,compress=zstd", 0, "subvol=@home,compress=zstd"},
		{"rbind", unix.MS_BIND | unix.MS_REC, ""},
	} {
		flags, data := mountArgs(tc.opts)
		if flags != tc.flags || data != tc.data {
			t.Errorf("mountArgs(%q) = %#x, %q; want %#x, %q", tc.opts, flags, data, tc.flags, tc.data)
		}
	}
}

// The whole path on real filesystems: a target whose fstab puts /var on
// a labelled ext4 and /home on one found by UUID; PID 1 mounts both where
// the target says (through a symlinked /home too), the writes land on
// them, and releasing the target takes away exactly what it mounted.
func TestMountTargetFilesystemsOnLoopDevices(t *testing.T) {
	mountAndReleaseOnLoopDevices(t)
}

// The same on a kernel older than 5.8, without statx's mount id (the
// 4.19 and 5.4 of appliances): the mounts PID 1 made were never released.
func TestMountTargetFilesystemsWithoutStatxMountID(t *testing.T) {
	olderKernel(t, errNoStatxMountID)
	mountAndReleaseOnLoopDevices(t)
}

func mountAndReleaseOnLoopDevices(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root: loop devices and mount")
	}
	for _, tool := range []string{"mkfs.ext4", "losetup", "blkid"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "needs %s", tool)
		}
	}
	dir := t.TempDir()
	loop := func(name, label string) (dev, uuid string) {
		img := filepath.Join(dir, name+".img")
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", label, img, "16M").CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v\n%s", err, out)
		}
		dev = disktest.AttachLoop(t, img)
		// -p: read the device itself. blkid's cache (/run/blkid) answered
		// with the UUID of the filesystem the last run had on this loop
		// device, every other run.
		u, err := exec.Command("blkid", "-p", "-s", "UUID", "-o", "value", dev).Output()
		if err != nil {
			t.Fatal(err)
		}
		return dev, strings.TrimSpace(string(u))
	}
	// A label no other device on this machine has.
	varLabel := "sdi-var-" + strconv.Itoa(os.Getpid()%100000)
	loop("var", varLabel)
	homeDev, homeUUID := loop("home", "sdi-home")
	rootDir := filepath.Join(dir, "root")
	for _, d := range []string{"etc", "var", "data/home"} {
		if err := os.MkdirAll(filepath.Join(rootDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/data/home", filepath.Join(rootDir, "home")); err != nil {
		t.Fatal(err)
	}
	fstab := "LABEL=" + varLabel + " /var ext4 defaults 0 2\n" +
		"UUID=" + homeUUID + " /home auto defaults 0 2\n" +
		"LABEL=not-there /opt ext4 defaults,nofail 0 2\n"
	if err := os.WriteFile(filepath.Join(rootDir, "etc/fstab"), []byte(fstab), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's root dir is not a mount of its own: make it one, as
	// /sysroot is, before opening it.
	if err := unix.Mount(rootDir, rootDir, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(rootDir, unix.MNT_DETACH) })
	root, err := rootfs.Open(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	p := &PID1{Mounter: SysMounter{}, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	before, err := takeMountSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.mountTargetFilesystems(root); err != nil {
		t.Fatalf("mountTargetFilesystems: %v", err)
	}
	for _, d := range []string{"var", "data/home"} {
		if !isMountPoint(filepath.Join(rootDir, d)) {
			t.Errorf("/%s is not mounted", d)
		}
	}
	if err := root.WriteFile("/home/admin/.ssh/authorized_keys", []byte("ssh-ed25519 AAAA key\n"), 0o600, rootfs.KeepOwner); err != nil {
		t.Fatal(err)
	}
	// Mounting again (a second call, a real root the kernel mounted
	// things on) changes nothing.
	if err := p.mountTargetFilesystems(root); err != nil {
		t.Fatalf("second mountTargetFilesystems: %v", err)
	}
	res := unmountNewBelow(rootDir, before, ownedBy(nil), p.Log)
	if len(res.errs) > 0 || len(res.kept) > 0 {
		t.Fatalf("release: kept %q, errors %v", res.kept, res.errs)
	}
	taken := res.taken
	slices.Sort(taken)
	if want := []string{"/data/home", "/var"}; !slices.Equal(taken, want) {
		t.Errorf("released %q, want %q", taken, want)
	}
	if _, err := os.Stat(filepath.Join(rootDir, "data/home/admin")); err == nil {
		t.Error("the key was written under the mount point, not on the /home filesystem")
	}
	// On the filesystem itself, where the real init will find it.
	m := filepath.Join(dir, "check")
	os.Mkdir(m, 0o755)
	if err := unix.Mount(homeDev, m, "ext4", unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(m, 0)
	if _, err := os.Stat(filepath.Join(m, "admin/.ssh/authorized_keys")); err != nil {
		t.Errorf("the key is not on the /home filesystem: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
