package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/seed/yaml11"

	"github.com/seedinit/seedinit/internal/testenv"
)

func gz(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// loadConfig decodes a cloud-config the way user-data reaches modules.
func loadConfig(t testing.TB, doc string) apply.Config {
	t.Helper()
	v, err := yaml11.Load([]byte(doc))
	if err != nil {
		t.Fatalf("load %q: %v", doc, err)
	}
	return apply.Config(v.(map[string]any))
}

type fileState struct {
	Content string
	Mode    fs.FileMode
	UID     int
	GID     int
}

func stat(t *testing.T, dir, name string) *fileState {
	t.Helper()
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return &fileState{Content: string(b), Mode: fi.Mode(), UID: int(st.Uid), GID: int(st.Gid)}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to give files to other owners")
	}
}

func TestEncodings(t *testing.T) {
	const text = "hello\nworld\n"
	tests := []struct {
		encoding, content string
		wantWarn          bool
	}{
		{"", text, false},
		{"text/plain", text, false},
		{"b64", b64(text), false},
		{"base64", b64(text), false},
		{"BASE64", b64(text), false},
		{" b64 ", b64(text), false},
		{"gz", gz(t, text), false},
		{"gzip", gz(t, text), false},
		{"gz+b64", b64(gz(t, text)), false},
		{"gz+base64", b64(gz(t, text)), false},
		{"gzip+b64", b64(gz(t, text)), false},
		{"gzip+base64", b64(gz(t, text)), false},
		{"GZIP+BASE64", b64(gz(t, text)), false},
		{"rot13", text, true},
	}
	for _, tt := range tests {
		t.Run(tt.encoding, func(t *testing.T) {
			e, err := DecodeEntry(0, map[string]any{"path": "/x", "encoding": tt.encoding, "content": tt.content})
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(e.ContentReader())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(text, string(got)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if got := len(e.Warnings) > 0; got != tt.wantWarn {
				t.Errorf("warnings %q, want some: %v", e.Warnings, tt.wantWarn)
			}
		})
	}
}

func TestDecodeEntry(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    *Entry
		wantErr string
	}{
		{
			name: "defaults",
			yaml: "path: /etc/motd",
			want: &Entry{Path: "/etc/motd", User: "root", Group: "root", Mode: 0o644},
		},
		{
			name: "quoted octal permissions",
			yaml: "{path: /a, permissions: '0755', owner: 'nginx:www'}",
			want: &Entry{Path: "/a", User: "nginx", Group: "www", OwnerGiven: true, Mode: 0o755},
		},
		{
			name: "yaml 1.1 octal integer",
			yaml: "{path: /a, permissions: 0600}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o600},
		},
		{
			name: "decimal integer is taken as it is, as cloud-init does",
			yaml: "{path: /a, permissions: 644}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o204 | fs.ModeSticky},
		},
		{
			name: "setuid from a string",
			yaml: "{path: /a, permissions: '4755'}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o755 | fs.ModeSetuid},
		},
		{
			name: "python octal prefix",
			yaml: "{path: /a, permissions: '0o640'}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o640},
		},
		{
			name: "undecodable permissions warn and default",
			yaml: "{path: /a, permissions: rwx}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o644, Warnings: []string{"undecodable permissions rwx: using 644"}},
		},
		{
			name: "user without group",
			yaml: "{path: /a, owner: bob}",
			want: &Entry{Path: "/a", User: "bob", OwnerGiven: true, Mode: 0o644},
		},
		{
			name: "owner none keeps",
			yaml: "{path: /a, owner: 'none:-1'}",
			want: &Entry{Path: "/a", OwnerGiven: true, Mode: 0o644},
		},
		{
			name: "relative path is from /",
			yaml: "{path: etc/../etc/x, content: hi, append: yes, defer: 'true'}",
			want: &Entry{Path: "/etc/x", Content: "hi", User: "root", Group: "root", Mode: 0o644, Append: true, Defer: true},
		},
		{
			name: "source with headers",
			yaml: "{path: /a, source: {uri: 'http://x/y', headers: {Authorization: Bearer t, X-N: 1}}}",
			want: &Entry{Path: "/a", User: "root", Group: "root", Mode: 0o644, Source: &Source{URI: "http://x/y", Headers: map[string]string{"Authorization": "Bearer t", "X-N": "1"}}},
		},
		{name: "no path", yaml: "{content: x}", wantErr: "item 3: no path to write"},
		{name: "not a mapping", yaml: "[a]", wantErr: "item 3: want a mapping, got a list"},
		{
			name: "content is decoded only when written",
			yaml: "{path: /b, encoding: gz+b64, content: 'YQ'}",
			want: &Entry{Path: "/b", Content: "YQ", Decode: []string{"base64", "gzip"}, User: "root", Group: "root", Mode: 0o644},
		},
		{name: "bad append", yaml: "{path: /b, append: maybe}", wantErr: "item 3 (/b): append: want a boolean"},
		{name: "content is a mapping", yaml: "{path: /b, content: {a: 1}}", wantErr: "item 3 (/b): content: want a string, got a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := yaml11.Load([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEntry(3, v)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeEntry error = %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Index = 3
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeBase64LikePython(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "YQ==", want: "a"},
		{in: "YQ", wantErr: "incorrect padding"},
		{in: "YQ==YQ==", want: "a"},
		{in: "Y Q = =", want: "a"},
		{in: "YWJj\nZGVm", want: "abcdef"},
		{in: "YQ=", wantErr: "incorrect padding"},
		{in: "Y=Q=", wantErr: "incorrect padding"},
		{in: "YWJjZA==x", want: "abcd"},
		{in: "=YQ==", want: "a"},
		{in: "!!YWJj", want: "abc"},
		{in: "YWJj===", want: "abc"},
		{in: "Y", wantErr: "number of data characters (1) cannot be 1 more than a multiple of 4"},
		{in: "", want: ""},
	}
	for _, tt := range tests {
		got, err := decodeBase64([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("decodeBase64(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("decodeBase64(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

const targetPasswd = "root:x:0:0:root:/root:/bin/sh\ndaemon:x:777:778::/:/bin/false\nsvc:x:4242:4343::/srv:/bin/false\n"
const targetGroup = "root:x:0:\ndaemon:x:778:\nsvcgrp:x:4343:\n"

func newTarget(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte(targetPasswd), 0o644)
	os.WriteFile(filepath.Join(dir, "etc/group"), []byte(targetGroup), 0o644)
	return dir
}

func TestWriteFiles(t *testing.T) {
	requireRoot(t)
	dir := newTarget(t)
	os.WriteFile(filepath.Join(dir, "etc/crontab"), []byte("# crontab\n"), 0o600)
	cfg := loadConfig(t, `
write_files:
- path: /etc/motd
  content: |
    welcome
- path: /srv/app/secret
  content: `+b64("s3cret")+`
  encoding: b64
  owner: svc:svcgrp
  permissions: '0640'
- path: /usr/local/bin/hello
  encoding: gzip+base64
  content: `+b64(gz(t, "#!/bin/sh\necho hi\n"))+`
  permissions: 0755
- path: /var/daemon.conf
  owner: daemon
  content: d
- path: /etc/crontab
  append: true
  permissions: '0644'
  content: "15 * * * * root ship_logs\n"
- path: /etc/nginx/site.conf
  content: later
  owner: nginx:nginx
  defer: true
- content: no path here
- path: /etc/unknown-owner
  owner: nobody-here
  content: x
- path: /etc/bad-b64
  encoding: b64
  content: "Y"
- path: /root/empty
`)
	env := applytest.NewEnvAt(t, dir, cfg)
	err := runWriteFiles(context.Background(), env.Env)
	if err == nil {
		t.Fatal("write_files with bad items succeeded, want an error naming them")
	}
	for _, want := range []string{
		"write_files: item 6: no path to write",
		`write_files: item 7 (/etc/unknown-owner): unknown user "nobody-here" in the target's /etc/passwd`,
		"write_files: item 8 (/etc/bad-b64): decode base64 content: number of data characters (1)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	want := map[string]*fileState{
		"etc/motd":            {Content: "welcome\n", Mode: 0o644},
		"srv/app/secret":      {Content: "s3cret", Mode: 0o640, UID: 4242, GID: 4343},
		"usr/local/bin/hello": {Content: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"var/daemon.conf":     {Content: "d", Mode: 0o644, UID: 777},
		"etc/crontab":         {Content: "# crontab\n15 * * * * root ship_logs\n", Mode: 0o644},
		"etc/nginx/site.conf": nil,
		"etc/unknown-owner":   nil,
		"etc/bad-b64":         nil,
		"root/empty":          {Content: "", Mode: 0o644},
	}
	got := map[string]*fileState{}
	for name := range want {
		got[name] = stat(t, dir, name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files in the target (-want +got):\n%s", diff)
	}

	// The deferred module writes only the deferred item, once nginx exists.
	os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte(targetPasswd+"nginx:x:101:102::/:/bin/false\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "etc/group"), []byte(targetGroup+"nginx:x:102:\n"), 0o644)
	env = applytest.NewEnvAt(t, dir, cfg)
	if err := runWriteFilesDeferred(context.Background(), env.Env); err != nil {
		t.Fatalf("write_files_deferred: %v", err)
	}
	if diff := cmp.Diff(&fileState{Content: "later", Mode: 0o644, UID: 101, GID: 102}, stat(t, dir, "etc/nginx/site.conf")); diff != "" {
		t.Errorf("deferred file (-want +got):\n%s", diff)
	}
	for _, c := range env.Root.Changes(0) {
		if c.Op == "write" && c.Path != "/etc/nginx/site.conf" {
			t.Errorf("write_files_deferred wrote %s, want only the deferred item", c.Path)
		}
	}
}

func TestWriteFilesConverges(t *testing.T) {
	dir := newTarget(t)
	cfg := loadConfig(t, "write_files:\n- {path: /etc/a, content: a}\n- {path: /etc/b, encoding: gz+b64, content: "+b64(gz(t, "b"))+", permissions: '0600'}\n")
	for i := range 2 {
		env := applytest.NewEnvAt(t, dir, cfg)
		if err := runWriteFiles(context.Background(), env.Env); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if i == 1 {
			if changes := env.Root.Changes(0); len(changes) != 0 {
				t.Errorf("second run changed %v, want nothing", changes)
			}
		}
	}
}

func TestWriteFilesSkips(t *testing.T) {
	for _, doc := range []string{"{}", "write_files: []", "write_files:\n- {path: /a, defer: true}"} {
		env := applytest.NewEnv(t, loadConfig(t, doc))
		if err := runWriteFiles(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
			t.Errorf("write_files with %q: %v, want a skip", doc, err)
		}
	}
	env := applytest.NewEnv(t, loadConfig(t, "write_files:\n- {path: /a}"))
	if err := runWriteFilesDeferred(context.Background(), env.Env); !errors.Is(err, apply.ErrSkipped) {
		t.Errorf("write_files_deferred without deferred items: %v, want a skip", err)
	}
}

func TestWriteFilesStaysInTarget(t *testing.T) {
	outside := t.TempDir()
	dir := newTarget(t)
	// A symlink in the target that points at a host directory by its host
	// path, and one that climbs out with "..".
	if err := os.Symlink(outside, filepath.Join(dir, "etc/abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../../.."+outside, filepath.Join(dir, "etc/rel-link")); err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, `
write_files:
- {path: /../../etc/x, content: dotdot}
- {path: /etc/abs-link/pwned, content: abs}
- {path: /etc/rel-link/pwned2, content: rel}
`)
	env := applytest.NewEnvAt(t, dir, cfg)
	if err := runWriteFiles(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files written outside the target: %v", entries)
	}
	for name, want := range map[string]string{
		"etc/x":                              "dotdot",
		filepath.Join(outside[1:], "pwned"):  "abs",
		filepath.Join(outside[1:], "pwned2"): "rel",
	} {
		if got := stat(t, dir, name); got == nil || got.Content != want {
			t.Errorf("%s in the target = %+v, want content %q", name, got, want)
		}
	}
}

func TestWriteFilesSource(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no token", http.StatusForbidden)
				return
			}
			w.Write([]byte("from the server"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := newTarget(t)
	os.WriteFile(filepath.Join(dir, "etc/local-src"), []byte("from the target"), 0o644)
	cfg := loadConfig(t, `
write_files:
- path: /a
  source: {uri: '`+srv.URL+`/ok', headers: {Authorization: Bearer tok}}
  content: fallback
- path: /b
  source: {uri: '`+srv.URL+`/missing'}
  content: `+b64("fallback b")+`
  encoding: b64
- path: /c
  source: {uri: '`+srv.URL+`/missing'}
- path: /d
  source: {uri: 'file:///etc/local-src'}
`)
	env := applytest.NewEnvAt(t, dir, cfg)
	if err := runWriteFiles(context.Background(), env.Env); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d"} {
		if st := stat(t, dir, name); st != nil {
			got[name] = st.Content
		}
	}
	want := map[string]string{"a": "from the server", "b": "fallback b", "d": "from the target"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	warnings := strings.Join(env.Warnings(), "\n")
	if !strings.Contains(warnings, "item 2 (/c)") || !strings.Contains(warnings, "not written") {
		t.Errorf("warnings %q do not report the skipped item 2 (/c)", warnings)
	}
}

func TestUserDBIsTheTargets(t *testing.T) {
	dir := newTarget(t)
	env := applytest.NewEnvAt(t, dir, nil)
	db := loadUserDB(env.Root)
	tests := []struct {
		user, group string
		want        [2]int
		wantErr     bool
	}{
		{"root", "root", [2]int{0, 0}, false},
		{"daemon", "", [2]int{777, -1}, false},
		{"", "svcgrp", [2]int{-1, 4343}, false},
		{"svc", "nope", [2]int{}, true},
		{"bin", "", [2]int{}, true}, // on the host, not in the target
	}
	for _, tt := range tests {
		o, err := db.owner(tt.user, tt.group)
		if tt.wantErr {
			if err == nil {
				t.Errorf("owner(%q, %q) = %v, want an error", tt.user, tt.group, o)
			}
			continue
		}
		if err != nil || [2]int{o.UID, o.GID} != tt.want {
			t.Errorf("owner(%q, %q) = %v, %v; want %v", tt.user, tt.group, o, err, tt.want)
		}
	}
}

// permissions with setuid, setgid or sticky end on the file exactly, with
// an owner given (chown clears setuid and setgid), and a re-run puts back
// a bit that was taken away.
func TestWriteFilesSpecialModes(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		perms string
		want  uint32
	}{
		{"'04755'", 0o4755},
		{"'02755'", 0o2755},
		{"'01777'", 0o1777},
		{"0o6711", 0o6711},
		{"04750", 0o4750}, // a YAML 1.1 octal integer
	}
	for _, tt := range tests {
		t.Run(tt.perms, func(t *testing.T) {
			dir := newTarget(t)
			cfg := loadConfig(t, "write_files:\n- {path: /usr/local/bin/tool, content: x, owner: 'svc:svcgrp', permissions: "+tt.perms+"}\n")
			p := filepath.Join(dir, "usr/local/bin/tool")
			for run := range 2 {
				env := applytest.NewEnvAt(t, dir, cfg)
				if err := runWriteFiles(context.Background(), env.Env); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				var st syscall.Stat_t
				if err := syscall.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
				if got := st.Mode & 0o7777; got != tt.want || st.Uid != 4242 || st.Gid != 4343 {
					t.Errorf("run %d: mode %04o owner %d:%d, want %04o 4242:4343", run, got, st.Uid, st.Gid, tt.want)
				}
				// Between the runs something strips the special bits.
				os.Chmod(p, 0o755)
			}
		})
	}
}
