package users

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// The subordinate id files, in the target: the uid and gid ranges that
// newuidmap/newgidmap let each user map in a user namespace (rootless
// containers).
const (
	SubUIDFile = "/etc/subuid"
	SubGIDFile = "/etc/subgid"
)

// nsswitchFile names the NSS service that holds subordinate ids ("subid:").
const nsswitchFile = "/etc/nsswitch.conf"

// SubIDRange is one entry of /etc/subuid or /etc/subgid: Owner may map
// Count ids from Start.
type SubIDRange struct {
	Owner        string
	Start, Count uint64
}

// subIDLine is one line of a subordinate id file; entry is nil for a line
// that is not an entry (comment, blank, NIS, malformed), which is kept
// verbatim and never allocated around.
type subIDLine struct {
	raw   string
	entry *SubIDRange
	// nis marks a "+"/"-" line: shadow-utils sorts only the lines above
	// the first one.
	nis bool
}

// maxSubIDLine is shadow-utils' buffer for one entry: a longer line is not
// an entry.
const maxSubIDLine = 1024

func parseSubIDLine(line string) *subIDLine {
	l := &subIDLine{raw: line}
	if line != "" && (line[0] == '+' || line[0] == '-') {
		l.nis = true
		return l
	}
	if len(line) >= maxSubIDLine {
		return l
	}
	// Fields past the third are ignored, as shadow-utils' parser does.
	fields := strings.SplitN(line, ":", 4)
	if len(fields) < 3 || fields[0] == "" || fields[1] == "" || fields[2] == "" {
		return l
	}
	start, ok1 := parseCULong(fields[1])
	count, ok2 := parseCULong(fields[2])
	if !ok1 || !ok2 {
		return l
	}
	l.entry = &SubIDRange{Owner: fields[0], Start: start, Count: count}
	return l
}

func parseSubIDLines(data []byte) []*subIDLine {
	if len(data) == 0 {
		return nil
	}
	var lines []*subIDLine
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		lines = append(lines, parseSubIDLine(line))
	}
	return lines
}

// ParseSubIDs returns the entries of an /etc/subuid or /etc/subgid text,
// read as shadow-utils reads them, skipping lines that are not entries.
func ParseSubIDs(data []byte) []SubIDRange {
	var out []SubIDRange
	for _, l := range parseSubIDLines(data) {
		if l.entry != nil {
			out = append(out, *l.entry)
		}
	}
	return out
}

// parseCULong reads a number as shadow-utils' getulong: C's strtoll with
// base 0 (leading blanks, a sign, 0x for hex, a leading 0 for octal), the
// whole string, no overflow; a negative number wraps to unsigned as C
// converts it.
func parseCULong(s string) (uint64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	negative := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		negative = s[0] == '-'
		s = s[1:]
	}
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	// ParseUint with an explicit base takes neither a sign nor "_".
	magnitude, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	if negative {
		if magnitude > 1<<63 {
			return 0, false
		}
		return -magnitude, true
	}
	if magnitude > 1<<63-1 {
		return 0, false
	}
	return magnitude, true
}

// subIDFile is /etc/subuid or /etc/subgid as read.
type subIDFile struct {
	path string
	// present: useradd only grants ranges in a file that exists.
	present bool
	// readErr makes granting fail as useradd fails on an unreadable file.
	readErr  error
	lines    []*subIDLine
	original []byte
	changed  bool
	mode     fs.FileMode
	owner    rootfs.Owner
	// min, max and count are SUB_UID_* or SUB_GID_* of login.defs.
	min, max, count uint64
	// sorted is set while lines are what sorting them gives back
	// unchanged: entries only, in order. Then a grant needs no sort,
	// and the search for a free range resumes where the last one
	// ended (scanned lines, leaving low): each useradd sorts and walks
	// the whole file, which for n users in one run is O(n² log n).
	sorted  bool
	scanned int
	scanLow uint32
}

