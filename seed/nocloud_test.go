package seed

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadNoCloudDir(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    Seed
		wantErr string
	}{
		{
			name:  "yaml meta-data",
			files: map[string]string{"meta-data": "instance-id: i-123\nlocal-hostname: waf-1\npublic-keys:\n  - ssh-ed25519 AAA a@b\n", "user-data": "#cloud-config\n{}\n"},
			want:  Seed{InstanceID: "i-123", LocalHostname: "waf-1", PublicKeys: []string{"ssh-ed25519 AAA a@b"}, UserData: []byte("#cloud-config\n{}\n")},
		},
		{
			name:  "json meta-data, numeric id",
			files: map[string]string{"meta-data": `{"instance-id": 42, "local-hostname": "h", "public-keys": {"k1": "ssh-rsa AAA x\nssh-ed25519 BBB y"}}`},
			want:  Seed{InstanceID: "42", LocalHostname: "h", PublicKeys: []string{"ssh-rsa AAA x", "ssh-ed25519 BBB y"}},
		},
		{
			name:  "empty meta-data gets cloud-init's default id",
			files: map[string]string{"meta-data": ""},
			want:  Seed{InstanceID: "nocloud"},
		},
		{
			name:  "network-config v2 wrapped",
			files: map[string]string{"meta-data": "instance-id: a\n", "network-config": "network:\n  version: 2\n  ethernets: {}\n"},
			want:  Seed{InstanceID: "a", NetworkConfig: []byte("network:\n  version: 2\n  ethernets: {}\n"), NetworkFormat: "v2"},
		},
		{
			name:    "broken meta-data names the file and line",
			files:   map[string]string{"meta-data": "instance-id: a\n  bad: [\n"},
			wantErr: "meta-data: line",
		},
		{
			name:    "no meta-data",
			files:   map[string]string{"user-data": "x"},
			wantErr: "no meta-data file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadNoCloudDir(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Datasource != "NoCloud" || got.Subplatform != "seed-dir ("+dir+")" {
				t.Errorf("datasource %q subplatform %q", got.Datasource, got.Subplatform)
			}
			opts := cmp.Options{cmpIgnore("Datasource", "Subplatform", "Platform", "CloudName", "Metadata", "MetaRaw", "Documents")}
			if d := cmp.Diff(tt.want, *got, opts); d != "" {
				t.Errorf("seed (-want +got):\n%s", d)
			}
			if md, ok := tt.files["meta-data"]; ok && string(got.MetaRaw) != md {
				t.Errorf("MetaRaw %q, want the meta-data file", got.MetaRaw)
			}
		})
	}
}

func cmpIgnore(fields ...string) cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		for _, f := range fields {
			if p.Last().String() == "."+f {
				return true
			}
		}
		return false
	}, cmp.Ignore())
}

// TestLoadNoCloudDirRefusesSpecialFiles: a seed file that is a named pipe
// used to block the read, and PID 1 with it, forever.
func TestLoadNoCloudDirRefusesSpecialFiles(t *testing.T) {
	for _, name := range []string{"meta-data", "user-data", "vendor-data", "network-config", "datasource-config"} {
		for _, kind := range []string{"a named pipe", "a directory"} {
			t.Run(name+" as "+kind, func(t *testing.T) {
				dir := t.TempDir()
				if name != "meta-data" {
					if err := os.WriteFile(filepath.Join(dir, "meta-data"), []byte("instance-id: a\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				p := filepath.Join(dir, name)
				var err error
				if kind == "a named pipe" {
					err = syscall.Mkfifo(p, 0o644)
				} else {
					err = os.Mkdir(p, 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
				_, err = LoadNoCloudDir(dir)
				want := "read NoCloud seed: read " + p + ": not a regular file (" + kind + ")"
				if err == nil || err.Error() != want || !errors.Is(err, ErrNotRegular) {
					t.Errorf("LoadNoCloudDir: %v, want %q", err, want)
				}
			})
		}
	}
}

func TestReadSeedFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("small", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		max        int64
		want       string
		wantErr    string
	}{
		{name: "regular", file: small, max: 5, want: "12345"},
		{name: "symlink to regular", file: filepath.Join(dir, "link"), max: 5, want: "12345"},
		{name: "over the limit", file: small, max: 4, wantErr: "5 bytes is over the 4-byte limit"},
		{name: "character device", file: "/dev/zero", max: 4, wantErr: "not a regular file (a character device)"},
		{name: "missing", file: filepath.Join(dir, "nope"), max: 4, wantErr: "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadSeedFile(tc.file, tc.max)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ReadSeedFile: %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("ReadSeedFile: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
