package mounts

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

func TestHumanToBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"10M", 10 << 20, false}, {".5G", 1 << 29, false}, {"2G", 2 << 30, false},
		{"512MB", 512 << 20, false}, {"1024", 1024, false}, {"1024B", 1024, false},
		{"1T", 1 << 40, false}, {"3K", 3072, false}, {"1.5K", 1536, false},
		{"-1M", 0, true}, {"abc", 0, true}, {"", 0, true}, {"M", 0, true}, {"nanG", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := HumanToBytes(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("HumanToBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSuggestedSwapSize(t *testing.T) {
	tests := []struct {
		name               string
		mem, maxSize, free int64
		want               int64
	}{
		{"small memory, no disk info", 1 * gib, 0, -1, 1 * gib},
		{"8G memory", 8 * gib, 0, -1, 4 * gib},
		{"64G memory", 64 * gib, 0, -1, 8 * gib},
		{"maxsize caps", 2 * gib, 10 * mib, -1, 10 * mib},
		{"quarter of free space", 2 * gib, 0, 4 * gib, 1 * gib},
		{"maxsize over 90% of free", 2 * gib, 2 * gib, 1 * gib, 966367641},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SuggestedSwapSize(tt.mem, tt.maxSize, tt.free); got != tt.want {
				t.Errorf("SuggestedSwapSize = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSwapHeaderLayout(t *testing.T) {
	uuid := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	page, err := SwapHeader(4096, 40960+100, uuid, "swp")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(page[4096-10:]); got != "SWAPSPACE2" {
		t.Errorf("signature = %q", got)
	}
	if v, last := binary.NativeEndian.Uint32(page[1024:]), binary.NativeEndian.Uint32(page[1028:]); v != 1 || last != 9 {
		t.Errorf("version, last_page = %d, %d; want 1, 9", v, last)
	}
	if !bytes.Equal(page[1036:1052], uuid[:]) || string(page[1052:1055]) != "swp" {
		t.Errorf("uuid/label not at 1036/1052")
	}
	for _, bad := range []struct {
		page int
		size int64
	}{{4096, 4096 * 9}, {1000, 1 << 20}, {4096 * 3, 1 << 20}} {
		if _, err := SwapHeader(bad.page, bad.size, uuid, ""); err == nil {
			t.Errorf("SwapHeader(%d, %d) accepted", bad.page, bad.size)
		}
	}
}

// TestSwapFileIsValid proves the header with util-linux's own readers.
func TestSwapFileIsValid(t *testing.T) {
	for _, tool := range []string{"blkid", "swaplabel"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skipf(t, "util-linux %s not installed", tool)
		}
	}
	env := applytest.NewEnv(t, apply.Config{"swap": map[string]any{"filename": "/var/swap/file", "size": "16M"}})
	if err := Run(context.Background(), env.Env, Host{Devices: standardDevices(t)}); err != nil {
		t.Fatal(err)
	}
	hp, err := env.Root.HostPath("/var/swap/file")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(hp)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 16<<20 || fi.Mode().Perm() != 0o600 {
		t.Errorf("swap file size %d mode %v, want %d 0600", fi.Size(), fi.Mode().Perm(), 16<<20)
	}
	out, err := exec.Command("blkid", "-p", "-o", "export", hp).CombinedOutput()
	if err != nil {
		t.Fatalf("blkid -p: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "TYPE=swap") || !strings.Contains(string(out), "VERSION=1") {
		t.Errorf("blkid -p does not see a version-1 swap area:\n%s", out)
	}
	out, err = exec.Command("swaplabel", hp).CombinedOutput()
	if err != nil {
		t.Fatalf("swaplabel: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "UUID:") {
		t.Errorf("swaplabel shows no UUID:\n%s", out)
	}
	fstab, _ := env.Root.ReadFile(FstabPath)
	if want := "/var/swap/file\tnone\tswap\tsw,comment=cloudconfig\t0\t0\n"; string(fstab) != want {
		t.Errorf("fstab = %q, want %q", fstab, want)
	}
}

func TestRunConvergesAndActivates(t *testing.T) {
	const cfgYAML = `mounts: [[vdc, /srv/data], ["LABEL=logs", /var/log/app, ext4, "defaults,noatime"]]
swap: {filename: /swapfile, size: auto, maxsize: 8M}`
	doc, err := yaml11.Load([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	devs := standardDevices(t)
	proc := map[string]string{
		"meminfo":        "MemTotal:        2048000 kB\nMemFree: 1 kB\n",
		"swaps":          "Filename\tType\tSize\tUsed\tPriority\n",
		"self/mountinfo": "22 1 0:21 / / rw - ext4 /dev/vda1 rw\n30 22 0:30 / /srv/data rw - ext4 /dev/vdc rw\n",
	}
	host := Host{Devices: devs, ReadProc: func(n string) ([]byte, error) {
		if s, ok := proc[n]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}}
	const kept = "UUID=1 / ext4 defaults 0 1\n/dev/old /old auto defaults,comment=cloudconfig 0 2\n"
	want := "UUID=1 / ext4 defaults 0 1\n" +
		"/dev/vdc\t/srv/data\tauto\tdefaults,nobootwait,comment=cloudconfig\t0\t2\n" +
		"LABEL=logs\t/var/log/app\text4\tdefaults,noatime,comment=cloudconfig\t0\t2\n" +
		"/swapfile\tnone\tswap\tsw,comment=cloudconfig\t0\t0\n"
	for run, wantCmds := range [][]string{{"swapon -a", "mount -a"}, {"swapon -a", "mount -a"}} {
		t.Run(fmt.Sprint("run ", run), func(t *testing.T) {
			env := applytest.NewEnvAt(t, dir, apply.Config(doc.(map[string]any)))
			env.Sys.IsLive = true
			if run == 0 {
				env.Root.WriteFile(FstabPath, []byte(kept), 0o644, rootfs.Owner{})
			}
			if err := Run(context.Background(), env.Env, host); err != nil {
				t.Fatal(err)
			}
			got, _ := env.Root.ReadFile(FstabPath)
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("fstab (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCmds, env.Sys.Ran()); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			for _, d := range []string{"/srv/data", "/var/log/app"} {
				if fi, err := env.Root.Stat(d); err != nil || !fi.IsDir() {
					t.Errorf("mount point %s not made: %v", d, err)
				}
			}
			if fi, err := env.Root.Stat("/swapfile"); err != nil || fi.Size() != 8<<20 {
				t.Errorf("swapfile: %v, size %v", err, fi)
			}
		})
	}
}

func TestRunOfflineDoesNotActivate(t *testing.T) {
	env := applytest.NewEnv(t, apply.Config{"mounts": []any{[]any{"vdc", "/data"}}})
	if err := Run(context.Background(), env.Env, Host{Devices: standardDevices(t)}); err != nil {
		t.Fatal(err)
	}
	if ran := env.Sys.Ran(); len(ran) != 0 {
		t.Errorf("offline run ran %v", ran)
	}
	got, _ := env.Root.ReadFile(FstabPath)
	if want := "/dev/vdc\t/data\tauto\tdefaults,nobootwait,comment=cloudconfig\t0\t2\n"; string(got) != want {
		t.Errorf("fstab = %q, want %q", got, want)
	}
}

func TestActivationFailureWarns(t *testing.T) {
	env := applytest.NewEnv(t, apply.Config{"mounts": []any{[]any{"vdc", "/data"}}})
	env.Sys.IsLive = true
	env.Sys.RunFunc = func(apply.Command) error { return fmt.Errorf("exit status 32") }
	if err := Run(context.Background(), env.Env, Host{Devices: standardDevices(t), ReadProc: func(string) ([]byte, error) { return nil, os.ErrNotExist }}); err != nil {
		t.Fatalf("Run = %v, want warnings only", err)
	}
	if len(env.Warnings()) != 1 || !strings.Contains(env.Warnings()[0], "mount -a") {
		t.Errorf("warnings = %q", env.Warnings())
	}
}