func readSubIDFile(root *rootfs.Root, path string) *subIDFile {
	f := &subIDFile{path: path}
	data, err := root.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f
	}
	f.present = true
	if err != nil {
		f.readErr = fmt.Errorf("read %s: %w", path, err)
		return f
	}
	fi, err := root.Stat(path)
	if err != nil {
		f.readErr = fmt.Errorf("read %s: %w", path, err)
		return f
	}
	f.lines, f.original = parseSubIDLines(data), data
	// shadow-utils gives the rewritten file and its backup the old one's
	// mode and owner.
	f.mode, f.owner = fi.Mode().Perm(), statOwnerOrKeep(fi)
	return f
}

func statOwnerOrKeep(fi fs.FileInfo) rootfs.Owner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return rootfs.Owner{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return rootfs.KeepOwner
}

func (f *subIDFile) bytes() []byte {
	var b strings.Builder
	for _, l := range f.lines {
		b.WriteString(l.raw)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// subIDs is what Open reads for useradd's subordinate id grants.
type subIDs struct {
	uids, gids *subIDFile
	// elsewhere is set when nsswitch.conf hands subordinate ids to an NSS
	// module: useradd then leaves the files alone.
	elsewhere bool
}

func openSubIDs(root *rootfs.Root) (*subIDs, error) {
	defs, err := root.ReadFile("/etc/login.defs")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read useradd settings: %w", err)
	}
	settings := parseSettings(defs)
	s := &subIDs{uids: readSubIDFile(root, SubUIDFile), gids: readSubIDFile(root, SubGIDFile)}
	for _, spec := range []struct {
		file   *subIDFile
		prefix string
	}{{s.uids, "SUB_UID_"}, {s.gids, "SUB_GID_"}} {
		spec.file.min = settingULong(settings, spec.prefix+"MIN", 100000)
		spec.file.max = settingULong(settings, spec.prefix+"MAX", 600100000)
		spec.file.count = settingULong(settings, spec.prefix+"COUNT", 65536)
	}
	nss, err := root.ReadFile(nsswitchFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", nsswitchFile, err)
	}
	s.elsewhere = subIDService(nss) != "files"
	return s, nil
}

// settingULong reads key as getdef_ulong: def when absent or unparsable.
func settingULong(s settings, key string, def uint64) uint64 {
	v, ok := s[key]
	if !ok {
		return def
	}
	n, ok := parseCULong(v)
	if !ok {
		return def
	}
	return n
}

// subIDService is the first service of nsswitch.conf's "subid:" line, or
// "files" when there is none, as shadow-utils reads it.
func subIDService(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || len(line) < 6 || !strings.EqualFold(line[:6], "subid:") {
			continue
		}
		if fields := strings.Fields(line[6:]); len(fields) > 0 {
			return fields[0]
		}
	}
	return "files"
}

// subIDGrant is the ranges planned for a new user, recorded by commit once
// the user is added.
type subIDGrant struct {
	uids, gids *subIDAlloc
}

// wants reports whether useradd grants f's ranges to a user: a regular
// user (not -r) whose uid, when given, lies in UID_MIN-UID_MAX, and a file
// that exists. A uid of 0 counts as not given, as in useradd.
func (s *subIDs) wants(f *subIDFile, system bool, uid int, policy Policy) bool {
	if s.elsewhere || !f.present || f.count == 0 || system {
		return false
	}
	return uid <= 0 || (uid >= policy.UIDMin && uid <= policy.UIDMax)
}

// plan picks the new user's ranges as useradd's find_new_sub_uids and
// find_new_sub_gids do, changing nothing until commit.
func (s *subIDs) plan(system bool, uid int, policy Policy) (subIDGrant, error) {
	var g subIDGrant
	if s.wants(s.uids, system, uid, policy) {
		a, err := s.uids.allocate()
		if err != nil {
			return g, err
		}
		g.uids = &a
	}
	if s.wants(s.gids, system, uid, policy) {
		a, err := s.gids.allocate()
		if err != nil {
			return g, err
		}
		g.gids = &a
	}
	return g, nil
}

