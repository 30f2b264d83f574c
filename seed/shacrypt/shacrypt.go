// Package shacrypt hashes and checks passwords the way glibc's crypt(3)
// does for "$5$" and "$6$", with no C library. Datasources use it for
// passwords their clouds hand over in plain text (Azure's ovf-env.xml), so
// that only the hash is ever kept; the users and chpasswd modules use it
// for the passwords that cloud-config gives.
package shacrypt

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
)

// Rounds limits and default of Drepper's "Unix crypt using SHA-256 and
// SHA-512" specification.
const (
	DefaultRounds = 5000
	MinRounds     = 1000
	MaxRounds     = 999999999
	maxSaltLen    = 16
)

// cryptAlphabet is crypt's own base-64 alphabet (not RFC 4648's).
const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// shaCrypt describes one of the two variants: they differ only in the hash
// and in how the digest's bytes are shuffled into the output.
type shaCrypt struct {
	prefix  string
	newHash func() hash.Hash
	// groups lists byte triples encoded as four characters each; the
	// leftover bytes are in tail, encoded into tailChars characters.
	groups    [][3]int
	tail      [3]int // -1 means a zero byte
	tailChars int
}

var sha512Crypt = shaCrypt{
	prefix:  "$6$",
	newHash: sha512.New,
	groups: [][3]int{
		{0, 21, 42}, {22, 43, 1}, {44, 2, 23}, {3, 24, 45}, {25, 46, 4},
		{47, 5, 26}, {6, 27, 48}, {28, 49, 7}, {50, 8, 29}, {9, 30, 51},
		{31, 52, 10}, {53, 11, 32}, {12, 33, 54}, {34, 55, 13}, {56, 14, 35},
		{15, 36, 57}, {37, 58, 16}, {59, 17, 38}, {18, 39, 60}, {40, 61, 19},
		{62, 20, 41},
	},
	tail:      [3]int{-1, -1, 63},
	tailChars: 2,
}

var sha256Crypt = shaCrypt{
	prefix:  "$5$",
	newHash: sha256.New,
	groups: [][3]int{
		{0, 10, 20}, {21, 1, 11}, {12, 22, 2}, {3, 13, 23}, {24, 4, 14},
		{15, 25, 5}, {6, 16, 26}, {27, 7, 17}, {18, 28, 8}, {9, 19, 29},
	},
	tail:      [3]int{-1, 31, 30},
	tailChars: 3,
}

// SHA512Crypt hashes password with salt (at most 16 characters are used)
// and rounds as glibc's crypt(3) does for "$6$". rounds 0 means the
// default, which is then left out of the result as crypt(3) leaves it out.
func SHA512Crypt(password, salt string, rounds int) string {
	return sha512Crypt.crypt([]byte(password), salt, rounds, rounds != 0)
}

// SHA256Crypt is SHA512Crypt's "$5$" sibling.
func SHA256Crypt(password, salt string, rounds int) string {
	return sha256Crypt.crypt([]byte(password), salt, rounds, rounds != 0)
}

// HashPassword hashes password as SHA-512 crypt with the default rounds and
// a 16-character salt drawn from random.
func HashPassword(password string, random io.Reader) (string, error) {
	salt, err := RandomString(random, maxSaltLen, cryptAlphabet)
	if err != nil {
		return "", fmt.Errorf("make a password salt: %w", err)
	}
	return SHA512Crypt(password, salt, 0), nil
}

// ErrUnsupportedHash is returned by CheckPassword for hash schemes it
// cannot compute.
var ErrUnsupportedHash = errors.New("unsupported password hash scheme")

