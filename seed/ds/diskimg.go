package ds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"
)

// Seed disks are read straight from the device, without mounting: an
// initramfs may lack the filesystem modules, and mounting a disk the
// cloud hands us is more exposure than reading a few small files. Only
// what seed disks use is supported: ISO9660 with Rock Ridge or Joliet
// names, and FAT12/16/32 with long names.

// Bounds that keep a hostile image from costing more than a seed needs.
const (
	maxImageEntries = 4096
	maxImageDepth   = 12
	maxImageFile    = DefaultMaxBytes
)

// ImageFS is a read-only view of a seed disk's files.
type ImageFS struct {
	FSType string
	Label  string
	root   *imageNode
	r      io.ReaderAt
}

type imageNode struct {
	name     string
	dir      bool
	size     int64
	children []*imageNode
	// read returns the content of a file.
	read func() ([]byte, error)
	// posix is Rock Ridge's PX entry, when the image has one for the
	// node: the POSIX mode (type and permissions) and the owner.
	posix *posixAttrs
}

// posixAttrs is a Rock Ridge PX entry.
type posixAttrs struct {
	mode     uint32
	uid, gid uint32
}

// POSIX file types in a PX entry's mode.
const (
	posixTypeMask = 0o170000
	posixRegular  = 0o100000
	posixDir      = 0o040000
)

// TreeEntry is one file or directory below a directory of a seed disk.
type TreeEntry struct {
	// Path is slash-separated, relative to the directory walked.
	Path string
	Dir  bool
	// Mode is the permission bits the image gives (Rock Ridge), with the
	// set-id and sticky bits; Owned says whether it gives a mode and an
	// owner at all (FAT and plain ISO9660 give none).
	Mode     uint32
	UID, GID uint32
	Owned    bool
	// Other is set for what is neither a file nor a directory (a link, a
	// device), which Rock Ridge can record.
	Other bool
	Size  int64
	read  func() ([]byte, error)
}

// Read returns a file's content.
func (e TreeEntry) Read() ([]byte, error) {
	if e.Dir || e.read == nil {
		return nil, &fs.PathError{Op: "read", Path: e.Path, Err: errors.New("not a file")}
	}
	if e.Size > maxImageFile {
		return nil, &fs.PathError{Op: "read", Path: e.Path, Err: fmt.Errorf("%w: %d bytes", ErrTooLarge, e.Size)}
	}
	return e.read()
}

// Tree lists everything below the directory name, parents before their
// children, names sorted; fs.ErrNotExist when there is no such
// directory.
func (fsys *ImageFS) Tree(name string) ([]TreeEntry, error) {
	n, err := fsys.lookup(name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "walk", Path: name, Err: errors.New("not a directory")}
	}
	var out []TreeEntry
	var walk func(n *imageNode, prefix string)
	walk = func(n *imageNode, prefix string) {
		children := slices.Clone(n.children)
		sort.Slice(children, func(i, j int) bool { return children[i].name < children[j].name })
		for _, c := range children {
			e := TreeEntry{Path: path.Join(prefix, c.name), Dir: c.dir, Size: c.size, read: c.read}
			if c.posix != nil {
				e.Mode, e.UID, e.GID, e.Owned = c.posix.mode&0o7777, c.posix.uid, c.posix.gid, true
				switch c.posix.mode & posixTypeMask {
				case posixRegular, posixDir:
				default:
					e.Other = true
				}
			}
			out = append(out, e)
			if c.dir {
				walk(c, e.Path)
			}
		}
	}
	walk(n, "")
	return out, nil
}

// OpenImage reads the directory tree of an ISO9660 or FAT filesystem of
// size bytes. File contents are read when asked for.
func OpenImage(r io.ReaderAt, size int64) (*ImageFS, error) {
	if isISO(r) {
		return openISO(r, size)
	}
	return openFAT(r, size)
}

