package system

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
)

func TestTimezone(t *testing.T) {
	zone := map[string]string{"usr/share/zoneinfo/Europe/Paris": "TZif-paris", "usr/share/zoneinfo/UTC": "TZif-utc"}
	tests := []struct {
		name      string
		files     map[string]string
		linkFirst bool
		yaml      string
		wantLink  string
		wantCopy  string
		wantTZ    string
		wantErr   bool
		skipped   bool
	}{
		{name: "absent", yaml: "{}", skipped: true},
		{name: "link made", files: zone, yaml: "timezone: Europe/Paris", wantLink: "/usr/share/zoneinfo/Europe/Paris", wantTZ: "Europe/Paris\n"},
		{name: "old link replaced", files: zone, linkFirst: true, yaml: "timezone: Europe/Paris", wantLink: "/usr/share/zoneinfo/Europe/Paris", wantTZ: "Europe/Paris\n"},
		{name: "regular file copied", files: merge(zone, map[string]string{"etc/localtime": "old"}), yaml: "timezone: UTC", wantCopy: "TZif-utc", wantTZ: "UTC\n"},
		{name: "rhel keeps no /etc/timezone", files: merge(zone, map[string]string{"etc/os-release": "ID=rocky\nID_LIKE=\"rhel centos fedora\"\n"}), yaml: "timezone: UTC", wantLink: "/usr/share/zoneinfo/UTC"},
		{name: "unknown zone", files: zone, yaml: "timezone: Mars/Base", wantErr: true},
		{name: "escaping zone", files: zone, yaml: "timezone: ../../../etc/passwd", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			if tc.linkFirst {
				os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
				os.Symlink("/usr/share/zoneinfo/UTC", filepath.Join(dir, "etc/localtime"))
			}
			for run := 0; run < 2; run++ {
				env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
				err := runTimezone(context.Background(), env.Env)
				switch {
				case tc.skipped:
					if !errors.Is(err, apply.ErrSkipped) {
						t.Fatalf("got %v, want skipped", err)
					}
					return
				case tc.wantErr:
					if err == nil {
						t.Fatal("want an error")
					}
					return
				case err != nil:
					t.Fatalf("run %d: %v", run, err)
				}
			}
			if tc.wantLink != "" {
				if got, err := os.Readlink(filepath.Join(dir, "etc/localtime")); err != nil || got != tc.wantLink {
					t.Errorf("/etc/localtime -> %q (%v), want %q", got, err, tc.wantLink)
				}
			}
			if tc.wantCopy != "" {
				if got := readFile(t, dir, "etc/localtime"); got != tc.wantCopy {
					t.Errorf("/etc/localtime = %q, want %q", got, tc.wantCopy)
				}
			}
			got, _ := os.ReadFile(filepath.Join(dir, "etc/timezone"))
			if string(got) != tc.wantTZ {
				t.Errorf("/etc/timezone = %q, want %q", got, tc.wantTZ)
			}
		})
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestLocale(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		yaml    string
		path    string
		want    string
		ran     []string
		warns   int
		skipped bool
		// generates makes the fake locale-gen compile the locale.
		generates bool
		// localeGen is /etc/locale.gen afterwards, when not "".
		localeGen string
	}{
		{name: "disabled", yaml: "locale: false", skipped: true},
		{
			name: "compiled in the archive needs no locale-gen",
			files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": "",
				"usr/lib/locale/locale-archive": string(testLocaleArchive(binary.LittleEndian, "C.utf8", "de_DE.utf8"))},
			yaml: "locale: de_DE.UTF-8", path: "etc/default/locale", want: "LANG=de_DE.UTF-8\n",
		},
		{
			name:  "compiled as a directory needs no locale-gen",
			files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": "", "usr/lib/locale/de_DE.utf8/LC_CTYPE": ""},
			yaml:  "locale: de_DE.UTF-8", path: "etc/default/locale", want: "LANG=de_DE.UTF-8\n",
		},
		{
			name: "debian: enabled in locale.gen, then compiled",
			files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": "", "usr/lib/locale/C.utf8/LC_CTYPE": "",
				"etc/locale.gen": "# This file lists locales that you wish to have built.\n# de_DE ISO-8859-1\n# de_DE.UTF-8 UTF-8\n# en_US.UTF-8 UTF-8\n"},
			yaml: "locale: de_DE.UTF-8", path: "etc/default/locale", want: "LANG=de_DE.UTF-8\n", generates: true,
			localeGen: "# This file lists locales that you wish to have built.\n# de_DE ISO-8859-1\nde_DE.UTF-8 UTF-8\n# en_US.UTF-8 UTF-8\n",
		},
		{
			name: "debian: added to locale.gen from SUPPORTED",
			files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": "", "usr/lib/locale/C.utf8/LC_CTYPE": "",
				"etc/locale.gen": "# en_US.UTF-8 UTF-8\n", "usr/share/i18n/SUPPORTED": "de_DE ISO-8859-1\nfr_FR.UTF-8 UTF-8\n"},
			yaml: "locale: fr_FR.utf8", path: "etc/default/locale", want: "LANG=fr_FR.utf8\n", generates: true,
			localeGen: "# en_US.UTF-8 UTF-8\nfr_FR.UTF-8 UTF-8\n",
		},
		{
			name: "not compiled after locale-gen: LANG kept",
			files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": "", "usr/lib/locale/C.utf8/LC_CTYPE": "",
				"etc/default/locale": "LANG=C.UTF-8\n", "etc/locale.gen": "# en_US.UTF-8 UTF-8\n"},
			yaml: "locale: xx_YY.UTF-8", path: "etc/default/locale", want: "LANG=C.UTF-8\n",
			ran: []string{"/usr/sbin/locale-gen xx_YY.UTF-8"}, warns: 1, localeGen: "# en_US.UTF-8 UTF-8\n",
		},
		{
			name: "debian with locale-gen", files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": ""},
			yaml: "locale: de_DE.UTF-8", path: "etc/default/locale", want: "LANG=de_DE.UTF-8\n", ran: []string{"/usr/sbin/locale-gen de_DE.UTF-8"},
		},
		{
			// A LANG the C library lacks would make every login complain.
			name: "debian without locale-gen warns and keeps LANG", files: map[string]string{"etc/os-release": "ID=debian\n", "etc/default/locale": "# kept\nLANGUAGE=en\nLANG=C\n"},
			yaml: "locale: fr_FR.UTF-8", path: "etc/default/locale", want: "# kept\nLANGUAGE=en\nLANG=C\n", warns: 1,
		},
		{
			name: "debian without locale-gen, no locale asked: skipped, nothing written", files: map[string]string{"etc/os-release": "ID=debian\n"},
			yaml: "{}", path: "etc/default/locale", skipped: true,
		},
		{
			name: "C needs no generation", files: map[string]string{"etc/os-release": "ID=debian\n", "usr/sbin/locale-gen*": ""},
			yaml: "locale: C.UTF-8", path: "etc/default/locale", want: "LANG=C.UTF-8\n",
		},
		{
			name: "default keeps the image's", files: map[string]string{"etc/os-release": "ID=debian\n", "etc/default/locale": "LANG=\"C.UTF-8\"\n"},
			yaml: "{}", path: "etc/default/locale", want: "LANG=C.UTF-8\n",
		},
		{
			name: "rhel uses locale.conf", files: map[string]string{"etc/os-release": "ID=fedora\n"},
			yaml: "locale: en_GB.UTF-8", path: "etc/locale.conf", want: "LANG=en_GB.UTF-8\n",
		},
		{
			name: "unknown family with locale.conf", files: map[string]string{"etc/locale.conf": "LANG=C\nLANG=C\n"},
			yaml: "locale: C.UTF-8", path: "etc/locale.conf", want: "LANG=C.UTF-8\n",
		},
		{
			name: "locale_configfile", files: map[string]string{"etc/os-release": "ID=debian\n"},
			yaml: "locale: C\nlocale_configfile: /etc/my-locale", path: "etc/my-locale", want: "LANG=C\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			var env *applytest.Env
			for run := 0; run < 2; run++ {
				env = applytest.NewEnvAt(t, dir, config(t, tc.yaml))
				if tc.generates {
					env.Sys.RunFunc = func(cmd apply.Command) error {
						locale := cmd.Argv[len(cmd.Argv)-1]
						return os.MkdirAll(filepath.Join(dir, "usr/lib/locale", normalizeLocale(locale)), 0o755)
					}
				}
				err := runLocale(context.Background(), env.Env)
				if tc.skipped {
					if !errors.Is(err, apply.ErrSkipped) {
						t.Fatalf("got %v, want skipped", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, readFile(t, dir, tc.path)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.path, diff)
			}
			if diff := cmp.Diff(tc.ran, env.Sys.Ran()); diff != "" {
				t.Errorf("commands of the second run (-want +got):\n%s", diff)
			}
			if tc.localeGen != "" {
				if diff := cmp.Diff(tc.localeGen, readFile(t, dir, "etc/locale.gen")); diff != "" {
					t.Errorf("/etc/locale.gen (-want +got):\n%s", diff)
				}
			}
			if len(env.Warnings()) != tc.warns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.warns)
			}
		})
	}
}

