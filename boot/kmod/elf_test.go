package kmod

import (
	"bytes"
	"debug/elf"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// sameAsDebugElf checks elfSection against the standard library's reader,
// which the binary no longer links but tests may.
func sameAsDebugElf(t *testing.T, data []byte, name string) {
	t.Helper()
	got, err := elfSection(bytes.NewReader(data), name)
	f, stdErr := elf.NewFile(bytes.NewReader(data))
	var want []byte
	if stdErr == nil {
		if sec := f.Section(name); sec != nil && sec.Type != elf.SHT_NOBITS {
			want, stdErr = sec.Data()
		} else {
			stdErr = os.ErrNotExist
		}
	}
	switch {
	case stdErr == nil && err != nil:
		t.Fatalf("section %s: %v; debug/elf reads %d bytes", name, err, len(want))
	case stdErr == nil && !bytes.Equal(got, want):
		t.Fatalf("section %s: %d bytes differ from debug/elf's %d", name, len(got), len(want))
	}
}

func TestElfSectionOnDebianModules(t *testing.T) {
	dir := realModulesDir(t)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ko") || n >= 200 {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		sameAsDebugElf(t, data, ".modinfo")
		sameAsDebugElf(t, data, "__versions")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no .ko files in the Debian kernel")
	}
}

func TestElfSectionOnThisBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.Skip(t, "no executable path:", err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		testenv.Skip(t, "cannot read the test binary:", err)
	}
	for _, name := range []string{".note.go.buildid", ".go.buildinfo", ".shstrtab"} {
		sameAsDebugElf(t, data, name)
	}
	if _, err := elfSection(bytes.NewReader(data), ".modinfo"); err == nil || !strings.Contains(err.Error(), "no .modinfo section") {
		t.Errorf("a binary without .modinfo: %v", err)
	}
}

func TestElfSectionRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "\x7fELF", "#!/bin/sh\n", "\x7fELF\x02\x01\x01" + strings.Repeat("\xff", 100)} {
		if _, err := elfSection(strings.NewReader(in), ".modinfo"); err == nil {
			t.Errorf("%q: read a section", in)
		}
	}
}

// FuzzElfSection: no input makes the reader panic or allocate without
// bound, and whatever debug/elf reads, it reads the same.
func FuzzElfSection(f *testing.F) {
	if exe, err := os.Executable(); err == nil {
		if data, err := os.ReadFile(exe); err == nil && len(data) > 4096 {
			f.Add(data[:4096])
		}
	}
	f.Add([]byte("\x7fELF\x01\x02\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsDebugElf(t, data, ".modinfo")
	})
}

func TestELFMachine(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		testenv.Skip(t, "no executable path:", err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		testenv.Skip(t, "the test binary is not readable as ELF:", err)
	}
	defer f.Close()
	r, _ := os.Open(exe)
	defer r.Close()
	got, err := ELFMachine(r)
	if err != nil || elf.Machine(got) != f.Machine {
		t.Errorf("ELFMachine(test binary) = %d, %v; debug/elf says %v", got, err, f.Machine)
	}
	// Big-endian: the field is read in the file's own byte order.
	be := "\x7fELF\x02\x02\x01" + strings.Repeat("\x00", 11) + "\x00\x16"
	if got, err := ELFMachine(strings.NewReader(be)); err != nil || elf.Machine(got) != elf.EM_S390 {
		t.Errorf("big-endian header: %d, %v; want EM_S390", got, err)
	}
	for _, in := range []string{"", "\x7fELF\x02\x01", "#!/bin/sh\nexec /bin/busybox\n", "\x7fELF\x02\x03\x01" + strings.Repeat("\x00", 20)} {
		if m, err := ELFMachine(strings.NewReader(in)); err == nil {
			t.Errorf("%q: machine %d, want an error", in, m)
		}
	}
}