// ReadFile returns a file's content; name is slash-separated, relative to
// the root. Names match exactly or, failing that, without case (FAT and
// plain ISO9660 names have no case of their own).
func (fsys *ImageFS) ReadFile(name string) ([]byte, error) {
	n, err := fsys.lookup(name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	if n.size > maxImageFile {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: %d bytes", ErrTooLarge, n.size)}
	}
	b, err := n.read()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

// ReadDir lists a directory's entry names, sorted.
func (fsys *ImageFS) ReadDir(name string) ([]string, error) {
	n, err := fsys.lookup(name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	out := make([]string, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c.name)
	}
	sort.Strings(out)
	return out, nil
}

// IsDir reports whether name exists and is a directory.
func (fsys *ImageFS) IsDir(name string) bool {
	n, err := fsys.lookup(name)
	return err == nil && n.dir
}

func (fsys *ImageFS) lookup(name string) (*imageNode, error) {
	clean := path.Clean("/" + name)
	n := fsys.root
	if clean == "/" {
		return n, nil
	}
	for _, part := range strings.Split(clean[1:], "/") {
		if !n.dir {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		var next *imageNode
		for _, c := range n.children {
			if c.name == part {
				next = c
				break
			}
		}
		if next == nil {
			for _, c := range n.children {
				if strings.EqualFold(c.name, part) {
					next = c
					break
				}
			}
		}
		if next == nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = next
	}
	return n, nil
}

func readRange(r io.ReaderAt, off, n int64) ([]byte, error) {
	if n < 0 || n > maxImageFile {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, fmt.Errorf("read %d bytes at offset %d: %w", n, off, err)
	}
	return b, nil
}

// ---- ISO9660 ----

const isoSector = 2048

func isISO(r io.ReaderAt) bool {
	b := make([]byte, 6)
	if _, err := r.ReadAt(b, 16*isoSector); err != nil {
		return false
	}
	return string(b[1:6]) == "CD001"
}

type isoReader struct {
	r       io.ReaderAt
	size    int64
	joliet  bool
	rr      bool
	susSkip int
	entries int
}

func openISO(r io.ReaderAt, size int64) (*ImageFS, error) {
	ir := &isoReader{r: r, size: size}
	var pvd, svd []byte
	for sec := int64(16); sec < 16+32; sec++ {
		d, err := readRange(r, sec*isoSector, isoSector)
		if err != nil {
			return nil, fmt.Errorf("read ISO9660 volume descriptors: %w", err)
		}
		if string(d[1:6]) != "CD001" {
			return nil, fmt.Errorf("read ISO9660 volume descriptor %d: bad signature", sec)
		}
		if d[0] == 255 {
			break
		}
		switch d[0] {
		case 1:
			pvd = d
		case 2:
			esc := string(d[88:91])
			if esc == "%/@" || esc == "%/C" || esc == "%/E" {
				svd = d
			}
		}
	}
	if pvd == nil {
		return nil, errors.New("read ISO9660: no primary volume descriptor")
	}
	label := strings.TrimRight(string(pvd[40:72]), " \x00")
	rootRec := pvd[156 : 156+34]
	// Rock Ridge names (what Linux shows) win over Joliet; Joliet over
	// bare ISO9660 names.
	if skip, ok := ir.hasRockRidge(rootRec); ok {
		ir.rr, ir.susSkip = true, skip
	} else if svd != nil {
		ir.joliet = true
		rootRec = svd[156 : 156+34]
	}
	root, err := ir.dir(rootRec, "", 0)
	if err != nil {
		return nil, err
	}
	return &ImageFS{FSType: "iso9660", Label: label, root: root, r: r}, nil
}

func isoExtent(rec []byte) (int64, int64) {
	return int64(binary.LittleEndian.Uint32(rec[2:6])), int64(binary.LittleEndian.Uint32(rec[10:14]))
}

// hasRockRidge looks for SUSP's SP entry in the root's "." record.
func (ir *isoReader) hasRockRidge(rootRec []byte) (int, bool) {
	lba, _ := isoExtent(rootRec)
	d, err := readRange(ir.r, lba*isoSector, isoSector)
	if err != nil || d[0] < 34 {
		return 0, false
	}
	rec := d[:d[0]]
	su := rec[33+int(rec[32]):]
	if rec[32]%2 == 0 {
		su = su[1:]
	}
	if len(su) >= 7 && string(su[0:2]) == "SP" && su[4] == 0xBE && su[5] == 0xEF {
		return int(su[6]), true
	}
	return 0, false
}

func (ir *isoReader) dir(rec []byte, name string, depth int) (*imageNode, error) {
	if depth > maxImageDepth {
		return nil, fmt.Errorf("read ISO9660 directory %q: nested deeper than %d", name, maxImageDepth)
	}
	lba, length := isoExtent(rec)
	if lba*isoSector+length > ir.size || length > 1<<20 {
		return nil, fmt.Errorf("read ISO9660 directory %q: extent beyond the image", name)
	}
	data, err := readRange(ir.r, lba*isoSector, length)
	if err != nil {
		return nil, fmt.Errorf("read ISO9660 directory %q: %w", name, err)
	}
	node := &imageNode{name: name, dir: true}
	for off := 0; off < len(data); {
		l := int(data[off])
		if l == 0 {
			// Records never cross a sector: the rest of it is padding.
			off = (off/isoSector + 1) * isoSector
			continue
		}
		if l < 34 || off+l > len(data) {
			return nil, fmt.Errorf("read ISO9660 directory %q: bad record at offset %d", name, off)
		}
		r := data[off : off+l]
		off += l
		nl := int(r[32])
		if 33+nl > len(r) {
			return nil, fmt.Errorf("read ISO9660 directory %q: bad name length", name)
		}
		raw := r[33 : 33+nl]
		if nl == 1 && (raw[0] == 0 || raw[0] == 1) {
			continue // "." and ".."
		}
		if ir.entries++; ir.entries > maxImageEntries {
			return nil, fmt.Errorf("read ISO9660: more than %d entries", maxImageEntries)
		}
		isDir := r[25]&2 != 0
		child := ir.name(r, raw)
		if child == "" {
			continue
		}
		posix := ir.posix(r, raw)
		if isDir {
			sub, err := ir.dir(r, child, depth+1)
			if err != nil {
				return nil, err
			}
			sub.posix = posix
			node.children = append(node.children, sub)
			continue
		}
		flba, fsize := isoExtent(r)
		node.children = append(node.children, &imageNode{name: child, size: fsize, posix: posix, read: func() ([]byte, error) {
			if flba*isoSector+fsize > ir.size {
				return nil, errors.New("file extent beyond the image")
			}
			return readRange(ir.r, flba*isoSector, fsize)
		}})
	}
	return node, nil
}

func (ir *isoReader) name(rec, raw []byte) string {
	if ir.rr {
		su := rec[33+len(raw):]
		if len(raw)%2 == 0 && len(su) > 0 {
			su = su[1:]
		}
		if ir.susSkip < len(su) {
			su = su[ir.susSkip:]
		}
		if n, ok := ir.rockRidgeName(su); ok {
			return n
		}
	}
	if ir.joliet {
		u := make([]uint16, len(raw)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(raw[2*i:])
		}
		return strings.TrimSuffix(string(utf16.Decode(u)), ";1")
	}
	// Linux's map=normal: strip the version, a bare trailing dot, and
	// lower-case.
	n := string(raw)
	if i := strings.IndexByte(n, ';'); i >= 0 {
		n = n[:i]
	}
	return strings.ToLower(strings.TrimSuffix(n, "."))
}

// posix reads the record's Rock Ridge PX entry (in its own system use
// area; a PX continued elsewhere is not looked for), nil when there is
// none.
func (ir *isoReader) posix(rec, raw []byte) *posixAttrs {
	if !ir.rr {
		return nil
	}
	su := rec[33+len(raw):]
	if len(raw)%2 == 0 && len(su) > 0 {
		su = su[1:]
	}
	if ir.susSkip < len(su) {
		su = su[ir.susSkip:]
	}
	for len(su) >= 4 {
		l := int(su[2])
		if l < 4 || l > len(su) {
			return nil
		}
		if string(su[0:2]) == "PX" && l >= 36 {
			return &posixAttrs{
				mode: binary.LittleEndian.Uint32(su[4:8]),
				uid:  binary.LittleEndian.Uint32(su[20:24]),
				gid:  binary.LittleEndian.Uint32(su[28:32]),
			}
		}
		if string(su[0:2]) == "ST" {
			return nil
		}
		su = su[l:]
	}
	return nil
}

// rockRidgeName collects NM entries, following at most a few CE
// continuation areas.
func (ir *isoReader) rockRidgeName(su []byte) (string, bool) {
	var name []byte
	found := false
	for hops := 0; hops < 4; hops++ {
		var next []byte
		for len(su) >= 4 {
			l := int(su[2])
			if l < 4 || l > len(su) {
				break
			}
			e := su[:l]
			su = su[l:]
			switch string(e[0:2]) {
			case "NM":
				if l >= 5 {
					if e[4]&(2|4) != 0 { // "." or ".." aliases
						continue
					}
					name = append(name, e[5:]...)
					found = true
				}
			case "CE":
				if l >= 28 {
					blk := int64(binary.LittleEndian.Uint32(e[4:8]))
					off := int64(binary.LittleEndian.Uint32(e[12:16]))
					n := int64(binary.LittleEndian.Uint32(e[20:24]))
					if n <= isoSector && blk*isoSector+off+n <= ir.size {
						next, _ = readRange(ir.r, blk*isoSector+off, n)
					}
				}
			case "ST":
				su = nil
			}
		}
		if next == nil {
			break
		}
		su = next
	}
	return string(name), found && len(name) > 0
}

// ---- FAT ----

type fatReader struct {
	r            io.ReaderAt
	bytesPerSec  int64
	secPerClus   int64
	fatOff       int64
	dataOff      int64
	clusterCount uint32
	bits         int
	entries      int
}

func openFAT(r io.ReaderAt, size int64) (*ImageFS, error) {
	bs, err := readRange(r, 0, 512)
	if err != nil {
		return nil, fmt.Errorf("read FAT boot sector: %w", err)
	}
	if bs[510] != 0x55 || bs[511] != 0xAA {
		return nil, errors.New("read FAT boot sector: not a FAT or ISO9660 filesystem")
	}
	le16 := func(o int) int64 { return int64(binary.LittleEndian.Uint16(bs[o:])) }
	le32 := func(o int) int64 { return int64(binary.LittleEndian.Uint32(bs[o:])) }
	fr := &fatReader{r: r, bytesPerSec: le16(11), secPerClus: int64(bs[13])}
	reserved, nFATs, rootEnts := le16(14), int64(bs[16]), le16(17)
	fatSz := le16(22)
	if fatSz == 0 {
		fatSz = le32(36)
	}
	total := le16(19)
	if total == 0 {
		total = le32(32)
	}
	switch fr.bytesPerSec {
	case 512, 1024, 2048, 4096:
	default:
		return nil, fmt.Errorf("read FAT boot sector: %d bytes per sector", fr.bytesPerSec)
	}
	if fr.secPerClus == 0 || nFATs == 0 || fatSz == 0 || total == 0 {
		return nil, errors.New("read FAT boot sector: invalid geometry")
	}
	rootSecs := (rootEnts*32 + fr.bytesPerSec - 1) / fr.bytesPerSec
	fr.fatOff = reserved * fr.bytesPerSec
	rootOff := (reserved + nFATs*fatSz) * fr.bytesPerSec
	dataSec := reserved + nFATs*fatSz + rootSecs
	fr.dataOff = dataSec * fr.bytesPerSec
	if dataSec >= total || fr.dataOff > size {
		return nil, errors.New("read FAT boot sector: geometry beyond the image")
	}
	fr.clusterCount = uint32((total - dataSec) / fr.secPerClus)
	var rootDir []byte
	var label string
	switch {
	case fr.clusterCount < 4085:
		fr.bits = 12
	case fr.clusterCount < 65525:
		fr.bits = 16
	default:
		fr.bits = 32
	}
	if fr.bits == 32 {
		label = strings.TrimRight(string(bs[0x47:0x52]), " \x00")
		rootDir, err = fr.chain(uint32(le32(44)), -1)
	} else {
		label = strings.TrimRight(string(bs[0x2B:0x36]), " \x00")
		rootDir, err = readRange(r, rootOff, rootSecs*fr.bytesPerSec)
	}
	if err != nil {
		return nil, fmt.Errorf("read FAT root directory: %w", err)
	}
	root := &imageNode{dir: true}
	if err := fr.fill(root, rootDir, 0); err != nil {
		return nil, err
	}
	return &ImageFS{FSType: "vfat", Label: label, root: root, r: r}, nil
}

func (fr *fatReader) next(c uint32) (uint32, error) {
	var off int64
	switch fr.bits {
	case 12:
		off = int64(c) + int64(c)/2
	case 16:
		off = int64(c) * 2
	default:
		off = int64(c) * 4
	}
	width := 2 // FAT12 entries straddle bytes: read two and shift
	if fr.bits == 32 {
		width = 4
	}
	b := make([]byte, 4)
	if _, err := fr.r.ReadAt(b[:width], fr.fatOff+off); err != nil {
		return 0, err
	}
	switch fr.bits {
	case 12:
		v := uint32(binary.LittleEndian.Uint16(b))
		if c%2 == 1 {
			v >>= 4
		}
		v &= 0xFFF
		if v >= 0xFF8 {
			return 0, io.EOF
		}
		return v, nil
	case 16:
		v := uint32(binary.LittleEndian.Uint16(b))
		if v >= 0xFFF8 {
			return 0, io.EOF
		}
		return v, nil
	}
	v := binary.LittleEndian.Uint32(b) & 0x0FFFFFFF
	if v >= 0x0FFFFFF8 {
		return 0, io.EOF
	}
	return v, nil
}

// chain reads a cluster chain; want < 0 reads to the end of the chain
// (directories), otherwise want bytes.
func (fr *fatReader) chain(c uint32, want int64) ([]byte, error) {
	clus := fr.bytesPerSec * fr.secPerClus
	var out []byte
	for steps := uint32(0); ; steps++ {
		if c < 2 || c >= fr.clusterCount+2 || steps > fr.clusterCount {
			return nil, fmt.Errorf("bad cluster chain at cluster %d", c)
		}
		if int64(len(out)) > maxImageFile {
			return nil, fmt.Errorf("%w: cluster chain", ErrTooLarge)
		}
		b, err := readRange(fr.r, fr.dataOff+int64(c-2)*clus, clus)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		if want >= 0 && int64(len(out)) >= want {
			return out[:want], nil
		}
		n, err := fr.next(c)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		c = n
	}
	if want > int64(len(out)) {
		return nil, fmt.Errorf("file of %d bytes has a chain of %d", want, len(out))
	}
	return out, nil
}

func (fr *fatReader) fill(node *imageNode, data []byte, depth int) error {
	if depth > maxImageDepth {
		return fmt.Errorf("read FAT directory %q: nested deeper than %d", node.name, maxImageDepth)
	}
	var lfn []uint16
	var lfnParts int
	for off := 0; off+32 <= len(data); off += 32 {
		e := data[off : off+32]
		if e[0] == 0 {
			break
		}
		if e[0] == 0xE5 {
			lfn = nil
			continue
		}
		attr := e[11]
		if attr&0x3F == 0x0F {
			ord := int(e[0] & 0x3F)
			if e[0]&0x40 != 0 {
				lfn = make([]uint16, 13*ord)
				lfnParts = ord
			}
			if ord < 1 || ord > lfnParts || lfn == nil {
				lfn = nil
				continue
			}
			base := (ord - 1) * 13
			idx := 0
			for _, r := range [][2]int{{1, 11}, {14, 26}, {28, 32}} {
				for p := r[0]; p < r[1]; p += 2 {
					lfn[base+idx] = binary.LittleEndian.Uint16(e[p:])
					idx++
				}
			}
			continue
		}
		if attr&0x08 != 0 { // volume label
			lfn = nil
			continue
		}
		name := fatShortName(e)
		if lfn != nil {
			end := len(lfn)
			for i, u := range lfn {
				if u == 0 || u == 0xFFFF {
					end = i
					break
				}
			}
			name = string(utf16.Decode(lfn[:end]))
			lfn = nil
		}
		if name == "." || name == ".." || name == "" {
			continue
		}
		if fr.entries++; fr.entries > maxImageEntries {
			return fmt.Errorf("read FAT: more than %d entries", maxImageEntries)
		}
		first := uint32(binary.LittleEndian.Uint16(e[20:]))<<16 | uint32(binary.LittleEndian.Uint16(e[26:]))
		if fr.bits != 32 {
			first &= 0xFFFF
		}
		size := int64(binary.LittleEndian.Uint32(e[28:]))
		if attr&0x10 != 0 {
			sub := &imageNode{name: name, dir: true}
			if first != 0 {
				d, err := fr.chain(first, -1)
				if err != nil {
					return fmt.Errorf("read FAT directory %q: %w", name, err)
				}
				if err := fr.fill(sub, d, depth+1); err != nil {
					return err
				}
			}
			node.children = append(node.children, sub)
			continue
		}
		node.children = append(node.children, &imageNode{name: name, size: size, read: func() ([]byte, error) {
			if size == 0 {
				return []byte{}, nil
			}
			return fr.chain(first, size)
		}})
	}
	return nil
}

// fatShortName renders an 8.3 name with the case flags Windows NT (and
// mkfs tools) set for all-lower-case names.
func fatShortName(e []byte) string {
	base := strings.TrimRight(string(e[0:8]), " ")
	ext := strings.TrimRight(string(e[8:11]), " ")
	if base != "" && base[0] == 0x05 {
		base = "\xe5" + base[1:]
	}
	if e[12]&0x08 != 0 {
		base = strings.ToLower(base)
	}
	if e[12]&0x10 != 0 {
		ext = strings.ToLower(ext)
	}
	if ext != "" {
		return base + "." + ext
	}
	return base
}