func TestSeedRandom(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("zipped"))
	zw.Close()
	tests := []struct {
		name      string
		yaml      string
		metadata  map[string]any
		live      bool
		capable   bool
		files     map[string]string
		wantPool  string
		wantFile  string
		wantRan   []string
		wantWarns int
		wantErr   bool
	}{
		{name: "nothing", yaml: "{}", live: true, capable: true},
		{name: "raw and metadata into the pool", yaml: "random_seed: {data: abc}", metadata: map[string]any{"random_seed": "XYZ"}, live: true, capable: true, wantPool: "abcXYZ"},
		{name: "base64", yaml: "random_seed: {data: " + base64.StdEncoding.EncodeToString([]byte("b64!")) + ", encoding: b64}", live: true, capable: true, wantPool: "b64!"},
		{name: "gzip", yaml: "random_seed: {data: !!binary " + base64.StdEncoding.EncodeToString(gz.Bytes()) + ", encoding: gz}", live: true, capable: true, wantPool: "zipped"},
		{name: "bad encoding", yaml: "random_seed: {data: x, encoding: rot13}", wantErr: true},
		{name: "offline target warns", yaml: "random_seed: {data: abc}", capable: true, wantWarns: 1},
		{name: "no capability warns", yaml: "random_seed: {data: abc}", live: true, wantWarns: 1},
		{name: "file in the target", yaml: "random_seed: {data: abc, file: /var/lib/seed}", wantFile: "abc"},
		{
			name: "command run with the seed file", yaml: "random_seed: {command: [pollinate, -q]}", files: map[string]string{"usr/bin/pollinate*": ""},
			wantRan: []string{"/usr/bin/pollinate -q"},
		},
		{name: "missing command ignored", yaml: "random_seed: {command: [pollinate]}"},
		{name: "missing required command", yaml: "random_seed: {command: [pollinate], command_required: true}", wantErr: true},
		{name: "required without command", yaml: "random_seed: {command_required: true}", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			env.Seed.Metadata = tc.metadata
			env.Sys.IsLive = tc.live
			ks := &kernelSystem{FakeSystem: env.Sys}
			if tc.capable {
				env.Env.Sys = ks
			}
			err := runSeedRandom(context.Background(), env.Env)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if string(ks.random) != tc.wantPool {
				t.Errorf("pool got %q, want %q", ks.random, tc.wantPool)
			}
			if tc.wantFile != "" {
				if got := readFile(t, dir, "var/lib/seed"); got != tc.wantFile {
					t.Errorf("seed file = %q, want %q", got, tc.wantFile)
				}
			}
			if diff := cmp.Diff(tc.wantRan, env.Sys.Ran()); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			for _, c := range env.Sys.Commands {
				if !strings.Contains(strings.Join(c.Env, " "), "RANDOM_SEED_FILE=/dev/urandom") {
					t.Errorf("command env = %q, want RANDOM_SEED_FILE", c.Env)
				}
			}
			if len(env.Warnings()) != tc.wantWarns {
				t.Errorf("warnings = %q, want %d", env.Warnings(), tc.wantWarns)
			}
		})
	}
}

