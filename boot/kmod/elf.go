package kmod

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxModinfo bounds a .modinfo section: the largest on Debian's kernels is
// a few KiB, so anything near this is a corrupt header, not a module.
const maxModinfo = 1 << 20

// readModinfo returns the key=value strings of an ELF module's .modinfo.
// It reads only the section headers and the one section; debug/elf would
// do the same job but links DWARF and zstd readers into a binary that runs
// as PID 1, for a lookup of one section by name.
func readModinfo(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := elfSection(f, ".modinfo")
	if err != nil {
		return nil, err
	}
	return ParseModinfo(b), nil
}

// elfSection returns the contents of the named section of an ELF file,
// 32- or 64-bit, either byte order.
func elfSection(r io.ReaderAt, name string) ([]byte, error) {
	var ident [16]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil {
		return nil, fmt.Errorf("not an ELF file: %w", err)
	}
	if !bytes.Equal(ident[:4], []byte("\x7fELF")) {
		return nil, errors.New("not an ELF file")
	}
	var order binary.ByteOrder
	switch ident[5] {
	case 1:
		order = binary.LittleEndian
	case 2:
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("ELF data encoding %d unknown", ident[5])
	}
	var h elfLayout
	switch ident[4] {
	case 1:
		h = elfLayout{is64: false, headerSize: 52, shoffAt: 32, shentsizeAt: 46}
	case 2:
		h = elfLayout{is64: true, headerSize: 64, shoffAt: 40, shentsizeAt: 58}
	default:
		return nil, fmt.Errorf("ELF class %d unknown", ident[4])
	}
	hdr := make([]byte, h.headerSize)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return nil, fmt.Errorf("ELF header: %w", err)
	}
	shoff := h.word(order, hdr[h.shoffAt:])
	shentsize := uint64(order.Uint16(hdr[h.shentsizeAt:]))
	shnum := uint64(order.Uint16(hdr[h.shentsizeAt+2:]))
	shstrndx := uint64(order.Uint16(hdr[h.shentsizeAt+4:]))
	if shentsize < h.sectionHeaderSize() || shentsize > 256 || shnum == 0 || shstrndx >= shnum {
		return nil, errors.New("ELF section headers are malformed")
	}
	if shoff > 1<<40 {
		return nil, errors.New("ELF section headers are out of bounds")
	}
	table := make([]byte, shentsize*shnum)
	if _, err := r.ReadAt(table, int64(shoff)); err != nil {
		return nil, fmt.Errorf("ELF section headers: %w", err)
	}
	section := func(i uint64) (nameOff, off, size uint64) {
		s := table[i*shentsize:]
		if h.is64 {
			return uint64(order.Uint32(s)), order.Uint64(s[24:]), order.Uint64(s[32:])
		}
		return uint64(order.Uint32(s)), uint64(order.Uint32(s[16:])), uint64(order.Uint32(s[20:]))
	}
	_, strOff, strSize := section(shstrndx)
	names, err := readAtMost(r, strOff, strSize)
	if err != nil {
		return nil, fmt.Errorf("ELF section names: %w", err)
	}
	for i := uint64(0); i < shnum; i++ {
		nameOff, off, size := section(i)
		if nameOff >= uint64(len(names)) {
			continue
		}
		n, _, _ := bytes.Cut(names[nameOff:], []byte{0})
		if string(n) == name {
			return readAtMost(r, off, size)
		}
	}
	return nil, fmt.Errorf("no %s section", name)
}

// ELFMachine returns an ELF file's e_machine (62 for x86-64, 183 for
// AArch64): the initramfs builder compares a kernel's modules with the
// /init it packs, since an /init the kernel cannot execute is a panic at
// boot ("No working init found") rather than an error at build time.
func ELFMachine(r io.ReaderAt) (uint16, error) {
	var h [20]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return 0, fmt.Errorf("not an ELF file: %w", err)
	}
	if !bytes.Equal(h[:4], []byte("\x7fELF")) {
		return 0, errors.New("not an ELF file")
	}
	switch h[5] {
	case 1:
		return binary.LittleEndian.Uint16(h[18:]), nil
	case 2:
		return binary.BigEndian.Uint16(h[18:]), nil
	}
	return 0, fmt.Errorf("ELF data encoding %d unknown", h[5])
}

type elfLayout struct {
	is64                bool
	headerSize, shoffAt int
	shentsizeAt         int
}

func (h elfLayout) word(order binary.ByteOrder, b []byte) uint64 {
	if h.is64 {
		return order.Uint64(b)
	}
	return uint64(order.Uint32(b))
}

func (h elfLayout) sectionHeaderSize() uint64 {
	if h.is64 {
		return 64
	}
	return 40
}

func readAtMost(r io.ReaderAt, off, size uint64) ([]byte, error) {
	if size > maxModinfo || off > 1<<40 {
		return nil, fmt.Errorf("section of %d bytes at %d is out of bounds", size, off)
	}
	b := make([]byte, size)
	if _, err := r.ReadAt(b, int64(off)); err != nil {
		return nil, err
	}
	return b, nil
}
