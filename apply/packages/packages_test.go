package packages

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/apply/console"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

func config(t *testing.T, text string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return apply.Config{}
	}
	return apply.Config(v.(map[string]any))
}

// writeTree lays files into dir; a name ending in "*" is an executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func oracle(t *testing.T, script string, args ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import cloudinit").Run(); err != nil {
		testenv.Skip(t, "cloudinit is not importable by /usr/bin/python3: install Debian's cloud-init package to compare")
	}
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("cloud-init oracle: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return string(out)
}

type powerSystem struct {
	*applytest.FakeSystem
	requests []console.PowerRequest
}

func (p *powerSystem) SchedulePowerState(ctx context.Context, req console.PowerRequest) error {
	p.requests = append(p.requests, req)
	return nil
}

const aptBase = "/usr/bin/apt-get --option=Dpkg::Options::=--force-confold --option=Dpkg::options::=--force-unsafe-io --assume-yes --quiet"

func TestPackageUpdateUpgradeInstall(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		yaml    string
		failOn  string
		ran     []string
		reboots int
		warns   int
		wantErr bool
		skipped bool
	}{
		{name: "nothing asked", files: map[string]string{"usr/bin/apt-get*": ""}, yaml: "packages: []", skipped: true},
		{
			name: "apt install with versions", files: map[string]string{"usr/bin/apt-get*": ""},
			yaml: "packages: [curl, [nginx, '1.2'], [jq]]",
			ran:  []string{aptBase + " update", aptBase + " install curl nginx=1.2 jq"},
		},
		{
			name: "apt with eatmydata, upgrade by the old key", files: map[string]string{"usr/bin/apt-get*": "", "usr/bin/eatmydata*": ""},
			yaml: "apt_upgrade: true",
			ran:  []string{"/usr/bin/eatmydata " + aptBase + " update", "/usr/bin/eatmydata " + aptBase + " dist-upgrade"},
		},
		{
			name: "apk", files: map[string]string{"sbin/apk*": ""},
			yaml: "package_update: true\npackage_upgrade: true\npackages: [[busybox, 1.36]]",
			ran:  []string{"/sbin/apk --quiet update", "/sbin/apk --quiet upgrade --update-cache --available", "/sbin/apk --quiet add busybox-1.36"},
		},
		{
			name: "dnf", files: map[string]string{"usr/bin/dnf*": "", "usr/bin/yum*": ""},
			yaml: "packages: vim",
			ran:  []string{"/usr/bin/dnf -y makecache", "/usr/bin/dnf -y install vim"},
		},
		{name: "no manager", yaml: "packages: [vim]", skipped: true, warns: 1},
		{
			name: "failed update does not stop the install", files: map[string]string{"usr/bin/apt-get*": ""},
			yaml: "packages: [vim]", failOn: "update", wantErr: true,
			ran: []string{aptBase + " update", aptBase + " install vim"},
		},
		{
			name: "reboot if required", files: map[string]string{"usr/bin/apt-get*": "", "var/run/reboot-required": ""},
			yaml: "packages: [linux-image-amd64]\npackage_reboot_if_required: true",
			ran:  []string{aptBase + " update", aptBase + " install linux-image-amd64"}, reboots: 1,
		},
		{
			name: "bad package item", files: map[string]string{"usr/bin/apt-get*": ""},
			yaml: "packages: [[a, b, c], ok]", wantErr: true,
			ran: []string{aptBase + " update", aptBase + " install ok"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			env.Sys.RunFunc = func(cmd apply.Command) error {
				if tc.failOn != "" && cmd.Argv[len(cmd.Argv)-1] == tc.failOn {
					return errors.New("exit status 100")
				}
				return nil
			}
			ps := &powerSystem{FakeSystem: env.Sys}
			env.Env.Sys = ps
			err := runPackages(context.Background(), env.Env)
			switch {
			case tc.skipped:
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("got %v, want skipped", err)
				}
			case tc.wantErr != (err != nil):
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.ran, env.Sys.Ran()); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if len(ps.requests) != tc.reboots {
				t.Errorf("reboots = %d, want %d", len(ps.requests), tc.reboots)
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
		})
	}
}

func TestAPTEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"usr/bin/apt-get*": ""})
	env := applytest.NewEnvAt(t, dir, config(t, "packages: [a]"))
	if err := runPackages(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	for _, c := range env.Sys.Commands {
		if !cmp.Equal(c.Env, []string{"DEBIAN_FRONTEND=noninteractive"}) {
			t.Errorf("%v env = %q", c.Argv, c.Env)
		}
	}
}