func TestDisableEC2Metadata(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		live     bool
		capable  bool
		files    map[string]string
		rejected []netip.Addr
		ran      []string
		skipped  bool
		wantErr  bool
	}{
		{name: "off", yaml: "disable_ec2_metadata: false", skipped: true},
		{name: "capability", yaml: "disable_ec2_metadata: true", capable: true, rejected: []netip.Addr{ec2MetadataAddr}},
		{name: "offline without capability", yaml: "disable_ec2_metadata: true", skipped: true},
		{name: "live with ip", yaml: "disable_ec2_metadata: yes", live: true, files: map[string]string{"sbin/ip*": "", "sbin/route*": ""}, ran: []string{"/sbin/ip route add prohibit 169.254.169.254"}},
		{name: "live with route", yaml: "disable_ec2_metadata: on", live: true, files: map[string]string{"sbin/route*": ""}, ran: []string{"/sbin/route add -host 169.254.169.254 reject"}},
		{name: "live without tools", yaml: "disable_ec2_metadata: true", live: true, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			env := applytest.NewEnvAt(t, dir, config(t, tc.yaml))
			env.Sys.IsLive = tc.live
			ks := &kernelSystem{FakeSystem: env.Sys}
			if tc.capable {
				env.Env.Sys = ks
			}
			err := runDisableEC2Metadata(context.Background(), env.Env)
			switch {
			case tc.skipped:
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("got %v, want skipped", err)
				}
			case tc.wantErr != (err != nil):
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.rejected, ks.rejected, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("reject routes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ran, env.Sys.Ran()); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}