// commit appends name's planned ranges; the files keep the order that
// useradd's allocation sorted them into.
func (s *subIDs) commit(name string, g subIDGrant) {
	if g.uids != nil {
		s.uids.add(name, *g.uids)
	}
	if g.gids != nil {
		s.gids.add(name, *g.gids)
	}
}

func (f *subIDFile) add(name string, a subIDAlloc) {
	entry := &SubIDRange{Owner: name, Start: a.start, Count: f.count}
	line := &subIDLine{raw: fmt.Sprintf("%s:%d:%d", name, a.start, f.count), entry: entry}
	// A range that sorts last keeps sorted lines sorted, and the walk
	// that found it, past every line before it, stays valid.
	n := len(a.lines)
	f.sorted = a.inOrder && (n == 0 || compareSubIDLines(a.lines[n-1], line) <= 0)
	f.scanned, f.scanLow = 0, uint32(f.min)
	if f.sorted && a.walked == n {
		f.scanned, f.scanLow = a.walked, a.left
	}
	f.lines = append(a.lines, line)
	f.changed = true
}

// subIDAlloc is a free range found in a file, and what add needs to keep
// the next search short.
type subIDAlloc struct {
	start uint64
	// lines are the file's lines as shadow-utils leaves them (sorted).
	lines []*subIDLine
	// inOrder: lines are entries only, in order, so sorting them again
	// would change nothing.
	inOrder bool
	// walked lines were walked, leaving the search's low at left.
	walked int
	left   uint32
}

// allEntriesInOrder reports whether lines are entries only, sorted: what
// sortSubIDLines gives back as it is.
func allEntriesInOrder(lines []*subIDLine) bool {
	for i, l := range lines {
		if l.entry == nil || l.nis || (i > 0 && compareSubIDLines(lines[i-1], l) > 0) {
			return false
		}
	}
	return true
}

// allocate finds the first hole of f.count ids in [f.min, f.max] and
// returns it with f's lines in the order shadow-utils leaves them: it
// sorts the entries (by start, count, owner) before searching and writes
// them back so.
func (f *subIDFile) allocate() (subIDAlloc, error) {
	if f.readErr != nil {
		return subIDAlloc{}, fmt.Errorf("grant subordinate ids: %w", f.readErr)
	}
	min, max, count := f.min, f.max, f.count
	if min > max || count >= max || min+count-1 > max {
		return subIDAlloc{}, fmt.Errorf("grant subordinate ids in %s: invalid login.defs range: min %d, max %d, count %d", f.path, min, max, count)
	}
	a := subIDAlloc{lines: f.lines, inOrder: f.sorted}
	from, low := 0, uint32(min)
	if f.sorted {
		from, low = f.scanned, f.scanLow
	} else {
		a.lines = sortSubIDLines(f.lines)
		a.inOrder = allEntriesInOrder(a.lines)
	}
	start, ok, walked, left := findFreeSubIDRangeFrom(a.lines, from, low, uint32(min), uint32(max), count)
	if !ok {
		return subIDAlloc{}, fmt.Errorf("grant subordinate ids in %s: no free range of %d ids in %d-%d", f.path, count, min, max)
	}
	a.start, a.walked, a.left = uint64(start), walked, left
	return a, nil
}

// sortSubIDLines returns lines with the part above the first NIS line
// sorted as shadow-utils' commonio_sort does, through glibc's qsort (a
// merge sort) with its comparator, under which every non-entry compares
// greater than anything: non-entries sink to the bottom in an order that
// only this same merge reproduces.
func sortSubIDLines(lines []*subIDLine) []*subIDLine {
	out := append([]*subIDLine{}, lines...)
	n := 0
	for n < len(out) && !out[n].nis {
		n++
	}
	if n > 1 {
		mergeSortSubIDs(out[:n], make([]*subIDLine, n))
	}
	return out
}