// uncommented drops comment lines, which are our own words.
func uncommented(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func TestAPKRepositoriesMatchCloudInit(t *testing.T) {
	const script = `
import sys, json
from cloudinit import templater
from cloudinit.config import cc_apk_configure as m
a = json.loads(sys.argv[1])
r = a["alpine_repo"]
params = {"alpine_baseurl": r.get("base_url", m.DEFAULT_MIRROR), "alpine_version": r["version"],
          "community_enabled": r.get("community_enabled"), "testing_enabled": r.get("testing_enabled"),
          "local_repo": a.get("local_repo_base_url", "")}
sys.stdout.write(templater.render_string(m.REPOSITORIES_TEMPLATE, params))
`
	for _, tc := range []string{
		"alpine_repo: {version: v3.18}",
		"alpine_repo: {version: v3.18, community_enabled: true}",
		"alpine_repo: {version: v3.18, community_enabled: true, testing_enabled: true, base_url: 'http://m/alpine'}\nlocal_repo_base_url: http://local/repo",
		"alpine_repo: {version: edge, testing_enabled: true}",
		"alpine_repo: {version: edge, testing_enabled: false, community_enabled: false}\nlocal_repo_base_url: http://l",
	} {
		t.Run(tc, func(t *testing.T) {
			section := config(t, tc)
			js, _ := json.Marshal(section)
			want := uncommented(oracle(t, script, string(js)))
			repo, _, _ := section.Map("alpine_repo")
			got, err := RenderAPKRepositories(section, repo)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, uncommented(string(got))); diff != "" {
				t.Errorf("repositories (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestAPKConfigureModule(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		skipped    bool
	}{
		{"absent", "{}", true},
		{"preserve", "apk_repos: {preserve_repositories: true, alpine_repo: {version: v3.18}}", true},
		{"no version", "apk_repos: {alpine_repo: {base_url: x}}", true},
		{"written", "apk_repos: {alpine_repo: {version: v3.18}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := applytest.NewEnv(t, config(t, tc.yaml))
			err := runAPKConfigure(context.Background(), env.Env)
			if tc.skipped != errors.Is(err, apply.ErrSkipped) || (!tc.skipped && err != nil) {
				t.Fatalf("err = %v, want skipped %v", err, tc.skipped)
			}
			if !tc.skipped {
				got, _ := env.Root.ReadFile(apkRepositoriesFile)
				if !strings.Contains(string(got), defaultAlpineMirror+"/v3.18/main\n") {
					t.Errorf("repositories = %q", got)
				}
			}
		})
	}
}

func TestYumRepoMatchesCloudInit(t *testing.T) {
	const script = `
import sys, json
from cloudinit.config import cc_yum_add_repo as m
a = json.loads(sys.argv[1])
n = {}
for k, v in a["cfg"].items():
    k = k.lower().strip().replace("-", "_")
    if k: n[k] = v
sys.stdout.write(m._format_repository_config(a["id"], n))
`
	for _, tc := range []string{
		"baseurl: http://x/$basearch\nenabled: true\ngpgcheck: false\nname: Extra Packages",
		"baseurl: [http://a, http://b]\nGPG-Key: k\npriority: 10\nempty: ''",
	} {
		t.Run(tc, func(t *testing.T) {
			repo := config(t, tc)
			js, _ := json.Marshal(map[string]any{"id": "my-repo", "cfg": repo})
			want := oracle(t, script, string(js))
			got, err := FormatYumRepo("my-repo", repo, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(uncommented(want), uncommented(got)); diff != "" {
				t.Errorf(".repo (-cloud-init +seedinit):\n%s", diff)
			}
		})
	}
}

func TestYumAddRepoModule(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"etc/yum.repos.d/kept.repo": "mine\n"})
	env := applytest.NewEnvAt(t, dir, config(t, "yum_repos:\n  kept: {baseurl: http://x}\n  new repo: {baseurl: http://y, enabled: true}\n  nourl: {name: x}\n  ../evil: {baseurl: http://z}"))
	err := runYumAddRepo(context.Background(), env.Env)
	if err == nil {
		t.Error("want an error for the id that names a path")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "etc/yum.repos.d/kept.repo")); string(got) != "mine\n" {
		t.Errorf("existing repo file overwritten: %q", got)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "etc/yum.repos.d/new-repo.repo"))
	if !strings.Contains(string(got), "[new-repo]\nbaseurl = http://y\nenabled = 1\n") {
		t.Errorf("new-repo.repo = %q", got)
	}
	if len(env.Warnings()) != 1 {
		t.Errorf("warnings = %q, want one for the repo without baseurl", env.Warnings())
	}
}

