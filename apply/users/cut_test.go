package users

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/shacrypt"
)

// cutConfig is an appliance's first boot as the report of issue 27 had
// it: pcadmin (whose group was left without it by a cut), pcops in a
// group of the config, a system account, sudo, keys and chpasswd.
const cutConfig = `
groups:
  - wafops
users:
  - name: pcadmin
    gecos: Appliance administrator
    groups: [adm, sudo]
    sudo: "ALL=(ALL) NOPASSWD:ALL"
    shell: /bin/sh
    lock_passwd: false
    ssh_authorized_keys: ["` + keyA + `", "` + keyB + `"]
  - name: pcops
    groups: [users, wafops]
    sudo: ["ALL=(ALL) NOPASSWD:/bin/cat"]
    lock_passwd: false
    ssh_authorized_keys: ["` + keyC + `"]
  - name: pcsvc
    system: true
chpasswd:
  expire: false
  users:
    - {name: pcadmin, password: "pc admin pass", type: text}
    - {name: pcops, password: "pc ops pass", type: text}
`

var cutPasswords = map[string]string{"pcadmin": "pc admin pass", "pcops": "pc ops pass"}

// accountModules are the modules of a first boot that make the accounts,
// in the order of cloud_init_modules.
var accountModules = []struct {
	name string
	run  func(context.Context, *apply.Env) error
}{
	{"users_groups", runUsersGroups},
	{"set_passwords", runSetPasswords},
}

// bootAccounts runs the account modules over dir as a boot does, each
// unless its semaphore says it ran, its semaphore written after it, with
// the power cut after cut steps (-1: never). It reports whether the
// power was cut, and the steps the boot took.
func bootAccounts(t *testing.T, dir string, cut int) (bool, int) {
	t.Helper()
	rootfs.SimulateReboot()
	env := newEnv(t, dir, cutConfig)
	env.Root.StopAfter(cut)
	start := env.Root.Steps()
	for _, m := range accountModules {
		if env.State.HasRun("config_"+m.name, apply.PerInstance) {
			continue
		}
		err := m.run(context.Background(), env.Env)
		if cut < 0 && err != nil {
			t.Fatalf("%s, not cut: %v", m.name, err)
		}
		env.State.MarkRun("config_"+m.name, apply.PerInstance)
	}
	return cut >= 0 && env.Root.Steps()-start >= cut, env.Root.Steps() - start
}

// accountsTree is what a boot leaves of the accounts: the four files
// (shadow's hashes checked against the passwords, then masked), the
// homes, keys and sudo rules with their modes (and owners, as root), and
// the names of anything else, such as temporary files or a journal.
func accountsTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p, dir)
		if strings.HasPrefix(rel, "/var/lib/cloud") || rel == "" {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		desc := fi.Mode().String()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			desc += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			content := string(b)
			switch {
			case rel == "/etc/shadow":
				content = maskHashes(t, content)
			case strings.HasSuffix(rel, "-"):
				content = "(backup)"
			case strings.HasPrefix(rel, "/etc/sudoers.d/"):
				content = strings.Join(strings.FieldsFunc(content, func(r rune) bool { return r == '\n' }), "|")
			}
			desc += " " + content
		}
		out[rel] = desc
		return nil
	})
	return out
}

// maskHashes checks each password hash of cutPasswords and puts a mark in
// its place: salts differ from run to run.
func maskHashes(t *testing.T, shadow string) string {
	t.Helper()
	lines := strings.Split(shadow, "\n")
	for i, l := range lines {
		f := strings.Split(l, ":")
		if len(f) < 2 {
			continue
		}
		if pw, ok := cutPasswords[f[0]]; ok {
			if match, err := shacrypt.CheckPassword(f[1], pw); err != nil || !match {
				f[1] = "WRONG(" + f[1] + ")"
			} else {
				f[1] = "HASH"
			}
		}
		lines[i] = strings.Join(f, ":")
	}
	return strings.Join(lines, "\n")
}

// A power cut after any step of a first boot's account modules, then a
// boot that runs what has no semaphore, ends exactly where a boot without
// a cut does: every user with its group, shadow entry, password, home
// from the skeleton, keys and sudo rule; no temporary file, no journal.
func TestAccountsAfterACutAtEveryStep(t *testing.T) {
	pinClock(t)
	want := debianRoot(t)
	writeTree(t, want, map[string]string{"etc/skel/.config/app/ui.conf": "theme: dark\n"})
	if cut, _ := bootAccounts(t, want, -1); cut {
		t.Fatal("the boot without a cut was cut")
	}
	_, steps := bootAccounts(t, want, -1)
	if steps != 0 {
		t.Fatalf("a second boot without a cut took %d steps: the modules ran again", steps)
	}
	wantTree := accountsTree(t, want)

	first := debianRoot(t)
	writeTree(t, first, map[string]string{"etc/skel/.config/app/ui.conf": "theme: dark\n"})
	_, total := bootAccounts(t, first, -1)
	if total < 20 {
		t.Fatalf("the account modules took %d steps; the test cuts too few", total)
	}
	for k := 0; k < total; k++ {
		dir := debianRoot(t)
		writeTree(t, dir, map[string]string{"etc/skel/.config/app/ui.conf": "theme: dark\n"})
		if cut, _ := bootAccounts(t, dir, k); !cut {
			t.Fatalf("cut after %d of %d steps: the boot was not cut", k, total)
		}
		for name, desc := range accountsTree(t, dir) {
			if w, ok := wantTree[name]; ok && strings.HasPrefix(desc, "-") && strings.HasSuffix(desc, " ") && !strings.HasSuffix(w, " ") {
				t.Errorf("cut after %d of %d steps: %s is empty (%s), where a boot writes it whole (%s)", k, total, name, desc, w)
			}
		}
		bootAccounts(t, dir, -1)
		if d := cmp.Diff(wantTree, accountsTree(t, dir)); d != "" {
			t.Errorf("cut after %d of %d steps, then a boot (-without a cut +with):\n%s", k, total, d)
		}
	}
}
