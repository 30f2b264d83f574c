package users

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyMatchesUseradd runs useradd --prefix (with -m) on roots whose
// /etc/default/useradd and /etc/login.defs differ from the fixture's, and
// our database plus CreateHome on copies, and compares the account files
// and the home directories (modes and owners included).
func TestPolicyMatchesUseradd(t *testing.T) {
	requireRoot(t)
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		t.Skip("useradd is not installed: no oracle")
	}
	pinClock(t)
	tests := []struct {
		name string
		// defaults replaces /etc/default/useradd; "-" removes it.
		defaults  string
		loginDefs string
		users     []subIDCase
	}{
		{
			name:     "useradd defaults file",
			defaults: "SHELL=/bin/bash\nHOME=/srv/homes\nINACTIVE=7\nEXPIRE=2031-05-05\nSKEL=/etc/skel\n",
			users:    []subIDCase{regularUser("bob"), systemUser("sysu")},
		},
		{
			name:      "no user groups: GROUP is the primary group",
			defaults:  "GROUP=50\nSHELL=/bin/sh\n",
			loginDefs: "USERGROUPS_ENAB no\n",
			users:     []subIDCase{regularUser("bob")},
		},
		{
			name:      "HOME_MODE",
			loginDefs: "HOME_MODE 0700\n",
			users:     []subIDCase{regularUser("bob")},
		},
		{
			name:      "HOME_MODE with setgid",
			loginDefs: "HOME_MODE 02750\n",
			users:     []subIDCase{regularUser("bob")},
		},
		{
			name:      "UMASK without HOME_MODE",
			loginDefs: "UMASK 027\n",
			users:     []subIDCase{regularUser("bob")},
		},
		{
			name:      "id ranges",
			loginDefs: "UID_MIN 2000\nUID_MAX 2005\nGID_MIN 3000\nSYS_UID_MIN 200\nSYS_UID_MAX 300\nSYS_GID_MIN 400\nSYS_GID_MAX 500\n",
			users:     []subIDCase{regularUser("bob"), regularUser("carol"), systemUser("sysu"), systemUser("sysv")},
		},
		{
			name: "system users ignore expiry and inactivity",
			users: []subIDCase{
				{args: []string{"-r", "-e", "2030-01-01", "-f", "5", "sysu"}, user: NewUser{Name: "sysu", UID: -1, System: true, ExpireDate: "2030-01-01", Inactive: intPtr(5)}},
				{args: []string{"-e", "2030-01-01", "-f", "5", "bob"}, user: NewUser{Name: "bob", UID: -1, ExpireDate: "2030-01-01", Inactive: intPtr(5)}},
			},
		},
		{
			name:      "password ageing",
			loginDefs: "PASS_MAX_DAYS 90\nPASS_MIN_DAYS 1\nPASS_WARN_AGE 14\n",
			users:     []subIDCase{regularUser("bob"), systemUser("sysu")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup := func() string {
				dir := debianRoot(t)
				useHostSkel(t, dir)
				writeTree(t, dir, map[string]string{"etc/login.defs": debianEtc["etc/login.defs"] + tt.loginDefs})
				switch tt.defaults {
				case "":
				case "-":
					if err := os.Remove(filepath.Join(dir, "etc/default/useradd")); err != nil {
						t.Fatal(err)
					}
				default:
					writeTree(t, dir, map[string]string{"etc/default/useradd": tt.defaults})
				}
				return dir
			}
			oracle, ours := setup(), setup()
			for _, c := range tt.users {
				args := c.args
				if !c.user.System {
					args = append([]string{"-m"}, args...)
				}
				argv := append([]string{useradd, "--prefix", oracle}, args...)
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", argv, err, out)
				}
			}
			db, err := Open(openRoot(t, ours))
			if err != nil {
				t.Fatal(err)
			}
			var created []Passwd
			for _, c := range tt.users {
				p, err := db.AddUser(c.user)
				if err != nil {
					t.Fatalf("AddUser(%s): %v", c.user.Name, err)
				}
				if !c.user.System {
					created = append(created, p)
				}
			}
			if err := db.Save(); err != nil {
				t.Fatal(err)
			}
			for _, p := range created {
				if _, err := CreateHome(openRoot(t, ours), p, db.Policy); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow"} {
				if diff := cmp.Diff(maskShadowDays(readFile(t, oracle, f)), maskShadowDays(readFile(t, ours, f))); diff != "" {
					t.Errorf("%s differs from useradd's (-useradd +ours):\n%s", f, diff)
				}
			}
			for _, p := range created {
				if diff := cmp.Diff(treeState(t, oracle, p.Home), treeState(t, ours, p.Home)); diff != "" {
					t.Errorf("home %s differs from useradd -m's (-useradd +ours):\n%s", p.Home, diff)
				}
			}
		})
	}
}

// maskShadowDays hides the "last change" day, which is today for useradd
// and the pinned clock for us.
func maskShadowDays(s string) string {
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

// treeState lists mode, owner and content of everything under dir (a
// target path) in root.
func treeState(t *testing.T, root, dir string) []string {
	t.Helper()
	base := filepath.Join(root, dir)
	var out []string
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		own := statOwner(fi)
		line := strings.TrimPrefix(p, root) + " " + fi.Mode().String() + " " + strconv.Itoa(own.UID) + ":" + strconv.Itoa(own.GID)
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", base, err)
	}
	sort.Strings(out)
	return out
}

func intPtr(n int) *int { return &n }

// useHostSkel gives root the host's /etc/skel: useradd --prefix copies
// the host's skeleton rather than the prefix's, where useradd in the
// target would copy the target's.
func useHostSkel(t *testing.T, root string) {
	t.Helper()
	skel := filepath.Join(root, "etc/skel")
	if err := os.RemoveAll(skel); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/skel"); err != nil {
		return
	}
	if out, err := exec.Command("cp", "-a", "/etc/skel", skel).CombinedOutput(); err != nil {
		t.Fatalf("copy /etc/skel: %v\n%s", err, out)
	}
}
