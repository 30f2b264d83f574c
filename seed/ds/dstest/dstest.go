// Package dstest holds the fixtures of datasource tests: the seed disks
// clouds make (ISO9660 with genisoimage, FAT with mkfs.vfat and mtools),
// the documents they put on them (an OpenStack config drive's injected
// files, an OVF environment, VMware's guestinfo encodings and DMI), and a
// temporary target root. It is for tests only: seed/ds's own, and those
// above it that run a seed through the stages.
//
// seed/ds's in-package tests use it, so it must not import seed/ds (Go
// forbids the cycle): it takes and returns plain values, paths, maps and
// strings, which convert to ds.FileDevices and ds.MapDMI.
package dstest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/testenv"
)

// TargetRoot is a fresh target root in a temporary directory, closed
// when t ends.
func TargetRoot(t testing.TB) *rootfs.Root {
	t.Helper()
	root, err := rootfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// WriteTree writes files (slash paths) under a new temporary directory
// and returns it.
func WriteTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ISO builds an ISO9660 image of files the way Nova and cloud-localds do
// (genisoimage; extraArgs "-J", "-r" for Joliet and Rock Ridge, or only
// one of them) and returns its path.
func ISO(t testing.TB, label string, files map[string]string, extraArgs ...string) string {
	t.Helper()
	return genisoimage(t, label, WriteTree(t, files), extraArgs...)
}

// RockRidgeISO is an ISO9660 image with Rock Ridge as genisoimage -R
// makes it, which keeps the files' modes and owners (-r would make them
// root's and readable by all): modes and owners ({uid, gid}) by slash
// path. Owners other than the test's own need root.
func RockRidgeISO(t testing.TB, label string, files map[string]string, modes map[string]os.FileMode, owners map[string][2]int) string {
	t.Helper()
	src := WriteTree(t, files)
	for p, m := range modes {
		if err := os.Chmod(filepath.Join(src, filepath.FromSlash(p)), m); err != nil {
			t.Fatal(err)
		}
	}
	for p, o := range owners {
		if err := os.Lchown(filepath.Join(src, filepath.FromSlash(p)), o[0], o[1]); err != nil {
			testenv.Skipf(t, "chown (needs root): %v", err)
		}
	}
	return genisoimage(t, label, src, "-R", "-J")
}

// genisoimage makes an image of the directory src.
func genisoimage(t testing.TB, label, src string, extraArgs ...string) string {
	t.Helper()
	tool, err := exec.LookPath("genisoimage")
	if err != nil {
		testenv.Skip(t, "genisoimage is not installed: cannot build ISO9660 fixtures")
	}
	out := filepath.Join(t.TempDir(), "seed.iso")
	args := append([]string{"-quiet", "-o", out, "-V", label}, extraArgs...)
	args = append(args, src)
	if b, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v\n%s", err, b)
	}
	return out
}

// VFAT builds a FAT image of sizeKiB ("65536") with mkfs.vfat, FAT12, 16
// or 32 as fatBits says ("" lets mkfs.vfat choose), and fills it with
// mtools' mcopy (as cloud-localds does), never mounting it.
func VFAT(t testing.TB, label string, sizeKiB string, fatBits string, files map[string]string) string {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.vfat")
	if err != nil {
		testenv.Skip(t, "mkfs.vfat (dosfstools) is not installed: cannot build FAT fixtures")
	}
	mcopy, err := exec.LookPath("mcopy")
	if err != nil {
		testenv.Skip(t, "mcopy (mtools) is not installed: cannot fill FAT fixtures without mounting")
	}
	img := filepath.Join(t.TempDir(), "seed.img")
	args := []string{"-n", label, "-C", img, sizeKiB}
	if fatBits != "" {
		args = append([]string{"-F", fatBits}, args...)
	}
	if b, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.vfat: %v\n%s", err, b)
	}
	src := WriteTree(t, files)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	cargs := []string{"-s", "-i", img}
	for _, e := range entries {
		cargs = append(cargs, filepath.Join(src, e.Name()))
	}
	cargs = append(cargs, "::/")
	cmd := exec.Command(mcopy, cargs...)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcopy: %v\n%s", err, b)
	}
	return img
}

// InjectedTree is a config drive whose meta_data.json injects files, as
// Nova lays out personality files: the content under openstack/content/,
// named by content_path.
func InjectedTree(files []map[string]any, content map[string]string) map[string]string {
	md := map[string]any{"uuid": "iid-inject", "hostname": "fgt-01", "files": files}
	b, _ := json.Marshal(md)
	tree := map[string]string{"openstack/latest/meta_data.json": string(b)}
	for name, c := range content {
		tree["openstack/"+name] = c
	}
	return tree
}

// OVFEnv is an OVF environment document as vSphere writes it
// (ovf-env.xml), with the properties props, key and value each, in order.
func OVFEnv(props ...[2]string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
     xmlns:oe="http://schemas.dmtf.org/ovf/environment/1" xmlns:ve="http://www.vmware.com/schema/ovfenv"
     oe:id="" ve:vCenterId="vm-42">
   <PlatformSection>
      <Kind>VMware ESXi</Kind>
      <Version>8.0.2</Version>
      <Vendor>VMware, Inc.</Vendor>
      <Locale>en</Locale>
   </PlatformSection>
   <PropertySection>
`)
	for _, p := range props {
		b.WriteString(`         <Property oe:key="` + p[0] + `" oe:value="` + p[1] + `"/>` + "\n")
	}
	b.WriteString(`   </PropertySection>
   <ve:EthernetAdapterSection>
      <ve:Adapter ve:mac="00:50:56:a1:b2:c3" ve:network="VM Network" ve:unitNumber="7"/>
   </ve:EthernetAdapterSection>
</Environment>
`)
	return b.String()
}

// B64 is s in standard base64, as OVF properties and guestinfo keys carry
// it.
func B64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// GzB64 is s gzip'd, then in base64: guestinfo's gzip+base64 encoding.
func GzB64(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return B64(b.String())
}

// VMwareDMI is what ESXi's firmware says (sys_vendor, product_name,
// product_uuid), a fresh map each call; it is a ds.MapDMI.
func VMwareDMI() map[string]string {
	return map[string]string{"sys_vendor": "VMware, Inc.", "product_name": "VMware7,1", "product_uuid": "4223A1B2-C3D4-E5F6-0718-293A4B5C6D7E"}
}
