package users

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// The account database files, in the target.
const (
	PasswdFile  = "/etc/passwd"
	ShadowFile  = "/etc/shadow"
	GroupFile   = "/etc/group"
	GshadowFile = "/etc/gshadow"
)

// ErrNotFound is wrapped by lookups of a user or group that does not exist.
var ErrNotFound = errors.New("not found")

// Passwd is one /etc/passwd entry.
type Passwd struct {
	Name     string
	Password string
	UID, GID int
	Gecos    string
	Home     string
	Shell    string
}

// Group is one /etc/group entry.
type Group struct {
	Name     string
	Password string
	GID      int
	Members  []string
}

// record is one line of a database file. fields is nil for a line that is
// not an entry (comment, NIS "+"/"-" line, malformed): such lines are kept
// verbatim and never matched by name.
type record struct {
	raw    string
	fields []string
	dirty  bool
	// members, once a member was added, is the member list (field 3 of
	// a group or gshadow entry) as a list and a set; fields[3] is then
	// out of date until sync. Adding the n-th member of a group is
	// otherwise O(n): split, search and join again.
	members *memberList
}

type memberList struct {
	names   []string
	has     map[string]bool
	changed bool // a member was added: fields[3] is out of date
}

// sync brings fields[3] up to date with members.
func (r *record) sync() {
	if r.members != nil && r.members.changed {
		r.fields[3] = strings.Join(r.members.names, ",")
		r.members.changed = false
	}
}

func (r *record) String() string {
	if r.dirty {
		r.sync()
		return strings.Join(r.fields, ":")
	}
	return r.raw
}

// table is one colon-separated database file as read, edited in place so
// that a rewrite keeps order and every line it did not touch.
type table struct {
	path    string
	nfields int
	exists  bool
	records []*record
	changed bool
	// byName is the first entry of each name, as find returns it: a
	// lookup per user must not scan the file, or n users cost O(n²).
	byName map[string]*record
	// ids is the id field's values (passwd's uid, group's gid) once
	// asked for, kept up to date as entries are added.
	ids *idSet
	// original is the content as read, for the "-" backup shadow-utils keeps.
	original []byte
	mode     fs.FileMode
	owner    rootfs.Owner
}

// parseTable splits data into records. Entries need exactly nfields
// fields; /etc/shadow lines of 8 fields (no reserved field) are accepted
// as shadow-utils accepts them.
func parseTable(path string, nfields int, data []byte) *table {
	t := &table{path: path, nfields: nfields, original: data, byName: map[string]*record{}}
	if len(data) == 0 {
		return t
	}
	text := strings.TrimSuffix(string(data), "\n")
	for _, line := range strings.Split(text, "\n") {
		r := &record{raw: line}
		if line != "" && !strings.ContainsAny(line[:1], "#+-") {
			fields := strings.Split(line, ":")
			if len(fields) == nfields-1 && nfields == 9 {
				fields = append(fields, "")
			}
			if len(fields) == nfields && fields[0] != "" && validNumbers(path, fields) {
				r.fields = fields
				if _, seen := t.byName[fields[0]]; !seen {
					t.byName[fields[0]] = r
				}
			}
		}
		t.records = append(t.records, r)
	}
	return t
}

// validNumbers checks the numeric id fields that lookups rely on.
func validNumbers(path string, fields []string) bool {
	switch path {
	case PasswdFile:
		return isID(fields[2]) && isID(fields[3])
	case GroupFile:
		return isID(fields[2])
	}
	return true
}

func isID(s string) bool {
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n < 1<<32-1
}

