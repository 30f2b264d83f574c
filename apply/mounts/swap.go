package mounts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	mib = 1 << 20
	gib = 1 << 30
	// swapSignature ends the first page of a version-1 swap area.
	swapSignature = "SWAPSPACE2"
	// minSwapPages is the smallest swap area mkswap makes (and swapon takes).
	minSwapPages = 10
)

// HumanToBytes parses a size as cloud-init's human2bytes does: a number,
// possibly fractional, with an optional B, K, M, G or T suffix (binary
// multiples) and an optional trailing B ("2G", "512MB", ".5G", "1024").
func HumanToBytes(size string) (int64, error) {
	s := strings.TrimSuffix(size, "B")
	mult := float64(1)
	if s != "" {
		if m, ok := map[byte]float64{'B': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[s[len(s)-1]]; ok {
			mult, s = m, s[:len(s)-1]
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("parse size %q: not a number with an optional B, K, M, G or T suffix", size)
	}
	if n < 0 {
		return 0, fmt.Errorf("parse size %q: cannot be negative", size)
	}
	v := n * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("parse size %q: too large", size)
	}
	return int64(v), nil
}

// SuggestedSwapSize is cloud-init's suggested_swapsize: at most twice the
// memory, at most maxSize (when > 0), and at most a quarter of the free
// space (or 90% of it for an explicit maxSize) when free is known (>= 0).
func SuggestedSwapSize(memSize, maxSize, free int64) int64 {
	suggestedMax := memSize * 2
	switch {
	case free >= 0:
		if maxSize <= 0 {
			maxSize = min(free/4, suggestedMax)
		} else if float64(maxSize) > float64(free)*0.9 {
			maxSize = int64(float64(free) * 0.9)
		}
	case maxSize <= 0:
		maxSize = suggestedMax
	}
	var minSize int64
	switch {
	case memSize < 4*gib:
		minSize = memSize
	case memSize < 16*gib:
		minSize = 4 * gib
	default:
		minSize = int64(math.Round(math.Sqrt(float64(memSize)/gib))) * gib
	}
	return min(minSize, maxSize)
}

// SwapHeader is the first page of a version-1 Linux swap area, as mkswap
// writes it: 1024 bytes left for boot blocks, then version, last page,
// bad-page count, UUID and label, and the signature in the last 10 bytes.
func SwapHeader(pageSize int, sizeBytes int64, uuid [16]byte, label string) ([]byte, error) {
	if pageSize < 4096 || pageSize&(pageSize-1) != 0 {
		return nil, fmt.Errorf("make swap header: page size %d is not a power of two >= 4096", pageSize)
	}
	pages := sizeBytes / int64(pageSize)
	if pages < minSwapPages {
		return nil, fmt.Errorf("make swap header: %d bytes is less than %d pages of %d bytes", sizeBytes, minSwapPages, pageSize)
	}
	if pages-1 > math.MaxUint32 {
		return nil, fmt.Errorf("make swap header: %d pages do not fit a version-1 header", pages)
	}
	if len(label) > 16 {
		return nil, fmt.Errorf("make swap header: label %q is longer than 16 bytes", label)
	}
	page := make([]byte, pageSize)
	binary.NativeEndian.PutUint32(page[1024:], 1)
	binary.NativeEndian.PutUint32(page[1028:], uint32(pages-1))
	binary.NativeEndian.PutUint32(page[1032:], 0)
	copy(page[1036:1052], uuid[:])
	copy(page[1052:1068], label)
	copy(page[pageSize-len(swapSignature):], swapSignature)
	return page, nil
}

// randomUUID is an RFC 4122 version-4 UUID from r.
func randomUUID(r io.Reader) ([16]byte, error) {
	var u [16]byte
	if _, err := io.ReadFull(r, u[:]); err != nil {
		return u, err
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u, nil
}

// fillSwapFile makes f a swap area of sizeBytes with the given header:
// allocated with fallocate(2), or zero-filled where the filesystem cannot
// (btrfs, old XFS: swapon refuses files with holes or unwritten extents
// there, which is why cloud-init uses dd on them), then synced. The target
// writer gives it its mode and renames it into place, so a half-made file
// never carries the name.
func fillSwapFile(f *os.File, sizeBytes int64, header []byte) (method string, err error) {
	method = "fallocate"
	var st unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &st) == nil && int64(st.Type) == unix.BTRFS_SUPER_MAGIC {
		method = "zero-fill"
	} else if err := unix.Fallocate(int(f.Fd()), 0, 0, sizeBytes); err != nil {
		method = "zero-fill"
	}
	if method == "zero-fill" {
		if err := zeroFill(f, sizeBytes); err != nil {
			return method, err
		}
	}
	if _, err := f.WriteAt(header, 0); err != nil {
		return method, err
	}
	return method, f.Sync()
}

func zeroFill(f *os.File, size int64) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	buf := make([]byte, mib)
	for off := int64(0); off < size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// memTotal reads MemTotal from /proc/meminfo text, in bytes.
func memTotal(meminfo string) (int64, error) {
	for _, line := range strings.Split(meminfo, "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse MemTotal %q: %w", fields[0], err)
		}
		if len(fields) > 1 && strings.EqualFold(fields[1], "kB") {
			n *= 1024
		}
		return n, nil
	}
	return 0, errors.New("no MemTotal line")
}
