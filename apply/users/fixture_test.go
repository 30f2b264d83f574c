package users

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// debianEtc is a trimmed Debian 12 account database, login.defs and
// useradd defaults, as a fresh cloud image has them.
var debianEtc = map[string]string{
	"etc/passwd": `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
_apt:x:42:65534::/nonexistent:/usr/sbin/nologin
systemd-network:x:998:998:systemd Network Management:/:/usr/sbin/nologin
messagebus:x:100:107::/nonexistent:/usr/sbin/nologin
sshd:x:101:65534::/run/sshd:/usr/sbin/nologin
`,
	"etc/shadow": `root:*:19500:0:99999:7:::
daemon:*:19500:0:99999:7:::
bin:*:19500:0:99999:7:::
sys:*:19500:0:99999:7:::
nobody:*:19500:0:99999:7:::
_apt:*:19500:0:99999:7:::
systemd-network:!*:19500::::::
messagebus:!:19500::::::
sshd:!:19500::::::
`,
	"etc/group": `root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
dialout:x:20:
cdrom:x:24:
floppy:x:25:
sudo:x:27:
audio:x:29:
dip:x:30:
video:x:44:
plugdev:x:46:
staff:x:50:
users:x:100:
nogroup:x:65534:
shadow:x:42:
systemd-network:x:998:
netdev:x:106:
messagebus:x:107:
`,
	"etc/gshadow": `root:*::
daemon:*::
bin:*::
sys:*::
adm:*::
tty:*::
disk:*::
dialout:*::
cdrom:*::
floppy:*::
sudo:*::
audio:*::
dip:*::
video:*::
plugdev:*::
staff:*::
users:*::
nogroup:*::
shadow:*::
systemd-network:!*::
netdev:!::
messagebus:!::
`,
	"etc/login.defs": `# trimmed Debian 12 login.defs
MAIL_DIR        /var/mail
UMASK		022
PASS_MAX_DAYS	99999
PASS_MIN_DAYS	0
PASS_WARN_AGE	7
UID_MIN			 1000
UID_MAX			60000
GID_MIN			 1000
GID_MAX			60000
USERGROUPS_ENAB yes
ENCRYPT_METHOD SHA512
`,
	"etc/default/useradd": "# useradd defaults file\nSHELL=/bin/sh\n",
	"etc/skel/.profile":   "# ~/.profile\n",
	"etc/skel/.bashrc":    "# ~/.bashrc\n",
	"etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\n\n#PermitRootLogin prohibit-password\nKbdInteractiveAuthentication no\nUsePAM yes\n",
	"etc/sudoers":         "Defaults\tenv_reset\nroot\tALL=(ALL:ALL) ALL\n%sudo\tALL=(ALL:ALL) ALL\n\n@includedir /etc/sudoers.d\n",
}

// fixedNow is 2026-11-22 12:00 UTC: day 20779.
var fixedNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const fixedDay = "20779"

// writeTree writes files (relative paths) under dir with the modes Debian
// gives them.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		switch name {
		case "etc/shadow", "etc/gshadow":
			mode = 0o640
		case "etc/sudoers":
			mode = 0o440
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 && (name == "etc/shadow" || name == "etc/gshadow") {
			if err := os.Chown(p, 0, 42); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// debianRoot makes a temporary target with debianEtc.
func debianRoot(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, debianEtc)
	return dir
}

// loadConfig decodes a cloud-config as the merged config would hold it.
func loadConfig(t testing.TB, text string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatalf("decode test config: %v", err)
	}
	if v == nil {
		return apply.Config{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("test config is %T, not a mapping", v)
	}
	return apply.Config(m)
}

// pinClock fixes the clock used for "last change" days and headers.
func pinClock(t testing.TB) {
	t.Helper()
	old := now
	now = func() time.Time { return fixedNow }
	t.Cleanup(func() { now = old })
}

func readFile(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lineOf(t testing.TB, content, name string) string {
	t.Helper()
	for _, l := range strings.Split(content, "\n") {
		if strings.HasPrefix(l, name+":") {
			return l
		}
	}
	t.Fatalf("no line for %s in:\n%s", name, content)
	return ""
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: checks file ownership in the target")
	}
}

func newEnv(t testing.TB, dir, config string) *applytest.Env {
	t.Helper()
	return applytest.NewEnvAt(t, dir, loadConfig(t, config))
}

func readFileMaybe(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return string(b), err
}

// pythonWith returns Debian's python3 if it can import module, or skips.
func pythonWith(t testing.TB, module string) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-W", "ignore", "-c", "import "+module).Run(); err != nil {
		t.Skipf("%s cannot import %s (%v): no oracle to compare with", python, module, err)
	}
	return python
}