func (t *table) bytes() []byte {
	var b strings.Builder
	for _, r := range t.records {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func (t *table) find(name string) *record { return t.byName[name] }

func (t *table) add(fields []string) {
	r := &record{fields: fields, dirty: true}
	t.records = append(t.records, r)
	if _, seen := t.byName[fields[0]]; !seen {
		t.byName[fields[0]] = r
	}
	if t.ids != nil {
		if n, err := strconv.Atoi(fields[idField]); err == nil {
			t.ids.add(n)
		}
	}
	t.changed = true
}

func (t *table) set(r *record, i int, value string) {
	if i == 3 {
		r.sync()
		r.members = nil
	}
	if r.fields[i] == value {
		return
	}
	r.fields[i] = value
	r.dirty = true
	t.changed = true
	if i == idField {
		t.ids = nil
	}
}

// idField is the id field of passwd and group entries.
const idField = 2

// usedIDs is the set of ids in t's id field.
func (t *table) usedIDs() *idSet {
	if t.ids == nil {
		used := map[int]bool{}
		for _, r := range t.records {
			if r.fields == nil {
				continue
			}
			if n, err := strconv.Atoi(r.fields[idField]); err == nil {
				used[n] = true
			}
		}
		t.ids = newIDSet(used)
	}
	return t.ids
}

func (r *record) passwd() Passwd {
	uid, _ := strconv.Atoi(r.fields[2])
	gid, _ := strconv.Atoi(r.fields[3])
	return Passwd{Name: r.fields[0], Password: r.fields[1], UID: uid, GID: gid, Gecos: r.fields[4], Home: r.fields[5], Shell: r.fields[6]}
}

func (r *record) group() Group {
	r.sync()
	gid, _ := strconv.Atoi(r.fields[2])
	return Group{Name: r.fields[0], Password: r.fields[1], GID: gid, Members: splitMembers(r.fields[3])}
}

func splitMembers(s string) []string {
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// ParsePasswd returns the entries of an /etc/passwd text, skipping lines
// that are not entries.
func ParsePasswd(data []byte) []Passwd {
	var out []Passwd
	for _, r := range parseTable(PasswdFile, 7, data).records {
		if r.fields != nil {
			out = append(out, r.passwd())
		}
	}
	return out
}

// ParseGroup returns the entries of an /etc/group text.
func ParseGroup(data []byte) []Group {
	var out []Group
	for _, r := range parseTable(GroupFile, 4, data).records {
		if r.fields != nil {
			out = append(out, r.group())
		}
	}
	return out
}

// Shadow is one /etc/shadow entry; the day counts are kept as written
// (empty means "not set").
type Shadow struct {
	Name, Password                                         string
	LastChange, Min, Max, Warn, Inactive, Expire, Reserved string
}

// ParseShadow returns the entries of an /etc/shadow text.
func ParseShadow(data []byte) []Shadow {
	var out []Shadow
	for _, r := range parseTable(ShadowFile, 9, data).records {
		if f := r.fields; f != nil {
			out = append(out, Shadow{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]})
		}
	}
	return out
}

// DB is the target's account database, read whole, edited in memory and
// written back by Save. Hold the lock (Lock) from Open to Save.
type DB struct {
	root                           *rootfs.Root
	Policy                         Policy
	passwd, shadow, group, gshadow *table
	// now is the clock for "last password change" days.
	now func() time.Time
	// subIDs are /etc/subuid and /etc/subgid, where useradd grants new
	// users their ranges.
	subIDs *subIDs
	// memberOf indexes the groups' member lists for GroupsOf; nil when
	// the groups changed since it was built.
	memberOf map[string][]string
	// Recovered is set when Open finished the account change of a run
	// that a power cut stopped (see Save).
	Recovered bool
	// homes are the users created whose homes are still to be made, as
	// saved with them (see PendHome).
	homes *pendingHomes
}

// rootAccount is the superuser's entry in an account database seedinit
// starts from nothing: uid 0 is root to the kernel whatever the files say,
// and sshd, sudo and the ssh module look root up by name. Its password is
// locked, as Debian's base-passwd leaves it.
var rootAccount = Passwd{Name: "root", Password: "x", UID: 0, GID: 0, Gecos: "root", Home: "/root", Shell: "/bin/sh"}

// Open reads the four database files and the useradd policy of root. A
// missing /etc/shadow or /etc/gshadow stays missing (passwords then live
// in /etc/passwd, as shadow-utils and busybox do without it), unless the
// root has no /etc/passwd at all: a fresh root (a u-root initramfs has
// none) gets all four, with root in them.
func Open(root *rootfs.Root) (*DB, error) {
	policy, err := LoadPolicy(root)
	if err != nil {
		return nil, err
	}
	db := &DB{root: root, Policy: policy, now: now}
	if db.Recovered, err = recoverAccounts(root); err != nil {
		return nil, err
	}
	specs := []struct {
		dst     **table
		path    string
		nfields int
	}{
		{&db.passwd, PasswdFile, 7}, {&db.shadow, ShadowFile, 9},
		{&db.group, GroupFile, 4}, {&db.gshadow, GshadowFile, 4},
	}
	for _, s := range specs {
		t, err := readTable(root, s.path, s.nfields)
		if err != nil {
			return nil, err
		}
		*s.dst = t
	}
	fresh := !db.passwd.exists
	if fresh {
		db.shadow.exists, db.gshadow.exists = true, true
	}
	db.passwd.exists, db.group.exists = true, true
	if fresh {
		db.addRootAccount()
	}
	if db.subIDs, err = openSubIDs(root); err != nil {
		return nil, err
	}
	if db.homes, err = readPendingHomes(root); err != nil {
		return nil, err
	}
	shadowGID, shadowMode := 0, fs.FileMode(0o600)
	if g := db.group.find("shadow"); g != nil {
		shadowGID, shadowMode = g.group().GID, 0o640
	}
	shadowOwner := ownedBy(0, shadowGID)
	for _, t := range []*table{db.shadow, db.gshadow} {
		if t.original == nil {
			t.mode, t.owner = shadowMode, shadowOwner
		}
	}
	return db, nil
}

// addRootAccount puts root in a fresh database, in each file that lacks
// it: without it, new users would be the only accounts on the system.
func (db *DB) addRootAccount() {
	r := rootAccount
	if db.group.find(r.Name) == nil {
		db.group.add([]string{r.Name, "x", strconv.Itoa(r.GID), ""})
	}
	if db.gshadow.find(r.Name) == nil {
		db.gshadow.add([]string{r.Name, "*", "", ""})
	}
	if db.passwd.find(r.Name) == nil {
		db.passwd.add([]string{r.Name, r.Password, strconv.Itoa(r.UID), strconv.Itoa(r.GID), r.Gecos, r.Home, r.Shell})
	}
	if db.shadow.find(r.Name) == nil {
		db.shadow.add([]string{r.Name, "*", db.today(), "0", "99999", "7", "", "", ""})
	}
}

func readTable(root *rootfs.Root, path string, nfields int) (*table, error) {
	data, err := root.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t := parseTable(path, nfields, nil)
		t.mode, t.owner = 0o644, ownedBy(0, 0)
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read account database: %w", err)
	}
	t := parseTable(path, nfields, data)
	t.exists = true
	if t.original == nil {
		t.original = []byte{}
	}
	fi, err := root.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read account database: %w", err)
	}
	// shadow-utils gives the rewritten file the old one's mode and owner.
	t.mode = fi.Mode().Perm()
	t.owner = rootfs.KeepOwner
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		t.owner = rootfs.Owner{UID: int(st.Uid), GID: int(st.Gid)}
	}
	return t, nil
}