func mergeSortSubIDs(b, tmp []*subIDLine) {
	n := len(b)
	if n <= 1 {
		return
	}
	n1 := n / 2
	b1, b2 := b[:n1], b[n1:]
	mergeSortSubIDs(b1, tmp)
	mergeSortSubIDs(b2, tmp)
	merged := tmp[:0]
	i, j := 0, 0
	for i < len(b1) && j < len(b2) {
		if compareSubIDLines(b1[i], b2[j]) <= 0 {
			merged = append(merged, b1[i])
			i++
		} else {
			merged = append(merged, b2[j])
			j++
		}
	}
	merged = append(merged, b1[i:]...)
	// What is left of b2 is already in place.
	copy(b, merged)
}

func compareSubIDLines(a, b *subIDLine) int {
	switch {
	case a.entry == nil:
		return 1
	case b.entry == nil:
		return -1
	case a.entry.Start != b.entry.Start:
		return cmpUint(a.entry.Start, b.entry.Start)
	case a.entry.Count != b.entry.Count:
		return cmpUint(a.entry.Count, b.entry.Count)
	}
	return strings.Compare(cStr(a.entry.Owner), cStr(b.entry.Owner))
}

func cmpUint(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// cStr is s as C's strcmp sees it: up to the first NUL.
func cStr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// findFreeSubIDRange is shadow-utils' find_free_range, in its 32-bit id
// arithmetic (ranges that wrap included): the lowest start of count free
// ids in [min, max], walking the entries in file order.
func findFreeSubIDRange(lines []*subIDLine, min, max uint32, count uint64) (uint32, bool) {
	start, ok, _, _ := findFreeSubIDRangeFrom(lines, 0, min, min, max, count)
	return start, ok
}

// findFreeSubIDRangeFrom is findFreeSubIDRange resumed after lines[:from],
// whose walk left low. It also returns how far the walk got and the low
// it left there: all of lines when the free range is after the last one.
func findFreeSubIDRangeFrom(lines []*subIDLine, from int, low, min, max uint32, count uint64) (start uint32, ok bool, walked int, left uint32) {
	if count == 0 || max < min {
		return 0, false, from, low
	}
	for i := from; i < len(lines); i++ {
		l := lines[i]
		if l.entry == nil {
			continue
		}
		first := uint32(l.entry.Start)
		last := uint32(uint64(first) + l.entry.Count - 1)
		high := first
		if high > max+1 {
			high = max + 1
		}
		if high > low && uint64(high-low) >= count {
			return low, low != ^uint32(0), i, low
		}
		if low < last+1 {
			low = last + 1
		}
		if low > max {
			return 0, false, i, low
		}
	}
	if uint64(max-low+1) >= count {
		return low, low != ^uint32(0), len(lines), low
	}
	return 0, false, len(lines), low
}

// pending writes a changed file's "-" backup of its previous content, as
// shadow-utils leaves, and returns the file for the account database's
// transaction.
func (f *subIDFile) pending(root *rootfs.Root) ([]pendingFile, error) {
	if !f.changed {
		return nil, nil
	}
	if err := root.WriteFile(f.path+"-", f.original, f.mode, f.owner); err != nil {
		return nil, fmt.Errorf("back up %s: %w", f.path, err)
	}
	data := f.bytes()
	return []pendingFile{{path: f.path, data: data, mode: f.mode, owner: f.owner,
		saved: func() { f.original, f.changed = data, false }}}, nil
}

func (s *subIDs) pending(root *rootfs.Root) ([]pendingFile, error) {
	uids, err1 := s.uids.pending(root)
	gids, err2 := s.gids.pending(root)
	return append(uids, gids...), errors.Join(err1, err2)
}

// SubordinateIDs returns name's ranges in /etc/subuid and /etc/subgid as
// they stand in the database (saved or not).
func (db *DB) SubordinateIDs(name string) (uids, gids []SubIDRange) {
	collect := func(f *subIDFile) []SubIDRange {
		var out []SubIDRange
		for _, l := range f.lines {
			if l.entry != nil && l.entry.Owner == name {
				out = append(out, *l.entry)
			}
		}
		return out
	}
	return collect(db.subIDs.uids), collect(db.subIDs.gids)
}
