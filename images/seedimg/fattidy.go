package seedimg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// tidyFAT16 makes a go-diskfs FAT16 image pass fsck.fat: go-diskfs
// (v1.9.4) reserves cluster 2 for a root directory that FAT16 keeps in its
// fixed area, and gives empty files a cluster; fsck.fat reports both
// (lost cluster, size 0 with a chain) and exits 1. Here every cluster no
// directory entry reaches is freed and empty files point at cluster 0, as
// mkfs.vfat + mcopy leave them.
func tidyFAT16(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	bs := make([]byte, 512)
	if _, err := f.ReadAt(bs, 0); err != nil {
		return fmt.Errorf("read boot sector: %w", err)
	}
	if string(bs[54:62]) != "FAT16   " {
		// FAT32 (images past 2000 MiB) is left as go-diskfs wrote it.
		return nil
	}
	bps := int64(binary.LittleEndian.Uint16(bs[11:]))
	spc := int64(bs[13])
	reserved := int64(binary.LittleEndian.Uint16(bs[14:]))
	numFATs := int64(bs[16])
	rootEntries := int64(binary.LittleEndian.Uint16(bs[17:]))
	spf := int64(binary.LittleEndian.Uint16(bs[22:]))
	total := int64(binary.LittleEndian.Uint16(bs[19:]))
	if total == 0 {
		total = int64(binary.LittleEndian.Uint32(bs[32:]))
	}
	if bps == 0 || spc == 0 || spf == 0 || numFATs == 0 {
		return errors.New("not a FAT12/16 boot sector")
	}
	fatStart := reserved * bps
	rootStart := fatStart + numFATs*spf*bps
	dataStart := rootStart + (rootEntries*32+bps-1)/bps*bps
	clusters := (total*bps - dataStart) / (spc * bps)
	clusterSize := spc * bps

	fat := make([]byte, spf*bps)
	if _, err := f.ReadAt(fat, fatStart); err != nil {
		return fmt.Errorf("read FAT: %w", err)
	}
	next := func(c uint16) uint16 { return binary.LittleEndian.Uint16(fat[2*int(c):]) }
	used := map[uint16]bool{}
	// chain marks and returns the clusters of a chain, bounded so that a
	// cycle cannot loop.
	chain := func(start uint16) []uint16 {
		var out []uint16
		for c := start; c >= 2 && int64(c) < clusters+2 && !used[c] && len(out) <= int(clusters); c = next(c) {
			used[c] = true
			out = append(out, c)
			if next(c) >= 0xFFF8 {
				break
			}
		}
		return out
	}

	var walk func(offsets []int64, size int64, depth int) error
	walk = func(offsets []int64, size int64, depth int) error {
		if depth > 16 {
			return errors.New("directories nested too deep")
		}
		for _, base := range offsets {
			buf := make([]byte, size)
			if _, err := f.ReadAt(buf, base); err != nil {
				return fmt.Errorf("read directory at %d: %w", base, err)
			}
			for i := 0; i+32 <= len(buf); i += 32 {
				e := buf[i : i+32]
				switch {
				case e[0] == 0x00:
					return nil
				case e[0] == 0xE5, e[11] == 0x0F, e[11]&0x08 != 0, e[0] == '.':
					continue
				}
				start := binary.LittleEndian.Uint16(e[26:])
				fileSize := binary.LittleEndian.Uint32(e[28:])
				if e[11]&0x10 != 0 {
					var sub []int64
					for _, c := range chain(start) {
						sub = append(sub, dataStart+int64(c-2)*clusterSize)
					}
					if err := walk(sub, clusterSize, depth+1); err != nil {
						return err
					}
					continue
				}
				if fileSize == 0 && start != 0 {
					if _, err := f.WriteAt([]byte{0, 0}, base+int64(i)+26); err != nil {
						return err
					}
					continue
				}
				chain(start)
			}
		}
		return nil
	}
	if err := walk([]int64{rootStart}, rootEntries*32, 0); err != nil {
		return err
	}
	changed := false
	for c := int64(2); c < clusters+2 && 2*c+1 < int64(len(fat)); c++ {
		if next(uint16(c)) != 0 && !used[uint16(c)] {
			binary.LittleEndian.PutUint16(fat[2*c:], 0)
			changed = true
		}
	}
	if changed {
		for i := int64(0); i < numFATs; i++ {
			if _, err := f.WriteAt(fat, fatStart+i*spf*bps); err != nil {
				return fmt.Errorf("write FAT %d: %w", i, err)
			}
		}
	}
	return f.Sync()
}