// Save writes the files that changed as one transaction (see
// saveTogether), each with a "-" backup of its previous content as
// shadow-utils leaves.
func (db *DB) Save() error {
	var files []pendingFile
	var errs []error
	for _, t := range []*table{db.group, db.gshadow, db.passwd, db.shadow} {
		if !t.changed || !t.exists {
			continue
		}
		if t.original != nil && string(t.bytes()) == string(t.original) {
			t.changed = false
			continue
		}
		if len(t.original) > 0 {
			if err := db.root.WriteFile(t.path+"-", t.original, t.mode, t.owner); err != nil {
				errs = append(errs, fmt.Errorf("back up account database: %w", err))
				continue
			}
		}
		data := t.bytes()
		files = append(files, pendingFile{path: t.path, data: data, mode: t.mode, owner: t.owner,
			saved: func() { t.original, t.changed = data, false }})
	}
	sub, err := db.subIDs.pending(db.root)
	files = append(files, sub...)
	errs = append(errs, err)
	if f, ok := db.homes.pending(); ok {
		files = append(files, f)
	}
	if err := saveTogether(db.root, files); err != nil {
		errs = append(errs, fmt.Errorf("save account database: %w", err))
	}
	return errors.Join(errs...)
}

// User returns the passwd entry of name.
func (db *DB) User(name string) (Passwd, bool) {
	if r := db.passwd.find(name); r != nil {
		return r.passwd(), true
	}
	return Passwd{}, false
}

