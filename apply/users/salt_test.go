package users

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed/shacrypt"
)

// blockingRandom stands for crypto/rand before the kernel's pool is
// ready: reading it is what PID 1 must not do for a salt. It hands out
// fixed bytes and counts the reads.
type blockingRandom struct {
	mu    sync.Mutex
	reads int
}

func (b *blockingRandom) Read(p []byte) (int, error) {
	b.mu.Lock()
	b.reads++
	b.mu.Unlock()
	for i := range p {
		p[i] = 'R'
	}
	return len(p), nil
}

func earlyBytes() io.Reader { return bytes.NewReader(bytes.Repeat([]byte{42, 7, 199}, 2048)) }

// A password's salt comes from env.EarlyRandom, never from env.Random
// (crypto/rand, which blocks until the pool is ready): a plain password
// is hashed without reading Random at all, and a RANDOM password reads
// Random for the password only.
func TestPasswordSaltsDoNotWaitForCryptoRand(t *testing.T) {
	tests := []struct {
		name   string
		config string
		run    func(context.Context, *apply.Env) error
		user   string
		// password is the one hashed; "" means the RANDOM one on the console.
		password   string
		randomRead bool
	}{
		{
			name:     "users_groups plain_text_passwd",
			config:   "users:\n  - name: alice\n    plain_text_passwd: pw-alice\n    lock_passwd: false\n",
			run:      runUsersGroups,
			user:     "alice",
			password: "pw-alice",
		},
		{
			name:     "chpasswd text",
			config:   "chpasswd:\n  expire: false\n  users:\n    - {name: bob, password: pw-bob, type: text}\n",
			run:      runSetPasswords,
			user:     "bob",
			password: "pw-bob",
		},
		{
			name:       "chpasswd RANDOM",
			config:     "chpasswd:\n  expire: false\n  users:\n    - {name: eve, type: RANDOM}\n",
			run:        runSetPasswords,
			user:       "eve",
			randomRead: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pinClock(t)
			dir := passwordsRoot(t)
			env := newEnv(t, dir, tt.config)
			random := &blockingRandom{}
			env.Random = random
			env.EarlyRandom = earlyBytes()
			if err := tt.run(context.Background(), env.Env); err != nil && !errors.Is(err, apply.ErrSkipped) {
				t.Fatal(err)
			}
			if got := random.reads > 0; got != tt.randomRead {
				t.Errorf("env.Random read %d times; want read: %v", random.reads, tt.randomRead)
			}
			password := tt.password
			if password == "" {
				m := regexp.MustCompile(`(?m)^` + tt.user + `:(\S+)$`).FindStringSubmatch(env.Console.String())
				if m == nil {
					t.Fatalf("no random password on the console: %q", env.Console.String())
				}
				password = m[1]
				fromRandom, err := shacrypt.RandomString(&blockingRandom{}, randomPasswordLength, randomPasswordAlphabet)
				if err != nil {
					t.Fatal(err)
				}
				if password != fromRandom {
					t.Errorf("RANDOM password %q, want %q: drawn from env.Random", password, fromRandom)
				}
			}
			want, err := shacrypt.HashPassword(password, earlyBytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(lineOf(t, readFile(t, dir, "etc/shadow"), tt.user), ":")[1]; got != want {
				t.Errorf("%s's hash = %q, want %q (salted from EarlyRandom)", tt.user, got, want)
			}
		})
	}
}

// Modules that leave EarlyRandom unset get earlyrand, which never blocks.
func TestEarlyRandDefault(t *testing.T) {
	env := &apply.Env{}
	var b [8]byte
	if _, err := io.ReadFull(env.EarlyRand(), b[:]); err != nil {
		t.Fatal(err)
	}
	fixed := bytes.NewReader(nil)
	env.EarlyRandom = fixed
	if env.EarlyRand() != fixed {
		t.Error("EarlyRand ignores EarlyRandom")
	}
}
