package ssh

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"strings"
	"unicode/utf8"

	"github.com/seedinit/seedinit/apply/users"
)

// AuthorizedKey is one authorized_keys line split as cloud-init's
// AuthKeyLineParser splits it. A line that is not a key (comment, blank,
// unknown type) has only Source.
type AuthorizedKey struct {
	Source  string
	Options string
	Type    string
	Base64  string
	Comment string
}

// Valid reports whether the line held a key.
func (k AuthorizedKey) Valid() bool { return k.Type != "" && k.Base64 != "" }

// ParseAuthorizedKey splits an authorized_keys line into options, key
// type, base64 blob and comment with apply/users' parser, the one that
// writes the files.
func ParseAuthorizedKey(line string) AuthorizedKey {
	l := users.ParseAuthKeyLine(line, "")
	return AuthorizedKey{Source: l.Source, Options: l.Options, Type: l.KeyType, Base64: l.Base64, Comment: l.Comment}
}

// KeyFingerprint is one row of cloud-init's authorized keys table.
type KeyFingerprint struct {
	Type        string
	Fingerprint string // hex pairs joined by ':', or "?" when undecodable
	Options     string
	Comment     string
}

// Fingerprints returns the fingerprint rows cc_ssh_authkey_fingerprints
// shows for authorized_keys lines, hashed with hashName ("sha256" by
// default in cloud-init, or md5, sha1, sha224, sha384, sha512). Lines that
// hold no key are left out.
func Fingerprints(pubkeyLines []string, hashName string) []KeyFingerprint {
	var rows []KeyFingerprint
	for _, line := range pubkeyLines {
		k := ParseAuthorizedKey(line)
		if !k.Valid() || !users.ValidKeyType(strings.ToLower(strings.TrimFunc(k.Type, pySpace))) {
			continue
		}
		rows = append(rows, KeyFingerprint{
			Type:        k.Type,
			Fingerprint: hexFingerprint(k.Base64, hashName),
			Options:     k.Options,
			Comment:     k.Comment,
		})
	}
	return rows
}

// FingerprintTable is what cc_ssh_authkey_fingerprints prints to the
// console for one user: a titled table of the keys in keyFile, each line
// prefixed "ci-info: ".
func FingerprintTable(user, keyFile string, pubkeyLines []string, hashName string) string {
	const prefix = "ci-info: "
	if len(pubkeyLines) == 0 {
		return prefix + "no authorized SSH keys fingerprints found for user " + user + ".\n"
	}
	header := []string{"Keytype", "Fingerprint (" + hashName + ")", "Options", "Comment"}
	var rows [][]string
	for _, fp := range Fingerprints(pubkeyLines, hashName) {
		rows = append(rows, []string{
			orDash(fp.Type), orDash(fp.Fingerprint), orDash(fp.Options), orDash(fp.Comment),
		})
	}
	table := simpleTable(header, rows)
	width := 0
	for _, l := range table {
		width = max(width, utf8.RuneCountInString(l))
	}
	title := formatCenter("Authorized keys from "+keyFile+" for user "+user, '+', width)
	var b strings.Builder
	for _, l := range append([]string{title}, table...) {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// simpleTable draws cloud-init's SimpleTable: columns as wide as their
// widest cell plus one space each side, cells centered as Python's
// str.center does.
func simpleTable(header []string, rows [][]string) []string {
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	rule := "+"
	for _, w := range widths {
		rule += strings.Repeat("-", w+2) + "+"
	}
	row := func(cells []string) string {
		s := "|"
		for i, c := range cells {
			s += strCenter(c, widths[i]+2) + "|"
		}
		return s
	}
	lines := []string{rule, row(header), rule}
	for _, r := range rows {
		lines = append(lines, row(r))
	}
	return append(lines, rule)
}

// strCenter is Python's str.center: on an odd margin the extra space goes
// left when the width is odd, right otherwise.
func strCenter(s string, width int) string {
	margin := width - utf8.RuneCountInString(s)
	if margin <= 0 {
		return s
	}
	left := margin/2 + (margin & width & 1)
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", margin-left)
}

// formatCenter is Python's "{:^N}" with a fill character: the extra fill
// on an odd margin goes right.
func formatCenter(s string, fill rune, width int) string {
	margin := width - utf8.RuneCountInString(s)
	if margin <= 0 {
		return s
	}
	left := margin / 2
	return strings.Repeat(string(fill), left) + s + strings.Repeat(string(fill), margin-left)
}

// hexFingerprint hashes the decoded key blob as cloud-init's
// _gen_fingerprint does, "?" when the blob or the hash name is bad.
func hexFingerprint(b64, hashName string) string {
	if b64 == "" {
		return ""
	}
	h := newHash(hashName)
	blob, ok := pyB64Decode(b64)
	if h == nil || !ok {
		return "?"
	}
	h.Write(blob)
	sum := hex.EncodeToString(h.Sum(nil))
	pairs := make([]string, 0, len(sum)/2)
	for i := 0; i < len(sum); i += 2 {
		pairs = append(pairs, sum[i:i+2])
	}
	return strings.Join(pairs, ":")
}

func newHash(name string) hash.Hash {
	switch strings.ToLower(name) {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return nil
}

// pyB64Decode is Python's lenient base64.b64decode: characters outside the
// alphabet are skipped, decoding stops at complete padding, and a string
// that ends mid-quantum without padding is an error.
func pyB64Decode(s string) ([]byte, bool) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return nil, false // b64decode refuses non-ASCII text
		}
	}
	var out []byte
	quadPos, pads := 0, 0
	var left byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '=' {
			if quadPos >= 2 {
				pads++
				if quadPos+pads >= 4 {
					return out, true
				}
			}
			continue
		}
		idx := strings.IndexByte(alphabet, c)
		if idx < 0 {
			continue
		}
		v := byte(idx)
		pads = 0
		switch quadPos {
		case 0:
			quadPos, left = 1, v
		case 1:
			out = append(out, left<<2|v>>4)
			quadPos, left = 2, v&0x0f
		case 2:
			out = append(out, left<<4|v>>2)
			quadPos, left = 3, v&0x03
		case 3:
			out = append(out, left<<6|v)
			quadPos, left = 0, 0
		}
	}
	return out, quadPos == 0
}