// Group returns the group entry of name.
func (db *DB) Group(name string) (Group, bool) {
	if r := db.group.find(name); r != nil {
		return r.group(), true
	}
	return Group{}, false
}

// groupGID is Group(name)'s GID, without the member list that Group
// copies: the lookups made for each new user must not cost O(members).
func (db *DB) groupGID(name string) (int, bool) {
	r := db.group.find(name)
	if r == nil {
		return 0, false
	}
	gid, _ := strconv.Atoi(r.fields[2])
	return gid, true
}

// GroupByID returns the first group with gid.
func (db *DB) GroupByID(gid int) (Group, bool) {
	for _, r := range db.group.records {
		if r.fields == nil {
			continue
		}
		if n, err := strconv.Atoi(r.fields[2]); err == nil && n == gid {
			return r.group(), true
		}
	}
	return Group{}, false
}

// GroupsOf lists the groups that name is a listed member of, in the
// file's order. The lists come from an index of every group's members,
// built once for as long as the groups do not change: looking each user
// up in every group's list costs O(users × members).
func (db *DB) GroupsOf(name string) []string {
	if db.memberOf == nil {
		db.memberOf = map[string][]string{}
		for _, r := range db.group.records {
			if r.fields == nil {
				continue
			}
			r.sync()
			seen := map[string]bool{}
			for _, m := range splitMembers(r.fields[3]) {
				if !seen[m] {
					seen[m] = true
					db.memberOf[m] = append(db.memberOf[m], r.fields[0])
				}
			}
		}
	}
	return append([]string(nil), db.memberOf[name]...)
}

// Lookup reads the target's /etc/passwd and returns name's entry; an
// absent user gives an error wrapping ErrNotFound. A target with no
// /etc/passwd at all (a u-root initramfs) still has root, uid 0 with
// /root as its home, as a fresh database gets it.
func Lookup(root *rootfs.Root, name string) (Passwd, error) {
	data, err := root.ReadFile(PasswdFile)
	if errors.Is(err, fs.ErrNotExist) && name == rootAccount.Name {
		return rootAccount, nil
	}
	if err != nil {
		return Passwd{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	for _, p := range ParsePasswd(data) {
		if p.Name == name {
			return p, nil
		}
	}
	return Passwd{}, fmt.Errorf("look up user %s: %w", name, ErrNotFound)
}

// validName accepts what Debian's useradd and groupadd accept, and above
// all nothing that could break a database line.
func validName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty", kind)
	case len(name) > 32:
		return fmt.Errorf("%s name %q is longer than 32 characters", kind, name)
	case name == "." || name == "..":
		return fmt.Errorf("%s name %q is not allowed", kind, name)
	case strings.ContainsAny(name[:1], "-+~"):
		return fmt.Errorf("%s name %q starts with %q", kind, name, name[:1])
	case isDigits(name):
		return fmt.Errorf("%s name %q is all digits", kind, name)
	}
	for _, c := range name {
		if c <= ' ' || c == 0x7f || c == ':' || c == ',' || c == '/' || c == '\\' {
			return fmt.Errorf("%s name %q contains %q", kind, name, c)
		}
	}
	return nil
}

