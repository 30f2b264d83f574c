package samefile

import (
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A usrmerge root, hard links and copies: every way an init candidate can
// be seedinit itself is recognised by the file, never by its name.
func TestProgram(t *testing.T) {
	dir := t.TempDir()
	program := []byte("\x7fELF pretend seedinit " + string(make([]byte, 200<<10)))
	must(t, os.MkdirAll(filepath.Join(dir, "usr/sbin"), 0o755))
	must(t, os.Symlink("usr/sbin", filepath.Join(dir, "sbin")))
	self := filepath.Join(dir, "usr/sbin/seedinit")
	must(t, os.WriteFile(self, program, 0o755))
	must(t, os.Link(self, filepath.Join(dir, "usr/sbin/init-hardlink")))
	must(t, os.Symlink("seedinit", filepath.Join(dir, "usr/sbin/init")))
	must(t, os.WriteFile(filepath.Join(dir, "usr/sbin/seedinit-copy"), program, 0o755))
	other := append([]byte(nil), program...)
	other[len(other)-1] = 'x' // same size, one byte apart
	must(t, os.WriteFile(filepath.Join(dir, "usr/sbin/real-init"), other, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "usr/sbin/small-init"), []byte("#!/bin/sh\n"), 0o755))

	selfFile, err := os.Open(self)
	must(t, err)
	defer selfFile.Close()
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"sbin/seedinit", true}, // /sbin -> usr/sbin: the string differs, the file does not
		{"usr/sbin/seedinit", true},
		{"usr/sbin/init", true},
		{"usr/sbin/init-hardlink", true},
		{"usr/sbin/seedinit-copy", true},
		{"sbin/real-init", false},
		{"sbin/small-init", false},
	} {
		got, err := Program(filepath.Join(dir, tc.path), selfFile)
		if err != nil || got != tc.want {
			t.Errorf("Program(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if _, err := Program(filepath.Join(dir, "sbin/missing"), selfFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing candidate: %v, want not-exist", err)
	}
	if got, err := Program(filepath.Join(dir, "sbin/seedinit"), nil); got || err != nil {
		t.Errorf("without knowing itself: %v, %v; want false (exec rather than no boot)", got, err)
	}
}

// IsSelf is Program against the running executable: this test binary by
// its own path and as a copy is itself; a copy one byte apart is not.
func TestIsSelf(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	self, err := os.ReadFile(SelfExe)
	must(t, err)
	dir := t.TempDir()
	copied, changed := filepath.Join(dir, "copy"), filepath.Join(dir, "changed")
	must(t, os.WriteFile(copied, self, 0o755))
	self[len(self)/2] ^= 1
	must(t, os.WriteFile(changed, self, 0o755))
	for path, want := range map[string]bool{exe: true, copied: true, changed: false} {
		if got, err := IsSelf(path); err != nil || got != want {
			t.Errorf("IsSelf(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
	if _, err := IsSelf(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("IsSelf of a missing file: %v, want not-exist", err)
	}
}

func TestContent(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*block/16+5) // three blocks and a bit
	changedAt := func(i int) []byte {
		b := append([]byte(nil), big...)
		b[i] ^= 1
		return b
	}
	for _, tc := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"both empty", nil, nil, true},
		{"empty and not", nil, []byte("x"), false},
		{"equal, several blocks", big, append([]byte(nil), big...), true},
		{"exactly one block each", big[:block], big[:block], true},
		{"one block and one byte more", big[:block], big[:block+1], false},
		{"a byte apart in the first block", big, changedAt(10), false},
		{"a byte apart at a block's edge", big, changedAt(block), false},
		{"a byte apart in the last byte", big, changedAt(len(big) - 1), false},
		{"a prefix", big, big[:len(big)-1], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, swap := range []bool{false, true} {
				a, b := tc.a, tc.b
				if swap {
					a, b = b, a
				}
				// Short reads too: the compare must not depend on how the
				// reader splits its data.
				got, err := Content(iotest.HalfReader(bytes.NewReader(a)), bytes.NewReader(b))
				if err != nil || got != tc.want {
					t.Errorf("Content (swapped %v) = %v, %v; want %v", swap, got, err, tc.want)
				}
			}
		})
	}
	// A read that fails where the other ends is an error, not "the same".
	broken := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(big[:block]), iotest.ErrReader(broken))
	if got, err := Content(r, bytes.NewReader(big[:block])); got || !errors.Is(err, broken) {
		t.Errorf("Content with a failing read = %v, %v; want false, %v", got, err, broken)
	}
}

// SameBuild is the cheap check: the size and the head, which holds the
// build ID. A copy that differs past the head passes, by design: where
// that matters, Program reads every byte.
func TestSameBuild(t *testing.T) {
	dir := t.TempDir()
	program := bytes.Repeat([]byte{7}, buildHead+300<<10)
	write := func(name string, b []byte) *os.File {
		t.Helper()
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o755))
		f, err := os.Open(p)
		must(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	changedAt := func(i int) []byte {
		b := append([]byte(nil), program...)
		b[i] ^= 1
		return b
	}
	self := write("self", program)
	for _, tc := range []struct {
		name      string
		content   []byte
		build     bool // SameBuild
		everyByte bool // Program
	}{
		{"a copy", program, true, true},
		{"another size", program[:len(program)-1], false, false},
		{"another build ID (in the head)", changedAt(100), false, false},
		{"changed past the head", changedAt(buildHead + 10), true, false},
		{"small files", []byte("#!/bin/sh\n"), false, false},
	} {
		f := write(strings.ReplaceAll(tc.name, " ", "-"), tc.content)
		if got, err := SameBuild(f, self); err != nil || got != tc.build {
			t.Errorf("%s: SameBuild = %v, %v; want %v", tc.name, got, err, tc.build)
		}
		if got, err := Program(f.Name(), self); err != nil || got != tc.everyByte {
			t.Errorf("%s: Program = %v, %v; want %v", tc.name, got, err, tc.everyByte)
		}
	}
	small := write("small", []byte("#!/bin/sh\n"))
	if got, err := SameBuild(small, write("small-copy", []byte("#!/bin/sh\n"))); err != nil || !got {
		t.Errorf("two equal files smaller than the head: %v, %v; want the same", got, err)
	}
}

// SameBuild's claim: the Go build ID lies within the head it compares.
// This test binary is linked as seedinit is (the same toolchain, an ELF
// note), so where its note is, seedinit's is.
func TestBuildIDInTheHead(t *testing.T) {
	f, err := elf.Open(SelfExe)
	must(t, err)
	defer f.Close()
	note := f.Section(".note.go.buildid")
	if note == nil {
		t.Fatal("this test binary has no .note.go.buildid section")
	}
	if end := note.Offset + note.Size; end > buildHead {
		t.Errorf("the build ID ends at byte %d of the program, past the %d that SameBuild compares", end, buildHead)
	}
}
