package users

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func openRoot(t testing.TB, dir string) *rootfs.Root {
	t.Helper()
	r, err := rootfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestParseTableKeepsEveryLine(t *testing.T) {
	input := "root:x:0:0:root:/root:/bin/bash\n# a comment\n+@netgroup::::::\n\nbroken:line\nbad:x:notanumber:0::/:/bin/sh\nbob:x:1000:1000:Bob,,,:/home/bob:/bin/bash"
	tbl := parseTable(PasswdFile, 7, []byte(input))
	if got, want := string(tbl.bytes()), input+"\n"; got != want {
		t.Errorf("round trip changed the file:\n%s", cmp.Diff(want, got))
	}
	got := ParsePasswd([]byte(input))
	want := []Passwd{
		{Name: "root", Password: "x", UID: 0, GID: 0, Gecos: "root", Home: "/root", Shell: "/bin/bash"},
		{Name: "bob", Password: "x", UID: 1000, GID: 1000, Gecos: "Bob,,,", Home: "/home/bob", Shell: "/bin/bash"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePasswd (-want +got):\n%s", diff)
	}
}

func TestParseShadowAndGroup(t *testing.T) {
	shadow := ParseShadow([]byte("root:*:19500:0:99999:7:::\nold:!:1:2:3:4:5:6\n"))
	if diff := cmp.Diff([]Shadow{
		{Name: "root", Password: "*", LastChange: "19500", Min: "0", Max: "99999", Warn: "7"},
		{Name: "old", Password: "!", LastChange: "1", Min: "2", Max: "3", Warn: "4", Inactive: "5", Expire: "6"},
	}, shadow); diff != "" {
		t.Errorf("ParseShadow (-want +got):\n%s", diff)
	}
	groups := ParseGroup([]byte("sudo:x:27:alice,bob\nempty:x:5:\n"))
	if diff := cmp.Diff([]Group{
		{Name: "sudo", Password: "x", GID: 27, Members: []string{"alice", "bob"}},
		{Name: "empty", Password: "x", GID: 5},
	}, groups); diff != "" {
		t.Errorf("ParseGroup (-want +got):\n%s", diff)
	}
}

func TestAllocate(t *testing.T) {
	used := func(ids ...int) map[int]bool {
		m := map[int]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	tests := []struct {
		name   string
		used   map[int]bool
		lo, hi int
		system bool
		want   int
	}{
		{"empty regular range starts at min", used(0, 65534), 1000, 60000, false, 1000},
		{"regular goes above the highest", used(1000, 1005), 1000, 60000, false, 1006},
		{"regular wraps to the first hole when full at the top", used(1000, 1002, 1003), 1000, 1003, false, 1001},
		{"system starts at max", used(0, 100), 101, 999, true, 999},
		{"system goes below the lowest", used(998, 107), 101, 999, true, 106},
		{"system searches down when the bottom is taken", used(101, 999), 101, 999, true, 998},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := allocate(tt.used, tt.lo, tt.hi, tt.system)
			if err != nil || got != tt.want {
				t.Errorf("allocate = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if _, err := allocate(used(5, 6), 5, 6, false); err == nil {
		t.Error("allocate in a full range succeeded")
	}
}

func TestDBAddUserLikeUseradd(t *testing.T) {
	pinClock(t)
	dir := debianRoot(t)
	root := openRoot(t, dir)
	db, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	inactive := 5
	// sshd holds 101, the bottom of the system range, so the system user
	// comes from the top (useradd agrees: TestDBMatchesUseradd).
	steps := []NewUser{
		{Name: "bob", UID: -1, Groups: []string{"sudo", "users"}},
		{Name: "sysu", UID: -1, System: true},
		{Name: "carol", UID: -1, Password: "$6$abc$xyz", ExpireDate: "2030-01-01", Inactive: &inactive, Gecos: "Carol C"},
		{Name: "dave", UID: 1500, PrimaryGroup: "users", Shell: "/bin/bash", Home: "/srv/dave"},
	}
	for _, u := range steps {
		if _, err := db.AddUser(u); err != nil {
			t.Fatalf("AddUser(%s): %v", u.Name, err)
		}
	}
	if _, err := db.AddGroup("grp1", -1, false); err != nil {
		t.Fatal(err)
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"etc/passwd": {
			"bob:x:1000:1000::/home/bob:/bin/sh",
			"sysu:x:999:999::/home/sysu:/bin/sh",
			"carol:x:1001:1001:Carol C:/home/carol:/bin/sh",
			"dave:x:1500:100::/srv/dave:/bin/bash",
		},
		"etc/shadow": {
			"bob:!:" + fixedDay + ":0:99999:7:::",
			"sysu:!:" + fixedDay + "::::::",
			"carol:$6$abc$xyz:" + fixedDay + ":0:99999:7:5:21915:",
			"dave:!:" + fixedDay + ":0:99999:7:::",
		},
		"etc/group":   {"bob:x:1000:", "sysu:x:999:", "carol:x:1001:", "grp1:x:1002:", "sudo:x:27:bob", "users:x:100:bob"},
		"etc/gshadow": {"bob:!::", "sysu:!::", "carol:!::", "grp1:!::", "sudo:*::bob", "users:*::bob"},
	}
	for file, lines := range want {
		content := readFile(t, dir, file)
		for _, l := range lines {
			name, _, _ := strings.Cut(l, ":")
			if got := lineOf(t, content, name); got != l {
				t.Errorf("%s: got %q, want %q", file, got, l)
			}
		}
		if backup := readFile(t, dir, file+"-"); backup != debianEtc[file] {
			t.Errorf("%s-: backup is not the previous content", file)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "etc/shadow"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("/etc/shadow mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if own := statOwner(fi); os.Geteuid() == 0 && own.GID != 42 {
		t.Errorf("/etc/shadow group %d, want shadow (42) kept", own.GID)
	}
}

func TestDBAddUserErrors(t *testing.T) {
	root := openRoot(t, debianRoot(t))
	db, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []NewUser{
		{Name: "root", UID: -1},
		{Name: "new", UID: 0},
		{Name: "bad:name", UID: -1},
		{Name: "-dash", UID: -1},
		{Name: "1234", UID: -1},
		{Name: "messagebus2", UID: -1, Groups: []string{"nosuchgroup"}},
		{Name: "gecos", UID: -1, Gecos: "a:b"},
		{Name: "home", UID: -1, Home: "relative"},
		{Name: "prim", UID: -1, PrimaryGroup: "nosuchgroup"},
		{Name: "staff", UID: -1},
		{Name: "exp", UID: -1, ExpireDate: "next tuesday"},
	}
	for _, u := range tests {
		t.Run(u.Name, func(t *testing.T) {
			if _, err := db.AddUser(u); err == nil {
				t.Errorf("AddUser(%+v) succeeded", u)
			}
		})
	}
}

func TestOpenWithoutShadowKeepsPasswordsInPasswd(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":  "root:x:0:\n",
	})
	db, err := Open(openRoot(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddUser(NewUser{Name: "bb", UID: -1, Password: "$6$s$h"}); err != nil {
		t.Fatal(err)
	}
	if err := db.LockPassword("bb"); err != nil {
		t.Fatal(err)
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	if got, want := lineOf(t, readFile(t, dir, "etc/passwd"), "bb"), "bb:!$6$s$h:1000:1000::/home/bb:/bin/sh"; got != want {
		t.Errorf("passwd line %q, want %q", got, want)
	}
	for _, f := range []string{"etc/shadow", "etc/gshadow"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was created on a system without it", f)
		}
	}
}

func TestOpenFreshRootCreatesAllFiles(t *testing.T) {
	requireRoot(t)
	pinClock(t)
	dir := t.TempDir()
	db, err := Open(openRoot(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddGroup("shadow", 42, true); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddUser(NewUser{Name: "u", UID: -1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	for file, mode := range map[string]os.FileMode{"etc/passwd": 0o644, "etc/group": 0o644, "etc/shadow": 0o600, "etc/gshadow": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", file, fi.Mode().Perm(), mode)
		}
	}
	// A fresh database has root, first, as every Linux system has it:
	// without it ssh's lookup of root fails (a u-root initramfs).
	today := strconv.FormatInt(fixedNow.Unix()/86400, 10)
	for file, want := range map[string]string{
		"etc/passwd":  "root:x:0:0:root:/root:/bin/sh",
		"etc/group":   "root:x:0:",
		"etc/shadow":  "root:*:" + today + ":0:99999:7:::",
		"etc/gshadow": "root:*::",
	} {
		if got := strings.SplitN(readFile(t, dir, file), "\n", 2)[0]; got != want {
			t.Errorf("%s: first line %q, want %q", file, got, want)
		}
	}
}

// TestLookupRootWithoutDatabase: a target with no /etc/passwd at all (a
// u-root initramfs) still has root, so that the ssh module can install
// root's keys; anyone else is not found.
func TestLookupRootWithoutDatabase(t *testing.T) {
	root := openRoot(t, t.TempDir())
	got, err := Lookup(root, "root")
	if err != nil {
		t.Fatalf("Lookup(root) without /etc/passwd: %v", err)
	}
	if diff := cmp.Diff(Passwd{Name: "root", Password: "x", Gecos: "root", Home: "/root", Shell: "/bin/sh"}, got); diff != "" {
		t.Errorf("Lookup(root) (-want +got):\n%s", diff)
	}
	if _, err := Lookup(root, "admin"); err == nil {
		t.Error("Lookup(admin) without /etc/passwd succeeded")
	}
}

// TestDBMatchesUseradd runs Debian's useradd --prefix on one copy of the
// fixture and our database on another, and compares the files.
func TestDBMatchesUseradd(t *testing.T) {
	requireRoot(t)
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		t.Skip("useradd is not installed: no oracle")
	}
	groupadd, err := exec.LookPath("groupadd")
	if err != nil {
		t.Skip("groupadd is not installed: no oracle")
	}
	pinClock(t)
	oracle, ours := debianRoot(t), debianRoot(t)
	runs := [][]string{
		{useradd, "-G", "sudo,users", "-s", "/bin/bash", "-c", "Bob B", "bob"},
		{useradd, "-r", "sysu"},
		{useradd, "-r", "sysu2"},
		{useradd, "-p", "$6$abc$xyz", "-e", "2030-01-01", "-f", "5", "carol"},
		{useradd, "-N", "nogrp"},
		{useradd, "-u", "1234", "-g", "staff", "fixed"},
		{groupadd, "grp1"},
		{groupadd, "-r", "sgrp"},
	}
	for _, r := range runs {
		argv := append([]string{r[0], "--prefix", oracle}, r[1:]...)
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	db, err := Open(openRoot(t, ours))
	if err != nil {
		t.Fatal(err)
	}
	inactive := 5
	for _, u := range []NewUser{
		{Name: "bob", UID: -1, Groups: []string{"sudo", "users"}, Shell: "/bin/bash", Gecos: "Bob B"},
		{Name: "sysu", UID: -1, System: true},
		{Name: "sysu2", UID: -1, System: true},
		{Name: "carol", UID: -1, Password: "$6$abc$xyz", ExpireDate: "2030-01-01", Inactive: &inactive},
		{Name: "nogrp", UID: -1, NoUserGroup: true},
		{Name: "fixed", UID: 1234, PrimaryGroup: "staff"},
	} {
		if _, err := db.AddUser(u); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []struct {
		name   string
		system bool
	}{{"grp1", false}, {"sgrp", true}} {
		if _, err := db.AddGroup(g.name, -1, g.system); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Save(); err != nil {
		t.Fatal(err)
	}
	maskDays := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			f := strings.Split(l, ":")
			if len(f) == 9 {
				f[2] = "DAY"
			}
			out = append(out, strings.Join(f, ":"))
		}
		return strings.Join(out, "\n")
	}
	for _, f := range []string{"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow"} {
		want, got := maskDays(readFile(t, oracle, f)), maskDays(readFile(t, ours, f))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s differs from useradd's (-useradd +ours):\n%s", f, diff)
		}
	}
}

func FuzzParseTable(f *testing.F) {
	for _, name := range []string{"etc/passwd", "etc/shadow", "etc/group", "etc/gshadow"} {
		f.Add(debianEtc[name])
	}
	f.Add("+::::::\n-bad\n#c\n\n:x:0:0:::\nx:x:99999999999:0:::\n")
	f.Fuzz(func(t *testing.T, data string) {
		for _, spec := range []struct {
			path string
			n    int
		}{{PasswdFile, 7}, {ShadowFile, 9}, {GroupFile, 4}, {GshadowFile, 4}} {
			tbl := parseTable(spec.path, spec.n, []byte(data))
			out := string(tbl.bytes())
			if data != "" && strings.TrimSuffix(out, "\n") != strings.TrimSuffix(data, "\n") && !strings.Contains(data, "\r") {
				t.Fatalf("%s: round trip changed the file:\n%q\n%q", spec.path, data, out)
			}
		}
		ParsePasswd([]byte(data))
		ParseShadow([]byte(data))
		ParseGroup([]byte(data))
	})
}

// referenceAllocate is allocate as it was, scanning every used id for each
// allocation: idSet must pick the same ids as ids are added one by one.
func referenceAllocate(used map[int]bool, lo, hi int, system bool) (int, error) {
	if lo > hi {
		return 0, fmt.Errorf("id range %d-%d is empty", lo, hi)
	}
	if system {
		candidate := hi
		for id := range used {
			if id >= lo && id <= hi && id-1 < candidate {
				candidate = id - 1
			}
		}
		if candidate >= lo && !used[candidate] {
			return candidate, nil
		}
		for id := hi; id >= lo; id-- {
			if !used[id] {
				return id, nil
			}
		}
	} else {
		candidate := lo
		for id := range used {
			if id >= lo && id <= hi && id+1 > candidate {
				candidate = id + 1
			}
		}
		if candidate <= hi && !used[candidate] {
			return candidate, nil
		}
		for id := lo; id <= hi; id++ {
			if !used[id] {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("no free id in %d-%d", lo, hi)
}

func TestIDSetAgreesWithAllocatingAfresh(t *testing.T) {
	ranges := [][3]int{{10, 40, 0}, {10, 40, 1}, {1, 9, 1}, {30, 60, 0}}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 5))
		used := map[int]bool{}
		for range rng.IntN(40) {
			used[rng.IntN(70)] = true
		}
		ref := map[int]bool{}
		for id := range used {
			ref[id] = true
		}
		set := newIDSet(used)
		for step := range 60 {
			r := ranges[rng.IntN(len(ranges))]
			var got, want int
			var gotErr, wantErr error
			if rng.IntN(4) == 0 {
				// An id given explicitly, as uid: does.
				got = rng.IntN(70)
				want = got
			} else {
				got, gotErr = set.allocate(r[0], r[1], r[2] == 1)
				want, wantErr = referenceAllocate(ref, r[0], r[1], r[2] == 1)
			}
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("seed %d step %d: allocate%v = %d, %v; afresh: %d, %v", seed, step, r, got, gotErr, want, wantErr)
			}
			if gotErr == nil {
				set.add(got)
				ref[got] = true
			}
		}
	}
}