// CheckPassword reports whether password produces hash. It knows "$5$" and
// "$6$" (with or without rounds=); other schemes give ErrUnsupportedHash.
func CheckPassword(hashed, password string) (bool, error) {
	var variant *shaCrypt
	switch {
	case strings.HasPrefix(hashed, sha512Crypt.prefix):
		variant = &sha512Crypt
	case strings.HasPrefix(hashed, sha256Crypt.prefix):
		variant = &sha256Crypt
	default:
		return false, ErrUnsupportedHash
	}
	setting := strings.TrimPrefix(hashed, variant.prefix)
	rounds, explicit := 0, false
	if rest, ok := strings.CutPrefix(setting, "rounds="); ok {
		num, after, found := strings.Cut(rest, "$")
		n, err := strconv.Atoi(num)
		if !found || err != nil {
			return false, fmt.Errorf("parse rounds of a password hash: %w", ErrUnsupportedHash)
		}
		rounds, explicit, setting = n, true, after
	}
	salt, _, found := strings.Cut(setting, "$")
	if !found {
		return false, fmt.Errorf("parse a password hash: no salt terminator: %w", ErrUnsupportedHash)
	}
	got := variant.crypt([]byte(password), salt, rounds, explicit)
	return subtle.ConstantTimeCompare([]byte(got), []byte(hashed)) == 1, nil
}

func (v *shaCrypt) crypt(password []byte, salt string, rounds int, explicitRounds bool) string {
	if len(salt) > maxSaltLen {
		salt = salt[:maxSaltLen]
	}
	if rounds == 0 {
		rounds = DefaultRounds
	}
	rounds = min(max(rounds, MinRounds), MaxRounds)
	saltBytes := []byte(salt)

	alternate := v.newHash()
	alternate.Write(password)
	alternate.Write(saltBytes)
	alternate.Write(password)
	altSum := alternate.Sum(nil)

	initial := v.newHash()
	initial.Write(password)
	initial.Write(saltBytes)
	writeRepeated(initial, altSum, len(password))
	for n := len(password); n > 0; n >>= 1 {
		if n&1 != 0 {
			initial.Write(altSum)
		} else {
			initial.Write(password)
		}
	}
	sum := initial.Sum(nil)

	passwordDigest := v.newHash()
	for range len(password) {
		passwordDigest.Write(password)
	}
	pSequence := repeatTo(passwordDigest.Sum(nil), len(password))

	saltDigest := v.newHash()
	for range 16 + int(sum[0]) {
		saltDigest.Write(saltBytes)
	}
	sSequence := repeatTo(saltDigest.Sum(nil), len(saltBytes))

	round := v.newHash()
	for i := range rounds {
		round.Reset()
		if i&1 != 0 {
			round.Write(pSequence)
		} else {
			round.Write(sum)
		}
		if i%3 != 0 {
			round.Write(sSequence)
		}
		if i%7 != 0 {
			round.Write(pSequence)
		}
		if i&1 != 0 {
			round.Write(sum)
		} else {
			round.Write(pSequence)
		}
		sum = round.Sum(sum[:0])
	}

	var out strings.Builder
	out.WriteString(v.prefix)
	if explicitRounds {
		fmt.Fprintf(&out, "rounds=%d$", rounds)
	}
	out.WriteString(salt)
	out.WriteByte('$')
	for _, g := range v.groups {
		encode24(&out, sum[g[0]], sum[g[1]], sum[g[2]], 4)
	}
	byteAt := func(i int) byte {
		if i < 0 {
			return 0
		}
		return sum[i]
	}
	encode24(&out, byteAt(v.tail[0]), byteAt(v.tail[1]), byteAt(v.tail[2]), v.tailChars)
	return out.String()
}

func writeRepeated(h hash.Hash, block []byte, n int) {
	for ; n > len(block); n -= len(block) {
		h.Write(block)
	}
	h.Write(block[:n])
}

func repeatTo(block []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, block[:min(len(block), n-len(out))]...)
	}
	return out
}

func encode24(out *strings.Builder, b2, b1, b0 byte, chars int) {
	w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
	for range chars {
		out.WriteByte(cryptAlphabet[w&0x3f])
		w >>= 6
	}
}

// RandomString draws n characters of alphabet from random without modulo
// bias.
func RandomString(random io.Reader, n int, alphabet string) (string, error) {
	if random == nil {
		return "", errors.New("no source of randomness")
	}
	limit := 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		if _, err := io.ReadFull(random, buf[:]); err != nil {
			return "", err
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}
