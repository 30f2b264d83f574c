package users

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSubIDs(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []SubIDRange
	}{
		{"plain", "bob:100000:65536", []SubIDRange{{"bob", 100000, 65536}}},
		{"hex and octal as strtoll base 0", "a:0x10:010", []SubIDRange{{"a", 16, 8}}},
		{"fields past the third are ignored", "a:1:2:junk", []SubIDRange{{"a", 1, 2}}},
		{"leading blanks and a plus sign", "a: 5:+7", []SubIDRange{{"a", 5, 7}}},
		{"negative wraps as C converts it", "a:-1:5", []SubIDRange{{"a", 1<<64 - 1, 5}}},
		{"beyond 32 bits is an entry", "a:4294967296:7", []SubIDRange{{"a", 1 << 32, 7}}},
		{"comment", "# a comment", nil},
		{"a comment with colons is an entry to shadow-utils", "# bob:1:2", []SubIDRange{{"# bob", 1, 2}}},
		{"blank", "", nil},
		{"NIS line", "+bob:1:2", nil},
		{"two fields", "bob:100000", nil},
		{"empty count", "bob:100000:", nil},
		{"empty owner", ":1:2", nil},
		{"not a number", "bob:lots:2", nil},
		{"bad octal digit", "bob:08:2", nil},
		{"bare 0x", "bob:0x:2", nil},
		{"trailing blank", "bob:1 :2", nil},
		{"underscore", "bob:1_000:2", nil},
		{"overflows strtoll", "bob:9223372036854775808:2", nil},
		{"too long for shadow-utils' buffer", "bob:1:2:" + strings.Repeat("x", 1020), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseSubIDs([]byte(tt.line+"\n"))); diff != "" {
				t.Errorf("ParseSubIDs(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestFindFreeSubIDRange(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		min, max uint32
		count    uint64
		want     uint32
		wantOK   bool
	}{
		{"empty file starts at min", "", 100000, 600100000, 65536, 100000, true},
		{"after the highest", "a:100000:65536\nb:165536:65536\n", 100000, 600100000, 65536, 231072, true},
		{"a hole one short is passed over", "a:100000:10\nb:165545:65536\n", 100000, 600100000, 65536, 231081, true},
		{"a hole that fits exactly", "a:100000:10\nb:165546:65536\n", 100000, 600100000, 65536, 100010, true},
		{"hole before a range", "a:300000:65536\n", 100000, 600100000, 65536, 100000, true},
		{"ranges below min are skipped", "a:1:99999\n", 100000, 600100000, 65536, 100000, true},
		{"exactly full", "a:100000:65536\n", 100000, 165535, 65536, 0, false},
		{"exactly fits the rest", "a:100000:10\n", 100000, 165545, 65536, 100010, true},
		{"zero count", "", 100000, 600100000, 0, 0, false},
		{"max below min", "", 10, 5, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findFreeSubIDRange(sortSubIDLines(parseSubIDLines([]byte(tt.file))), tt.min, tt.max, tt.count)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("findFreeSubIDRange = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSubIDService(t *testing.T) {
	tests := []struct{ nsswitch, want string }{
		{"", "files"},
		{"passwd: files\ngroup: files\n", "files"},
		{"subid: files\n", "files"},
		{"SUBID:   sss files\n", "sss"},
		{"#subid: sss\nsubid:\nsubid: ldap\n", "ldap"},
	}
	for _, tt := range tests {
		t.Run(tt.want+"/"+strings.ReplaceAll(tt.nsswitch, "\n", "|"), func(t *testing.T) {
			if got := subIDService([]byte(tt.nsswitch)); got != tt.want {
				t.Errorf("subIDService(%q) = %q, want %q", tt.nsswitch, got, tt.want)
			}
		})
	}
}

// subIDCase is a useradd run and the NewUser that means the same.
type subIDCase struct {
	args     []string
	user     NewUser
	wantFail bool
}

func regularUser(name string) subIDCase {
	return subIDCase{args: []string{name}, user: NewUser{Name: name, UID: -1}}
}

func userWithUID(name string, uid int) subIDCase {
	return subIDCase{args: []string{"-u", strconv.Itoa(uid), name}, user: NewUser{Name: name, UID: uid}}
}

func systemUser(name string) subIDCase {
	return subIDCase{args: []string{"-r", name}, user: NewUser{Name: name, UID: -1, System: true}}
}

func failingUser(c subIDCase) subIDCase {
	c.wantFail = true
	return c
}

// subIDScenarios are roots (files beside the Debian fixture; "" removes
// one) and the users added to them one useradd run at a time.
var subIDScenarios = []struct {
	name      string
	files     map[string]string
	loginDefs string
	users     []subIDCase
}{
	{
		name:  "empty files",
		files: map[string]string{"etc/subuid": "", "etc/subgid": ""},
		users: []subIDCase{regularUser("bob"), regularUser("carol"), systemUser("sysu"), userWithUID("fixed", 1500), userWithUID("low", 500), userWithUID("high", 70000), regularUser("dave")},
	},
	{
		name: "holes, junk and NIS lines",
		files: map[string]string{
			"etc/subuid": "# comment\nzed:300000:65536\nold:100000:65536\n\nbad line\nx:1:2:3\n# another\nhex:0x30000:16\n",
			"etc/subgid": "b:010:5\nbob:100000:65536\n+nis\nc:200000:10\n-x\nd:5:5\n",
		},
		users: []subIDCase{regularUser("bob"), regularUser("carol"), regularUser("dave")},
	},
	{
		name: "ranges past 32 bits and negative starts",
		files: map[string]string{
			"etc/subuid": "q:-1:5\nw:4294967296:7\nz:100000:1\n",
			"etc/subgid": "big:4294901760:65536\nz:100000:65536\n",
		},
		users: []subIDCase{regularUser("bob"), regularUser("carol")},
	},
	{
		name:      "login.defs ranges",
		files:     map[string]string{"etc/subuid": "a:200000:500\n", "etc/subgid": ""},
		loginDefs: "SUB_UID_MIN 200000\nSUB_UID_MAX 0x40000\nSUB_UID_COUNT 1000\nSUB_GID_COUNT 0\n",
		users:     []subIDCase{regularUser("bob"), regularUser("carol")},
	},
	{
		name:  "only subuid exists",
		files: map[string]string{"etc/subuid": "root:100000:65536\n"},
		users: []subIDCase{regularUser("bob")},
	},
	{
		name:      "exhausted range fails the user",
		files:     map[string]string{"etc/subuid": "", "etc/subgid": "x:100000:65536\n"},
		loginDefs: "SUB_GID_MAX 165535\n",
		users:     []subIDCase{failingUser(regularUser("bob")), systemUser("sysu"), failingUser(regularUser("carol"))},
	},
	{
		name:      "invalid login.defs range fails the user",
		files:     map[string]string{"etc/subuid": "", "etc/subgid": ""},
		loginDefs: "SUB_UID_COUNT 700000000\n",
		users:     []subIDCase{failingUser(regularUser("bob")), userWithUID("low", 500)},
	},
}

// TestSubIDsMatchUseradd runs Debian's useradd --prefix on one copy of
// each scenario and our database on another (one Open/Save per user, as
// useradd runs once per user), and compares the files byte for byte,
// backups and modes included.
func TestSubIDsMatchUseradd(t *testing.T) {
	requireRoot(t)
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		t.Skip("useradd is not installed: no oracle")
	}
	pinClock(t)
	for _, sc := range subIDScenarios {
		t.Run(sc.name, func(t *testing.T) {
			setup := func() string {
				dir := debianRoot(t)
				for name, content := range sc.files {
					p := filepath.Join(dir, name)
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(filepath.Join(dir, "etc/subuid"), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				writeTree(t, dir, map[string]string{"etc/login.defs": debianEtc["etc/login.defs"] + sc.loginDefs})
				return dir
			}
			oracle, ours, oursOnce := setup(), setup(), setup()
			for _, c := range sc.users {
				argv := append([]string{useradd, "--prefix", oracle}, c.args...)
				out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
				if c.wantFail != (err != nil) {
					t.Fatalf("%v: err %v, want failure %v\n%s", argv, err, c.wantFail, out)
				}
				db, err := Open(openRoot(t, ours))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.AddUser(c.user); c.wantFail != (err != nil) {
					t.Fatalf("AddUser(%s): %v, want failure %v", c.user.Name, err, c.wantFail)
				}
				if err := db.Save(); err != nil {
					t.Fatal(err)
				}
			}
			db, err := Open(openRoot(t, oursOnce))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range sc.users {
				if _, err := db.AddUser(c.user); c.wantFail != (err != nil) {
					t.Fatalf("AddUser(%s) in one session: %v, want failure %v", c.user.Name, err, c.wantFail)
				}
			}
			if err := db.Save(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"etc/subuid", "etc/subuid-", "etc/subgid", "etc/subgid-", "etc/passwd"} {
				want, wantErr := fileState(oracle, f)
				got, gotErr := fileState(ours, f)
				if diff := cmp.Diff(want, got); diff != "" || (wantErr == nil) != (gotErr == nil) {
					t.Errorf("%s differs from useradd's (-useradd +ours):\n%s\nuseradd: %v, ours: %v", f, diff, wantErr, gotErr)
				}
				if strings.HasSuffix(f, "-") {
					continue
				}
				once, _ := fileState(oursOnce, f)
				if diff := cmp.Diff(want, once); diff != "" {
					t.Errorf("%s in one session differs from useradd's (-useradd +ours):\n%s", f, diff)
				}
			}
		})
	}
}

// fileState is a file's mode and content, for comparing trees.
func fileState(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	return fi.Mode().String() + "\n" + string(b), err
}

func TestSubIDsUnreadableFileFailsOnlyRegularUsers(t *testing.T) {
	dir := debianRoot(t)
	if err := os.Mkdir(filepath.Join(dir, "etc/subuid"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{"etc/subgid": ""})
	db, err := Open(openRoot(t, dir))
	if err != nil {
		t.Fatalf("Open with /etc/subuid a directory: %v", err)
	}
	if _, err := db.AddUser(NewUser{Name: "bob", UID: -1}); err == nil || !strings.Contains(err.Error(), "/etc/subuid") {
		t.Errorf("AddUser(bob) = %v, want an error naming /etc/subuid", err)
	}
	if _, ok := db.User("bob"); ok {
		t.Error("bob was added without his subordinate ids")
	}
	if _, err := db.AddUser(NewUser{Name: "sysu", UID: -1, System: true}); err != nil {
		t.Errorf("AddUser(sysu): %v", err)
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "etc/subgid"); got != "" {
		t.Errorf("/etc/subgid = %q, want it untouched", got)
	}
}

func TestSubIDsLeftToNSSModule(t *testing.T) {
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{"etc/subuid": "", "etc/subgid": "", "etc/nsswitch.conf": "passwd: files\nsubid: sss\n"})
	db, err := Open(openRoot(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddUser(NewUser{Name: "bob", UID: -1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"etc/subuid", "etc/subgid"} {
		if got := readFile(t, dir, f); got != "" {
			t.Errorf("%s = %q, want it left to the subid NSS module", f, got)
		}
	}
}

func TestUsersGroupsGrantsSubIDsOnce(t *testing.T) {
	requireRoot(t)
	pinClock(t)
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{"etc/subuid": "", "etc/subgid": "other:100000:65536\n"})
	if err := runModule(t, newEnv(t, dir, usersConfig).Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	// In the order the module creates them: bob and debian are regular
	// users, eve's uid 2000 is in UID_MIN-UID_MAX, svc is a system user.
	wantUID := "bob:100000:65536\neve:165536:65536\ndebian:231072:65536\n"
	wantGID := "other:100000:65536\nbob:165536:65536\neve:231072:65536\ndebian:296608:65536\n"
	if diff := cmp.Diff(wantUID, readFile(t, dir, "etc/subuid")); diff != "" {
		t.Errorf("/etc/subuid (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantGID, readFile(t, dir, "etc/subgid")); diff != "" {
		t.Errorf("/etc/subgid (-want +got):\n%s", diff)
	}
	db, err := Open(openRoot(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	uids, gids := db.SubordinateIDs("bob")
	if diff := cmp.Diff([]SubIDRange{{"bob", 100000, 65536}}, uids); diff != "" {
		t.Errorf("SubordinateIDs(bob) uids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]SubIDRange{{"bob", 165536, 65536}}, gids); diff != "" {
		t.Errorf("SubordinateIDs(bob) gids (-want +got):\n%s", diff)
	}
	first := snapshot(t, dir)
	if err := runModule(t, newEnv(t, dir, usersConfig).Env, runUsersGroups); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, snapshot(t, dir)); diff != "" {
		t.Errorf("second run changed files (-first +second):\n%s", diff)
	}
}

func FuzzSubIDs(f *testing.F) {
	f.Add("bob:100000:65536\n", uint32(100000), uint32(600100000), uint64(65536))
	f.Add("# comment\nzed:300000:65536\nold:100000:65536\n\nbad line\nx:1:2:3\n", uint32(100000), uint32(600100000), uint64(65536))
	f.Add("b:010:5\n+nis\nc:200000:10\n-x\nd:5:5\n", uint32(1), uint32(1000), uint64(3))
	f.Add("q:-1:5\nw:4294967296:7\nz:0x10:1\n", uint32(0), uint32(^uint32(0)), uint64(1))
	f.Fuzz(func(t *testing.T, data string, min, max uint32, count uint64) {
		lines := parseSubIDLines([]byte(data))
		file := &subIDFile{lines: lines}
		if data != "" && !strings.Contains(data, "\r") && strings.TrimSuffix(string(file.bytes()), "\n") != strings.TrimSuffix(data, "\n") {
			t.Fatalf("round trip changed the file:\n%q\n%q", data, file.bytes())
		}
		sorted := sortSubIDLines(lines)
		if len(sorted) != len(lines) {
			t.Fatalf("sort lost lines: %d of %d", len(sorted), len(lines))
		}
		start, ok := findFreeSubIDRange(sorted, min, max, count)
		if !ok {
			return
		}
		end := uint64(start) + count - 1
		if start < min || end > uint64(max) {
			t.Fatalf("range %d+%d is outside %d-%d", start, count, min, max)
		}
		// The search is only sound over a sorted file of ranges that stay
		// within 32 bits, which is all shadow-utils promises.
		for _, l := range sorted {
			if l.nis {
				return
			}
		}
		for _, l := range sorted {
			e := l.entry
			if e == nil || e.Count == 0 || e.Start+e.Count > 1<<32 || e.Start+e.Count < e.Start {
				continue
			}
			if uint64(start) <= e.Start+e.Count-1 && e.Start <= end {
				t.Fatalf("range %d+%d overlaps %s:%d:%d", start, count, e.Owner, e.Start, e.Count)
			}
		}
	})
}

// FuzzSubIDGrantsInARow grants ranges to users one after the other, as a
// users list does, once with the shortcuts that keep n grants linear (no
// sort of lines known to be sorted, the search resumed) and once sorting
// and searching the whole file for each grant, as each useradd does: the
// files must come out the same.
func FuzzSubIDGrantsInARow(f *testing.F) {
	f.Add("", uint32(100000), uint32(600100000), uint64(65536), uint8(20))
	f.Add("bob:100000:65536\n", uint32(100000), uint32(600100000), uint64(65536), uint8(5))
	f.Add("zed:300000:65536\nold:100000:65536\n", uint32(100000), uint32(600100000), uint64(65536), uint8(5))
	f.Add("# comment\nzed:300000:65536\n\nbad line\n", uint32(100000), uint32(600100000), uint64(65536), uint8(5))
	f.Add("b:010:5\n+nis\nc:200000:10\n", uint32(1), uint32(1000), uint64(3), uint8(9))
	f.Add("a:20:10\n", uint32(1), uint32(100), uint64(10), uint8(12))
	f.Fuzz(func(t *testing.T, data string, min, max uint32, count uint64, users uint8) {
		grant := func(shortcuts bool) string {
			file := &subIDFile{path: SubUIDFile, present: true, lines: parseSubIDLines([]byte(data)), min: uint64(min), max: uint64(max), count: count}
			for i := range int(users % 40) {
				if !shortcuts {
					file.sorted = false
				}
				a, err := file.allocate()
				if err != nil {
					return fmt.Sprintf("%s\nfailed at user %d: %v", file.bytes(), i, err)
				}
				file.add(fmt.Sprintf("u%d", i), a)
			}
			return string(file.bytes())
		}
		if fast, full := grant(true), grant(false); fast != full {
			t.Fatalf("with shortcuts:\n%s\nsorting and searching each time:\n%s", fast, full)
		}
	})
}
