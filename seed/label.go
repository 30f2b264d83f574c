package seed

import (
	"io"
	"strings"
)

// ReadLabel reads a filesystem's type and label from its first sectors,
// without mounting: ISO9660's primary volume descriptor and FAT's boot
// sector, the two that seed disks (cidata, config-2) use. Other
// filesystems give ("", "", nil).
func ReadLabel(r io.ReaderAt) (fsType, label string, err error) {
	// ISO9660: the primary volume descriptor at sector 16 (2 KiB sectors).
	pvd := make([]byte, 2048)
	if n, err := r.ReadAt(pvd, 16*2048); n == len(pvd) || (err == nil && n > 72) {
		if pvd[0] == 1 && string(pvd[1:6]) == "CD001" {
			return "iso9660", strings.TrimRight(string(pvd[40:72]), " \x00"), nil
		}
	}
	bs := make([]byte, 512)
	if n, err := r.ReadAt(bs, 0); n < len(bs) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return "", "", err
	}
	if bs[510] != 0x55 || bs[511] != 0xAA {
		return "", "", nil
	}
	// FAT32 keeps its extended BPB at 0x40, FAT12/16 at 0x24; both carry
	// the 0x29 signature, an 11-byte label and the type string.
	for _, off := range []int{0x40, 0x24} {
		if bs[off+2] == 0x29 {
			typ := strings.TrimSpace(string(bs[off+0x12 : off+0x1A]))
			if !strings.HasPrefix(typ, "FAT") {
				continue
			}
			return "vfat", strings.TrimRight(string(bs[off+7:off+18]), " \x00"), nil
		}
	}
	return "", "", nil
}
