package users

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Public keys the fake key servers hand out.
const (
	importKeyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDQtbVcWcA2RQPxzTlRaWXIY/pFlt3ck/XmKpc9OfQnN"
	importKeyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILDXrtfNduWoH/70dHZ/RoLKiFW9toh4QQOSdDmOz1ry"
	importKeyC = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBAh1lfygtzwBNW+Gn3qoEdfl5lc4ylYG5MzxB6OgaztnXDsMP8sTQodj/g8eVeD7aJ2C9+QM8vCP65wqa3vzj8Q="
	importKeyD = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDRda5pxpaL9ijVuXMRPeFIzq/aE9VIRQSsAfxmP9X3fMohVc+fJZ0nsNlUH1IBwQ/OSKsY7AAjHi2SOKGOgt9njPK7uA9W/mfX4QKxQDq4f77+DPVAsjJ0X6L2CI2A9u4gXFYAH/Ri5NNSwua5cqSEqcqe3zQQNs1DA0hPbpLyLQ=="
)

// keyServer answers as Launchpad (/~NAME/+sshkeys) and GitHub's API
// (/users/NAME/keys) do; unknown accounts get 404.
type keyServer struct {
	launchpad map[string]string
	github    map[string]string // JSON
	requests  []string
}

func (s *keyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests = append(s.requests, r.URL.Path)
	if name, ok := strings.CutPrefix(r.URL.Path, "/~"); ok {
		if text, ok := s.launchpad[strings.TrimSuffix(name, "/+sshkeys")]; ok {
			w.Write([]byte(text))
			return
		}
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/users/"); ok {
		if text, ok := s.github[strings.TrimSuffix(name, "/keys")]; ok {
			w.Write([]byte(text))
			return
		}
	}
	http.NotFound(w, r)
}

var importServer = keyServer{
	launchpad: map[string]string{
		// Launchpad's own layout: keys separated by blank lines, CRLF.
		"alice": importKeyA + " alice@laptop\r\n\r\n" + importKeyD + " old\r\n\r\n",
		"carol": "not a key at all\n# a comment\n" + importKeyC + "\n",
		"empty": "",
	},
	github: map[string]string{
		"alice": `[{"id": 1001, "key": "` + importKeyB + `"}, {"id": 1002, "key": "` + importKeyA + `"}]`,
		"bob":   `[{"id": 77, "key": "` + importKeyC + `"}]`,
	},
}

func startKeyServer(t *testing.T) *keyServer {
	t.Helper()
	s := importServer
	s.requests = nil
	srv := httptest.NewServer(&s)
	t.Cleanup(srv.Close)
	oldLP, oldGH := launchpadKeysURL, githubKeysURL
	launchpadKeysURL, githubKeysURL = srv.URL+"/~%s/+sshkeys", srv.URL+"/users/%s/keys"
	t.Cleanup(func() { launchpadKeysURL, githubKeysURL = oldLP, oldGH })
	return &s
}

// importIDCase is one user's ids and the authorized_keys it starts with.
// newlineFix marks the one deliberate difference: ssh-import-id appends
// to a file whose last line has no newline without adding one, gluing
// its first key onto that line and breaking both; seedinit adds it.
type importIDCase struct {
	name       string
	ids        []string
	existing   string
	newlineFix bool
}

var importIDCases = []importIDCase{
	{name: "github and launchpad", ids: []string{"gh:alice", "lp:alice"}},
	{name: "launchpad by default, a key already there", ids: []string{"alice"}, existing: importKeyA + " mine\n"},
	{name: "no newline at the end of the file", ids: []string{"gh:bob"}, existing: "# keep me\n" + importKeyB + " x", newlineFix: true},
	{name: "junk lines dropped", ids: []string{"lp:carol"}},
}

// TestSSHImportIDMatchesTool runs ssh-import-id 5.10's own import with its
// HTTP answers faked, and compares the authorized_keys it leaves with ours.
func TestSSHImportIDMatchesTool(t *testing.T) {
	python := pythonWith(t, "ssh_import_id")
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed: ssh-import-id validates keys with it")
	}
	answers, err := json.Marshal(map[string]any{"lp": importServer.launchpad, "gh": importServer.github})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range importIDCases {
		t.Run(c.name, func(t *testing.T) {
			theirs := filepath.Join(t.TempDir(), "authorized_keys")
			if c.existing != "" {
				os.WriteFile(theirs, []byte(c.existing), 0o600)
			}
			cmd := exec.Command(python, append([]string{"-c", sshImportIDOracle, string(answers), theirs}, c.ids...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ssh-import-id: %v\n%s", err, out)
			}
			want, _ := os.ReadFile(theirs)
			if c.newlineFix {
				want = []byte(strings.Replace(string(want), c.existing, c.existing+"\n", 1))
			}

			startKeyServer(t)
			dir := debianRoot(t)
			writeTree(t, dir, map[string]string{"etc/passwd": readFile(t, dir, "etc/passwd") + "alice:x:1000:1000::/home/alice:/bin/sh\n"})
			if c.existing != "" {
				writeTree(t, dir, map[string]string{"home/alice/.ssh/authorized_keys": c.existing})
			}
			env := newEnv(t, dir, "users: [{name: alice, ssh_import_id: ["+strings.Join(c.ids, ", ")+"]}]\n")
			if err := runSSHImportID(context.Background(), env.Env); err != nil {
				t.Fatalf("ssh_import_id: %v", err)
			}
			if diff := cmp.Diff(string(want), readFile(t, dir, "home/alice/.ssh/authorized_keys")); diff != "" {
				t.Errorf("authorized_keys (-ssh-import-id +seedinit):\n%s", diff)
			}
		})
	}
}

