package shacrypt

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// Test vectors from Ulrich Drepper's "Unix crypt using SHA-256 and SHA-512".
var sha512Vectors = []struct{ salt, password, want string }{
	{"$6$saltstring", "Hello world!", "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"},
	{"$6$rounds=10000$saltstringsaltstring", "Hello world!", "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."},
	{"$6$rounds=5000$toolongsaltstring", "This is just a test", "$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0"},
	{"$6$rounds=1400$anotherlongsaltstring", "a very much longer text to encrypt.  This one even stretches over morethan one line.", "$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1"},
	{"$6$rounds=77777$short", "we have a short salt string but not a short password", "$6$rounds=77777$short$WuQyW2YR.hBNpjjRhpYD/ifIw05xdfeEyQoMxIXbkvr0gge1a1x3yRULJ5CCaUeOxFmtlcGZelFl5CxtgfiAc0"},
	{"$6$rounds=123456$asaltof16chars..", "a short string", "$6$rounds=123456$asaltof16chars..$BtCwjqMJGx5hrJhZywWvt0RLE8uZ4oPwcelCjmw2kSYu.Ec6ycULevoBK25fs2xXgMNrCzIMVcgEJAstJeonj1"},
	{"$6$rounds=10$roundstoolow", "the minimum number is still observed", "$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX."},
}

// splitSetting reads the spec's "$6$[rounds=N$]salt" settings.
func splitSetting(t *testing.T, setting string) (salt string, rounds int) {
	t.Helper()
	rest := strings.TrimPrefix(strings.TrimPrefix(setting, "$6$"), "$5$")
	if r, ok := strings.CutPrefix(rest, "rounds="); ok {
		num, s, _ := strings.Cut(r, "$")
		for _, c := range num {
			rounds = rounds*10 + int(c-'0')
		}
		return s, rounds
	}
	return rest, 0
}

func TestSHA512CryptSpecVectors(t *testing.T) {
	for _, v := range sha512Vectors {
		t.Run(v.salt, func(t *testing.T) {
			salt, rounds := splitSetting(t, v.salt)
			if got := SHA512Crypt(v.password, salt, rounds); got != v.want {
				t.Errorf("SHA512Crypt(%q, %q, %d)\n got %s\nwant %s", v.password, salt, rounds, got, v.want)
			}
			ok, err := CheckPassword(v.want, v.password)
			if err != nil || !ok {
				t.Errorf("CheckPassword(want, password) = %v, %v; want true", ok, err)
			}
			if ok, _ := CheckPassword(v.want, v.password+"x"); ok {
				t.Error("CheckPassword accepted a wrong password")
			}
		})
	}
}

func TestSHA256CryptSpecVectors(t *testing.T) {
	vectors := []struct{ salt, password, want string }{
		{"$5$saltstring", "Hello world!", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"},
		{"$5$rounds=10000$saltstringsaltstring", "Hello world!", "$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"},
	}
	for _, v := range vectors {
		t.Run(v.salt, func(t *testing.T) {
			salt, rounds := splitSetting(t, v.salt)
			if got := SHA256Crypt(v.password, salt, rounds); got != v.want {
				t.Errorf("SHA256Crypt\n got %s\nwant %s", got, v.want)
			}
		})
	}
}

// TestSHA512CryptMatchesOpenSSL compares with `openssl passwd -6`, which
// uses glibc-compatible SHA-512 crypt, over awkward passwords and salts.
func TestSHA512CryptMatchesOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		testenv.Skip(t, "openssl is not installed: no external SHA-512 crypt to compare with")
	}
	cases := []struct{ password, salt string }{
		{"p", "s"},
		{"correct horse battery staple", "0123456789abcdef"},
		{strings.Repeat("x", 64), "exactly16chars.."},
		{strings.Repeat("long", 40), "./AZaz09"},
		{"ünïcødé ✓", "salty"},
	}
	for _, c := range cases {
		t.Run(c.salt, func(t *testing.T) {
			cmd := exec.Command(openssl, "passwd", "-6", "-salt", c.salt, "-stdin")
			cmd.Stdin = strings.NewReader(c.password + "\n")
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				testenv.Skipf(t, "openssl passwd -6 failed (%v): too old an openssl", err)
			}
			want := strings.TrimSpace(out.String())
			if got := SHA512Crypt(c.password, c.salt, 0); got != want {
				t.Errorf("SHA512Crypt(%q, %q)\n got %s\nwant %s", c.password, c.salt, got, want)
			}
		})
	}
}

// TestSHA512CryptMatchesPythonCrypt compares with glibc's crypt(3) through
// python3's crypt module, rounds included.
func TestSHA512CryptMatchesPythonCrypt(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-W", "ignore", "-c", "import crypt").Run(); err != nil {
		testenv.Skipf(t, "%s cannot import crypt (%v): no oracle to compare with", python, err)
	}
	cases := []struct{ password, setting string }{
		{"secret", "$6$rounds=1000$abcdefgh"},
		{"secret", "$6$rounds=6000$abcdefgh"},
		{"pässwörd", "$6$XyZ./123"},
		{"pw", "$5$rounds=2000$shortsalt"},
	}
	for _, c := range cases {
		t.Run(c.setting, func(t *testing.T) {
			out, err := exec.Command(python, "-W", "ignore", "-c",
				"import crypt,sys; print(crypt.crypt(sys.argv[1], sys.argv[2]))", c.password, c.setting).Output()
			if err != nil {
				t.Fatalf("python3 crypt: %v", err)
			}
			want := strings.TrimSpace(string(out))
			ok, err := CheckPassword(want, c.password)
			if err != nil || !ok {
				t.Errorf("CheckPassword(%s, %q) = %v, %v; want true", want, c.password, ok, err)
			}
		})
	}
}

func TestHashPasswordUsesRandomSalt(t *testing.T) {
	random := bytes.NewReader(bytes.Repeat([]byte{7}, 256))
	got, err := HashPassword("pw", random)
	if err != nil {
		t.Fatal(err)
	}
	want := SHA512Crypt("pw", strings.Repeat(string(cryptAlphabet[7]), 16), 0)
	if got != want {
		t.Errorf("HashPassword = %s, want %s", got, want)
	}
	if _, err := HashPassword("pw", bytes.NewReader(nil)); err == nil {
		t.Error("HashPassword with an empty random source succeeded")
	}
}

func TestCheckPasswordUnsupported(t *testing.T) {
	for _, h := range []string{"", "!", "*", "$1$abc$def", "$y$j9T$abc$def", "$6$nosalt", "$6$rounds=x$a$b"} {
		if ok, err := CheckPassword(h, "pw"); ok || err == nil {
			t.Errorf("CheckPassword(%q) = %v, %v; want false and an error", h, ok, err)
		}
	}
}

func FuzzCheckPassword(f *testing.F) {
	f.Add("$6$rounds=1000$salt$hash", "pw")
	f.Add("$5$salt$x", "")
	f.Add("$6$$", "x")
	f.Fuzz(func(t *testing.T, hashed, password string) {
		if strings.Contains(hashed, "rounds=") {
			// Large round counts are slow, not wrong; keep the fuzzer fast.
			return
		}
		CheckPassword(hashed, password)
	})
}
