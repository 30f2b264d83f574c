package ssh

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply/applytest"
)

// TestAuthorizedKeysWritten runs the module with the real
// users.SetupUserKeys over a small root with a default user, twice.
func TestAuthorizedKeysWritten(t *testing.T) {
	requireRoot(t)
	const (
		keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKO6bxSEvvz5Ip9xqKeirkwop/wL0mm1AoCTCqT+TnVE a@x"
		keyB = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC b@x"
	)
	dir := t.TempDir()
	writeHostFile(t, dir, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\ndebian:x:1000:1000:Debian:/home/debian:/bin/sh\n", 0o644)
	writeHostFile(t, dir, "etc/group", "root:x:0:\ndebian:x:1000:\n", 0o644)
	for _, d := range []string{"root", "home/debian"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(dir, "home/debian"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	config := "system_info: {default_user: {name: debian}}\nusers: [default]\nssh_genkeytypes: []\n" +
		"ssh_authorized_keys: [\"" + keyB + "\"]\n"
	rootOpts := `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"debian\" rather than the user \"root\".';echo;sleep 10;exit 142"`
	want := map[string]string{
		"home/debian/.ssh/authorized_keys": keyA + "\n" + keyB + "\n",
		"root/.ssh/authorized_keys":        rootOpts + " " + keyA + "\n" + rootOpts + " " + keyB + "\n",
	}
	for run := 1; run <= 2; run++ {
		env := applytest.NewEnvAt(t, dir, loadConfig(t, config))
		env.Seed.PublicKeys = []string{keyA}
		if err := Run(context.Background(), env.Env); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got := map[string]string{}
		for name := range want {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			got[name] = string(data)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("run %d: authorized_keys (-want +got):\n%s", run, diff)
		}
	}
	if diff := cmp.Diff(fileInfo{Mode: 0o600, UID: 1000, GID: 1000}, statFile(t, filepath.Join(dir, "home/debian/.ssh/authorized_keys"))); diff != "" {
		t.Errorf("debian's authorized_keys mode/owner (-want +got):\n%s", diff)
	}
}