// sshImportIDOracle imports ids into argv[2] with ssh-import-id's
// import_keys, requests.get answering from argv[1] ({"lp": {...}, "gh":
// {...}}) the way the key servers do.
const sshImportIDOracle = `
import json, sys, types
import ssh_import_id as sii
answers, out, ids = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3:]
class Answer:
    def __init__(self, text):
        self.status_code, self.text, self.headers = (200, text, {}) if text is not None else (404, "", {})
def get(url, headers=None, verify=True):
    if url.startswith("https://launchpad.net/~"):
        return Answer(answers["lp"].get(url[len("https://launchpad.net/~"):-len("/+sshkeys")]))
    if url.startswith("https://api.github.com/users/"):
        return Answer(answers["gh"].get(url[len("https://api.github.com/users/"):-len("/keys")]))
    raise Exception("unexpected URL " + url)
sii.requests.get = get
sii.user_agent = lambda extra="": "oracle"
sii.parser.options = types.SimpleNamespace(output=out, remove=False, useragent="")
for userid in ids:
    proto, name = userid.split(":") if ":" in userid else ("lp", userid)
    sii.import_keys(proto, name, "")
`

// TestSSHImportID: the default user's ids and another user's, the file and
// directory made with the user's ownership, a re-run changes nothing, and
// a failing id is reported while the others are imported.
func TestSSHImportID(t *testing.T) {
	srv := startKeyServer(t)
	dir := debianRoot(t)
	writeTree(t, dir, map[string]string{"etc/passwd": readFile(t, dir, "etc/passwd") +
		"debian:x:1000:1000::/home/debian:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/sh\n"})
	config := `system_info: {default_user: {name: debian}}
users: [default, {name: bob, ssh_import_id: "gh:bob,lp:nobody"}]
ssh_import_id: [gh:alice]
`
	env := newEnv(t, dir, config)
	err := runSSHImportID(context.Background(), env.Env)
	if err == nil || !strings.Contains(err.Error(), "lp:nobody: no such account on Launchpad") {
		t.Errorf("error = %v, want lp:nobody reported", err)
	}
	if got := readFile(t, dir, "home/bob/.ssh/authorized_keys"); got != importKeyC+" bob@github/77 # ssh-import-id gh:bob\n\n" {
		t.Errorf("bob's keys = %q", got)
	}
	debianKeys := readFile(t, dir, "home/debian/.ssh/authorized_keys")
	if !strings.Contains(debianKeys, importKeyB+" alice@github/1001 # ssh-import-id gh:alice\n\n") {
		t.Errorf("the default user's keys = %q", debianKeys)
	}
	for _, p := range []string{"home/debian/.ssh", "home/debian/.ssh/authorized_keys"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		if os.Geteuid() == 0 && (st.Uid != 1000 || st.Gid != 1000) {
			t.Errorf("%s owned by %d:%d, want 1000:1000", p, st.Uid, st.Gid)
		}
	}
	if len(srv.requests) != 3 {
		t.Errorf("requests = %q, want three", srv.requests)
	}
	// A second run adds nothing.
	runSSHImportID(context.Background(), env.Env)
	if again := readFile(t, dir, "home/debian/.ssh/authorized_keys"); again != debianKeys {
		t.Errorf("a re-run changed the keys:\n%s", again)
	}
}

func TestSSHImportIDSkipsAndRefuses(t *testing.T) {
	startKeyServer(t)
	dir := debianRoot(t)
	if err := runSSHImportID(context.Background(), newEnv(t, dir, "users: [{name: x}]\n").Env); err == nil || !strings.Contains(err.Error(), "skipped") {
		t.Errorf("no ssh_import_id: %v, want skipped", err)
	}
	for config, want := range map[string]string{
		"users: [{name: ghost, ssh_import_id: [gh:bob]}]\n":                                    "look up user ghost",
		"users: [{name: root, ssh_import_id: [a:b:c]}]\n":                                      `invalid user id "a:b:c"`,
		"users: [{name: root, ssh_import_id: [xx:bob]}]\n":                                     `unknown key server "xx"`,
		"users: [{name: root, ssh_import_id: [lp:empty]}]\n":                                   "lp:empty: no keys found",
		"users: [{name: root, ssh_import_id: [gh:alice]}]\n":                                   "",
		"system_info: {default_user: {name: root}}\nusers: [default]\nssh_import_id: gh:bob\n": "",
	} {
		err := runSSHImportID(context.Background(), newEnv(t, dir, config).Env)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", config, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want %q", config, err, want)
		}
	}
}