// validField rejects what would break a database line or the table.
func validField(key, value string) error {
	if strings.ContainsAny(value, ":\n\r\x00") {
		return fmt.Errorf("%s must not contain ':' or a line break", key)
	}
	return nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func (db *DB) today() string {
	days := db.now().Unix() / 86400
	if days == 0 {
		return ""
	}
	return strconv.FormatInt(days, 10)
}

func optionalDays(n int) string {
	if n < 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// allocate picks a free id as shadow-utils' find_new_uid/gid do: regular
// ids go one above the highest used in [lo, hi], system ids one below the
// lowest used; when that falls outside the range, the first free id is
// searched from the range's start (upward, or downward for system ids).
func allocate(used map[int]bool, lo, hi int, system bool) (int, error) {
	return newIDSet(used).allocate(lo, hi, system)
}

// idSet is a set of used ids that answers "the lowest and highest used id
// in [lo, hi]" without a scan once asked: allocating n ids one after the
// other must not cost O(n²).
type idSet struct {
	used map[int]bool
	// extents caches the lowest and highest used id of each range asked
	// about; a range with none has lo > hi.
	extents map[[2]int][2]int
	// full caches how far from its start (up for regular ids, down for
	// system ones) a range is known to be used without a hole: ids are
	// only ever added, so a search for the first free id resumes there.
	full map[[3]int]int
}

func newIDSet(used map[int]bool) *idSet {
	return &idSet{used: used, extents: map[[2]int][2]int{}, full: map[[3]int]int{}}
}

// firstFree is the first unused id of [lo, hi] searching from lo upward,
// or from hi downward; ok is false when there is none.
func (s *idSet) firstFree(lo, hi int, down bool) (int, bool) {
	key := [3]int{lo, hi, 0}
	step, id := 1, lo
	if down {
		key[2], step, id = 1, -1, hi
	}
	if at, ok := s.full[key]; ok {
		id = at
	}
	for ; id >= lo && id <= hi; id += step {
		if !s.used[id] {
			s.full[key] = id
			return id, true
		}
	}
	s.full[key] = id
	return 0, false
}

func (s *idSet) add(id int) {
	s.used[id] = true
	for rng, ext := range s.extents {
		if id < rng[0] || id > rng[1] {
			continue
		}
		if ext[0] > ext[1] {
			ext = [2]int{id, id}
		}
		s.extents[rng] = [2]int{min(ext[0], id), max(ext[1], id)}
	}
}

// extent is the lowest and highest used id in [lo, hi] (lo > hi: none).
func (s *idSet) extent(lo, hi int) (int, int) {
	rng := [2]int{lo, hi}
	if ext, ok := s.extents[rng]; ok {
		return ext[0], ext[1]
	}
	ext := [2]int{hi + 1, lo - 1}
	for id := range s.used {
		if id >= lo && id <= hi {
			ext = [2]int{min(ext[0], id), max(ext[1], id)}
		}
	}
	s.extents[rng] = ext
	return ext[0], ext[1]
}

func (s *idSet) allocate(lo, hi int, system bool) (int, error) {
	if lo > hi {
		return 0, fmt.Errorf("id range %d-%d is empty", lo, hi)
	}
	low, high := s.extent(lo, hi)
	if system {
		candidate := hi
		if low <= high {
			candidate = low - 1
		}
		if candidate >= lo && !s.used[candidate] {
			return candidate, nil
		}
		if id, ok := s.firstFree(lo, hi, true); ok {
			return id, nil
		}
	} else {
		candidate := lo
		if low <= high {
			candidate = high + 1
		}
		if candidate <= hi && !s.used[candidate] {
			return candidate, nil
		}
		if id, ok := s.firstFree(lo, hi, false); ok {
			return id, nil
		}
	}
	return 0, fmt.Errorf("no free id in %d-%d", lo, hi)
}

// AddGroup creates a group as groupadd does (gid -1: allocate one) and
// returns it; the group must not exist yet.
func (db *DB) AddGroup(name string, gid int, system bool) (Group, error) {
	return db.addGroup(name, gid, system, -1)
}

func (db *DB) addGroup(name string, gid int, system bool, preferred int) (Group, error) {
	if err := validName("group", name); err != nil {
		return Group{}, fmt.Errorf("add group: %w", err)
	}
	if _, exists := db.groupGID(name); exists {
		return Group{}, fmt.Errorf("add group %s: it exists already", name)
	}
	used := db.group.usedIDs()
	if gid < 0 {
		lo, hi := db.Policy.GIDMin, db.Policy.GIDMax
		if system {
			lo, hi = db.Policy.SysGIDMin, db.Policy.SysGIDMax
		}
		// useradd lets a system user's own group take the uid's number
		// below SYS_GID_MIN (find_new_gid's "preferred_min" of 1); a
		// regular group keeps to GID_MIN-GID_MAX.
		preferredMin := lo
		if system {
			preferredMin = 1
		}
		if preferred >= preferredMin && preferred <= hi && !used.used[preferred] {
			gid = preferred
		} else {
			var err error
			if gid, err = used.allocate(lo, hi, system); err != nil {
				return Group{}, fmt.Errorf("add group %s: %w", name, err)
			}
		}
	} else if used.used[gid] {
		return Group{}, fmt.Errorf("add group %s: gid %d is in use", name, gid)
	}
	db.group.add([]string{name, "x", strconv.Itoa(gid), ""})
	db.memberOf = nil
	if db.gshadow.exists {
		db.gshadow.add([]string{name, "!", "", ""})
	}
	return Group{Name: name, Password: "x", GID: gid}, nil
}

// AddGroupMember lists user as a member of group (in /etc/group and, when
// the group has one, its /etc/gshadow entry). It reports whether anything
// changed: a member already listed is left alone.
func (db *DB) AddGroupMember(group, user string) (bool, error) {
	r := db.group.find(group)
	if r == nil {
		return false, fmt.Errorf("add %s to group %s: group %w", user, group, ErrNotFound)
	}
	changed := addMember(db.group, r, 3, user)
	if changed {
		db.memberOf = nil
	}
	if g := db.gshadow.find(group); g != nil && db.gshadow.exists {
		if addMember(db.gshadow, g, 3, user) {
			changed = true
		}
	}
	return changed, nil
}

func addMember(t *table, r *record, field int, user string) bool {
	if r.members == nil {
		names := splitMembers(r.fields[field])
		has := make(map[string]bool, len(names))
		for _, m := range names {
			has[m] = true
		}
		r.members = &memberList{names: names, has: has}
	}
	if r.members.has[user] {
		return false
	}
	// As before this kept a list and a set, the whole list was split
	// and joined again: spaces and empty names around commas go.
	r.members.names = append(r.members.names, user)
	r.members.has[user] = true
	r.members.changed = true
	r.dirty = true
	t.changed = true
	return true
}

// NewUser is what useradd is told about a user to create.
type NewUser struct {
	Name string
	// UID is -1 to allocate one.
	UID int
	// PrimaryGroup is a group name or number; empty means a group of the
	// user's own name (USERGROUPS_ENAB) or useradd's default GROUP.
	PrimaryGroup string
	// Groups are supplementary groups; they must exist.
	Groups []string
	Gecos  string
	// Home empty means HOME/name from /etc/default/useradd.
	Home  string
	Shell string
	// Password is the password field as given (a crypt hash); empty
	// means "!", an account without a usable password.
	Password    string
	System      bool
	NoUserGroup bool
	// ExpireDate is YYYY-MM-DD or a day number; empty means none.
	ExpireDate string
	// Inactive is days after expiry before the account is disabled; nil
	// means useradd's default.
	Inactive *int
}

// AddUser creates a user as useradd does, without touching the home
// directory (see CreateHome).
func (db *DB) AddUser(u NewUser) (Passwd, error) {
	if err := validName("user", u.Name); err != nil {
		return Passwd{}, fmt.Errorf("add user: %w", err)
	}
	fail := func(err error) (Passwd, error) { return Passwd{}, fmt.Errorf("add user %s: %w", u.Name, err) }
	if _, exists := db.User(u.Name); exists {
		return fail(errors.New("it exists already"))
	}
	for key, value := range map[string]string{"gecos": u.Gecos, "homedir": u.Home, "shell": u.Shell, "passwd": u.Password, "expiredate": u.ExpireDate} {
		if err := validField(key, value); err != nil {
			return fail(err)
		}
	}
	if u.Home != "" && !strings.HasPrefix(u.Home, "/") {
		return fail(fmt.Errorf("homedir %q is not an absolute path", u.Home))
	}
	expire := ""
	if u.ExpireDate != "" && u.ExpireDate != "-1" {
		days, err := parseDay(u.ExpireDate)
		if err != nil {
			return fail(err)
		}
		expire = strconv.Itoa(days)
	} else if u.ExpireDate == "" && db.Policy.DefaultExpire != "" {
		if days, err := parseDay(db.Policy.DefaultExpire); err == nil {
			expire = strconv.Itoa(days)
		}
	}
	for _, g := range u.Groups {
		if _, ok := db.groupGID(g); !ok {
			return fail(fmt.Errorf("supplementary group %s does not exist", g))
		}
	}

	usedUIDs := db.passwd.usedIDs()
	uid := u.UID
	if uid < 0 {
		lo, hi := db.Policy.UIDMin, db.Policy.UIDMax
		if u.System {
			lo, hi = db.Policy.SysUIDMin, db.Policy.SysUIDMax
		}
		var err error
		if uid, err = usedUIDs.allocate(lo, hi, u.System); err != nil {
			return fail(err)
		}
	} else if usedUIDs.used[uid] {
		return fail(fmt.Errorf("uid %d is in use", uid))
	}
	// Planned before anything changes: useradd creates no user it cannot
	// grant subordinate ids to.
	grant, err := db.subIDs.plan(u.System, u.UID, db.Policy)
	if err != nil {
		return fail(err)
	}

	gid := db.Policy.DefaultGroup
	switch {
	case u.PrimaryGroup != "":
		id, ok := db.groupGID(u.PrimaryGroup)
		if !ok && isDigits(u.PrimaryGroup) {
			n, _ := strconv.Atoi(u.PrimaryGroup)
			var g Group
			g, ok = db.GroupByID(n)
			id = g.GID
		}
		if !ok {
			return fail(fmt.Errorf("primary group %s does not exist", u.PrimaryGroup))
		}
		gid = id
	case db.Policy.UserGroups && !u.NoUserGroup:
		if _, exists := db.groupGID(u.Name); exists {
			return fail(fmt.Errorf("a group named %s exists already (name it as primary_group to use it)", u.Name))
		}
		g, err := db.addGroup(u.Name, -1, u.System, uid)
		if err != nil {
			return fail(err)
		}
		gid = g.GID
	}

	home := u.Home
	if home == "" {
		home = strings.TrimSuffix(db.Policy.HomeBase, "/") + "/" + u.Name
	}
	shell := u.Shell
	if shell == "" {
		shell = db.Policy.DefaultShell
	}
	password := u.Password
	if password == "" {
		password = "!"
	}
	p := Passwd{Name: u.Name, Password: "x", UID: uid, GID: gid, Gecos: u.Gecos, Home: home, Shell: shell}
	if !db.shadow.exists {
		p.Password = password
	}
	db.passwd.add([]string{p.Name, p.Password, strconv.Itoa(uid), strconv.Itoa(gid), p.Gecos, p.Home, p.Shell})
	if db.shadow.exists {
		inactive := db.Policy.DefaultInactive
		if u.Inactive != nil {
			inactive = *u.Inactive
		}
		// useradd -r leaves a system account without ageing, inactivity
		// or expiry, even when -e or -f were given.
		minDays, maxDays, warn, inactiveDays := "", "", "", ""
		if !u.System {
			minDays, maxDays, warn = optionalDays(db.Policy.PassMinDays), optionalDays(db.Policy.PassMaxDays), optionalDays(db.Policy.PassWarnAge)
			inactiveDays = optionalDays(inactive)
		} else {
			expire = ""
		}
		db.shadow.add([]string{u.Name, password, db.today(), minDays, maxDays, warn, inactiveDays, expire, ""})
	}
	for _, g := range u.Groups {
		if _, err := db.AddGroupMember(g, u.Name); err != nil {
			return fail(err)
		}
	}
	db.subIDs.commit(u.Name, grant)
	return p, nil
}

// parseDay reads a date as useradd's strtoday: YYYY-MM-DD, or a number of
// days since 1970-01-01.
func parseDay(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, fmt.Errorf("expiredate %q: want YYYY-MM-DD", s)
	}
	return int(t.Unix() / 86400), nil
}

// passwordRecord is where name's password lives: its shadow entry, or its
// passwd entry on a system without /etc/shadow.
func (db *DB) passwordRecord(name string) (*table, *record, error) {
	if db.shadow.exists {
		if r := db.shadow.find(name); r != nil {
			return db.shadow, r, nil
		}
	}
	r := db.passwd.find(name)
	if r == nil {
		return nil, nil, fmt.Errorf("user %s %w", name, ErrNotFound)
	}
	if db.shadow.exists && r.fields[1] == "x" {
		// useradd would have made one; pwconv makes a missing one so.
		db.shadow.add([]string{name, "!", "", "", "", "", "", "", ""})
		return db.shadow, db.shadow.records[len(db.shadow.records)-1], nil
	}
	return db.passwd, r, nil
}

// PasswordHash returns the password field of name (from shadow when it
// has one).
func (db *DB) PasswordHash(name string) (string, error) {
	_, r, err := db.passwordRecord(name)
	if err != nil {
		return "", err
	}
	return r.fields[1], nil
}

// SetPassword sets name's password field to hashed and, as chpasswd does,
// the last change to today. A field that already holds hashed is left
// alone, so that re-running keeps the day of the real change.
func (db *DB) SetPassword(name, hashed string) error {
	if err := validField("password hash", hashed); err != nil {
		return fmt.Errorf("set password of %s: %w", name, err)
	}
	t, r, err := db.passwordRecord(name)
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	if strings.TrimLeft(r.fields[1], "!") == hashed {
		// The same password, maybe locked: unlocking is all chpasswd would
		// change, and the day of the real change stays.
		t.set(r, 1, hashed)
		return nil
	}
	t.set(r, 1, hashed)
	if t == db.shadow {
		t.set(r, 2, db.today())
	}
	return nil
}

// LockPassword disables password logins as `passwd -l` does: a "!" in
// front of the hash, once.
func (db *DB) LockPassword(name string) error {
	t, r, err := db.passwordRecord(name)
	if err != nil {
		return fmt.Errorf("lock password: %w", err)
	}
	if !strings.HasPrefix(r.fields[1], "!") {
		t.set(r, 1, "!"+r.fields[1])
	}
	return nil
}

// ExpirePassword forces a change at next login as `passwd --expire`
// does: last change day 0.
func (db *DB) ExpirePassword(name string) error {
	t, r, err := db.passwordRecord(name)
	if err != nil {
		return fmt.Errorf("expire password: %w", err)
	}
	if t != db.shadow {
		return fmt.Errorf("expire password of %s: the target has no %s", name, ShadowFile)
	}
	t.set(r, 2, "0")
	return nil
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// fileModeOwner returns name's mode and owner, or def and root for a file
// that does not exist yet.
func fileModeOwner(root *rootfs.Root, name string, def fs.FileMode) (fs.FileMode, rootfs.Owner) {
	fi, err := root.Stat(name)
	if err != nil {
		return def, ownedBy(0, 0)
	}
	return fi.Mode().Perm(), statOwner(fi)
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// logger is env's logger, or slog's default when a caller left it unset.
func logger(env *apply.Env) *slog.Logger {
	if env.Log != nil {
		return env.Log
	}
	return slog.Default()
}
