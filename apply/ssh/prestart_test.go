package ssh

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply/applytest"
)

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) {
	return 0, errors.New("no randomness after the prestart")
}

// The key started when the config was merged is the one written, with the
// comment of the hostname set after it was started.
func TestPrestartedKeyIsWrittenWithTheLaterHostname(t *testing.T) {
	requireRoot(t)
	recordKeyCalls(t)
	dir := t.TempDir()
	env := applytest.NewEnvAt(t, dir, loadConfig(t, "ssh_genkeytypes: [ed25519]"))
	pending, ok := prestartHostKeys(context.Background(), env.Env).(pendingKeys)
	if !ok || !pending.has("ed25519") || len(pending) != 1 {
		t.Fatalf("prestart started %v, want the ed25519 key", pending)
	}
	// Ed25519 reads env.Random: a key made again in Run would fail here.
	env.Random = failingReader{}
	env.Prestarted = pending
	writeHostFile(t, dir, "etc/hostname", "web-2\n", 0o644)
	if err := Run(context.Background(), env.Env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkGeneratedKey(t, dir, "ed25519", "root@web-2", fileInfo{Mode: 0o600})
	if len(pending) != 0 {
		t.Errorf("keys left untaken: %v", pending)
	}
}

func TestPrestartStartsWhatRunWouldGenerate(t *testing.T) {
	tests := []struct {
		name, config string
		existing     []string // host keys already in /etc/ssh
		want         []string
	}{
		{name: "defaults", want: []string{"ecdsa", "ed25519", "rsa"}},
		{name: "listed types, unknown and dsa left to Run", config: "ssh_genkeytypes: [ed25519, dsa, foo, ed25519]", want: []string{"ed25519"}},
		{name: "kept keys are not made", config: "ssh_deletekeys: false\nssh_genkeytypes: [ed25519, ecdsa]", existing: []string{"ed25519"}, want: []string{"ecdsa"}},
		{name: "deleted keys are made again", config: "ssh_genkeytypes: [ed25519]", existing: []string{"ed25519"}, want: []string{"ed25519"}},
		{name: "ssh_keys given", config: "ssh_keys: {}\nssh_genkeytypes: [ed25519]"},
		{name: "none", config: "ssh_genkeytypes: null"},
		{name: "unreadable setting", config: "ssh_deletekeys: [1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, k := range tt.existing {
				writeHostFile(t, dir, filepath.Join("etc/ssh", "ssh_host_"+k+"_key"), "key\n", 0o600)
			}
			env := applytest.NewEnvAt(t, dir, loadConfig(t, tt.config))
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the test needs the types, not the keys
			pending, _ := prestartHostKeys(ctx, env.Env).(pendingKeys)
			var got []string
			for k := range pending {
				got = append(got, k)
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("started %v, want %v", got, tt.want)
			}
		})
	}
}

// An RSA key PID 1 started before the config was known is the one the
// ssh module's Prestart takes when the config asks for RSA, once; a config
// without RSA leaves it untaken.
func TestEarlyRSAKeyIsTaken(t *testing.T) {
	t.Cleanup(func() { takeEarly("rsa") })
	made := make(chan time.Duration, 2)
	StartEarlyRSA(func(_ time.Time, d time.Duration, err error) {
		if err != nil {
			t.Errorf("early key: %v", err)
		}
		made <- d
	})
	StartEarlyRSA(func(time.Time, time.Duration, error) { made <- 0 }) // already started: not again

	without := applytest.NewEnvAt(t, t.TempDir(), loadConfig(t, "ssh_genkeytypes: [ed25519]"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	prestartHostKeys(ctx, without.Env)
	early.Lock()
	_, left := early.keys["rsa"]
	early.Unlock()
	if !left {
		t.Fatal("a config without rsa took the early rsa key")
	}

	env := applytest.NewEnvAt(t, t.TempDir(), loadConfig(t, "ssh_genkeytypes: [rsa]"))
	pending, _ := prestartHostKeys(context.Background(), env.Env).(pendingKeys)
	if !pending.has("rsa") {
		t.Fatalf("prestart started %v, want rsa", pending)
	}
	if _, ok := takeEarly("rsa"); ok {
		t.Fatal("the early key is still there after Prestart took it")
	}
	key, err := pending.take(context.Background(), "rsa", "root@web-3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(key.Public), "ssh-rsa ") || !strings.HasSuffix(strings.TrimSpace(string(key.Public)), " root@web-3") {
		t.Errorf("public key %q, want an ssh-rsa line with the comment given when taken", key.Public)
	}
	select {
	case <-made:
	case <-time.After(time.Minute):
		t.Fatal("the early key never said it was made")
	}
	if len(made) != 0 {
		t.Error("the early key was made twice")
	}
}