// testKeyArmored is an armored block around arbitrary bytes with a
// correct CRC-24, which is all gpg --dearmor checks.
var testKeyArmored = armor([]byte("\x99\x00\x0dnot really a key, but bytes to armor"))

func armor(data []byte) string {
	crc := uint32(0xB704CE)
	for _, b := range data {
		crc ^= uint32(b) << 16
		for i := 0; i < 8; i++ {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1864CFB
			}
		}
	}
	crc &= 0xFFFFFF
	sum := base64.StdEncoding.EncodeToString([]byte{byte(crc >> 16), byte(crc >> 8), byte(crc)})
	return "-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: test\n\n" + base64.StdEncoding.EncodeToString(data) + "\n=" + sum + "\n-----END PGP PUBLIC KEY BLOCK-----\n"
}

func TestAPTConfigure(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"usr/bin/apt-get*": "", "usr/bin/add-apt-repository*": "",
		"etc/os-release": "ID=debian\nVERSION_CODENAME=bookworm\n",
		aptProxyFile[1:]: "old\n",
	})
	yaml := `apt:
  http_proxy: http://proxy:3128
  https_proxy: http://proxy:3129
  conf: |
    APT::Install-Recommends "0";
  sources:
    extra:
      source: deb [signed-by=$KEY_FILE] $MIRROR $RELEASE main
      key: |
` + indent(testKeyArmored, "        ") + `
    plain.list:
      source: deb http://example.org/debian ${RELEASE}-backports main
    ppa:
      source: ppa:someone/thing
    keyonly:
      keyid: ABCDEF
`
	for run := 0; run < 2; run++ {
		env := applytest.NewEnvAt(t, dir, config(t, yaml))
		err := runAPTConfigure(context.Background(), env.Env)
		if err == nil || !strings.Contains(err.Error(), "keyid") {
			t.Errorf("run %d: err = %v, want the keyid entry refused", run, err)
		}
		if diff := cmp.Diff([]string{"/usr/bin/add-apt-repository --no-update ppa:someone/thing"}, env.Sys.Ran()); diff != "" {
			t.Errorf("commands (-want +got):\n%s", diff)
		}
	}
	files := map[string]string{
		aptProxyFile:                         "Acquire::http::Proxy \"http://proxy:3128\";\nAcquire::https::Proxy \"http://proxy:3129\";\n",
		aptConfigFile:                        "APT::Install-Recommends \"0\";\n",
		"/etc/apt/sources.list.d/extra.list": "deb [signed-by=/etc/apt/cloud-init.gpg.d/extra.gpg] http://deb.debian.org/debian bookworm main\n",
		"/etc/apt/sources.list.d/plain.list": "deb http://example.org/debian bookworm-backports main\n",
	}
	for name, want := range files {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/apt/cloud-init.gpg.d/extra.gpg")); err != nil {
		t.Errorf("key not written: %v", err)
	}
	// No proxy any more: the snippet goes.
	env := applytest.NewEnvAt(t, dir, config(t, "apt: {}"))
	if err := runAPTConfigure(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, aptProxyFile)); !os.IsNotExist(err) {
		t.Errorf("proxy snippet kept: %v", err)
	}
}

func TestAPTConfigureWithoutAPT(t *testing.T) {
	env := applytest.NewEnv(t, config(t, "apt: {conf: x}"))
	if err := runAPTConfigure(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) || len(env.Warnings()) != 1 {
		t.Errorf("err = %v, warnings %q; want skipped with one warning", err, env.Warnings())
	}
}

func indent(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		out = append(out, prefix+l)
	}
	return strings.Join(out, "\n")
}

func TestDearmorMatchesGPG(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		testenv.Skip(t, "gpg is not installed; it is the reference for dearmoring")
	}
	cmd := exec.Command(gpg, "--dearmor")
	cmd.Stdin = strings.NewReader(testKeyArmored)
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Dearmor(testKeyArmored)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(want, got) {
		t.Errorf("gpg --dearmor gives %x, we give %x", want, got)
	}
}
