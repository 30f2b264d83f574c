package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeFiles lists the regular files under dir, relative to it.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNetConvertStaysInOutDir runs net-convert with its output directory
// deep in a temporary one, on configs whose interface names climb out of
// it, and wants nothing written outside it: the names are refused, and
// the config with them.
func TestNetConvertStaysInOutDir(t *testing.T) {
	tests := []struct{ name, config string }{
		{"v2 ethernet name", "network:\n  version: 2\n  ethernets:\n    \"../../../../../../../../X\":\n      dhcp4: true\n"},
		{"v2 set-name", "network:\n  version: 2\n  ethernets:\n    e0:\n      match: {macaddress: '52:54:00:12:34:56'}\n      set-name: ../../../../../../X\n"},
		{"v1 name", "version: 1\nconfig:\n  - {type: physical, name: ../../../../../../../../X, subnets: [{type: dhcp}]}\n"},
		{"v1 VLAN name", "version: 1\nconfig:\n  - {type: physical, name: eth0}\n  - {type: vlan, name: ../../../../../../../../X, vlan_link: eth0, vlan_id: 5}\n"},
	}
	for _, tc := range tests {
		for _, out := range []string{"eni", "networkd", "netplan", "sysconfig"} {
			t.Run(tc.name+"/"+out, func(t *testing.T) {
				top := t.TempDir()
				input := filepath.Join(top, "in.yaml")
				if err := os.WriteFile(input, []byte(tc.config), 0o644); err != nil {
					t.Fatal(err)
				}
				outDir := filepath.Join(top, "a", "b", "c", "d", "out")
				code, _, stderr := run(t, "net-convert", "-p", input, "-k", "yaml", "-O", out, "-d", outDir)
				if code != exitError {
					t.Errorf("exit %d, want %d (refused)", code, exitError)
				}
				if !strings.Contains(stderr, "not an interface name") {
					t.Errorf("stderr does not say why: %s", stderr)
				}
				if files := treeFiles(t, top); len(files) != 1 {
					t.Errorf("files written: %v", files)
				}
			})
		}
	}
}

// TestNetConvertFollowsSymlinksInsideOutDir puts symlinks in the output
// directory that point out of it, absolute and relative, as a directory
// prepared by someone else might have: net-convert resolves them as if
// the output directory were "/", so its files land inside it.
func TestNetConvertFollowsSymlinksInsideOutDir(t *testing.T) {
	for _, out := range []string{"eni", "networkd", "netplan", "sysconfig"} {
		t.Run(out, func(t *testing.T) {
			top := t.TempDir()
			outside := filepath.Join(top, "outside")
			outDir := filepath.Join(top, "out")
			for _, d := range []string{outside, outDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// etc points out by its absolute path, etc/... would follow it.
			if err := os.Symlink(outside, filepath.Join(outDir, "etc")); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, "net-convert", "-p", "../../netup/testdata/convert/v1-static4.yaml", "-k", "yaml", "-O", out, "-d", outDir)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if files := treeFiles(t, outside); len(files) != 0 {
				t.Errorf("written outside the output directory: %v", files)
			}
			if files := treeFiles(t, outDir); len(files) == 0 {
				t.Error("nothing written inside the output directory")
			}
		})
	}
	t.Run("relative", func(t *testing.T) {
		top := t.TempDir()
		outDir := filepath.Join(top, "a", "out")
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../..", filepath.Join(outDir, "etc")); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := run(t, "net-convert", "-p", "../../netup/testdata/convert/v1-static4.yaml", "-k", "yaml", "-O", "networkd", "-d", outDir)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, f := range treeFiles(t, top) {
			if !strings.HasPrefix(f, filepath.Join("a", "out")+"/") {
				t.Errorf("written outside the output directory: %s", f)
			}
		}
	})
}

// TestNetConvertHostileMAC: a MAC with a second line refuses the config,
// and the message shows the value escaped.
func TestNetConvertHostileMAC(t *testing.T) {
	top := t.TempDir()
	input := filepath.Join(top, "in.yaml")
	config := "version: 1\nconfig:\n  - type: physical\n    name: eth0\n    mac_address: \"52:54:00:12:34:56\\n  up touch /tmp/PWNED\"\n"
	if err := os.WriteFile(input, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(top, "out")
	code, _, stderr := run(t, "net-convert", "-p", input, "-k", "yaml", "-O", "eni", "-d", outDir)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	want := `key "mac_address": "52:54:00:12:34:56\n  up touch /tmp/PWNED": not a MAC address`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not say %q", stderr, want)
	}
	if strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", stderr)
	}
	if files := treeFiles(t, top); len(files) != 1 {
		t.Errorf("files written: %v", files)
	}
}

func TestNetConvertRefusesBadMACFlag(t *testing.T) {
	for _, m := range []string{"../x,52:54:00:12:34:56", "eth0,52:54:00:12:34:56\nup", "eth0,zz"} {
		code, _, stderr := run(t, "net-convert", "-p", "../../netup/testdata/convert/nd-bond.json", "-k", "network_data.json", "-O", "eni", "-d", t.TempDir(), "--mac", m)
		if code != exitError || !strings.Contains(stderr, "--mac") {
			t.Errorf("--mac %q: exit %d, %s", m, code, stderr)
		}
	}
}
