package ssh

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seedinit/seedinit/internal/sshkey"
)

// Key sizes ssh-keygen uses by default on Debian bookworm (OpenSSH 9.2):
// RSA 3072 bits, ECDSA on P-256; Ed25519 has one size.
const (
	rsaHostKeyBits = 3072
)

// HostKey is a generated host key pair, encoded as ssh-keygen writes it.
type HostKey struct {
	Type string // "rsa", "ecdsa" or "ed25519", as in ssh_genkeytypes
	// Private is the OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE
	// KEY-----"), unencrypted, with the comment inside.
	Private []byte
	// Public is the .pub file: "type base64 comment\n".
	Public    []byte
	PublicKey *sshkey.PublicKey
	Comment   string
}

// errUnsupportedKeyType marks a key type seedinit does not generate; the
// caller reports it like ssh-keygen's "unknown key type".
var errUnsupportedKeyType = errors.New("unsupported key type")

// GenerateHostKey makes a new host key of keyType ("rsa", "ecdsa",
// "ed25519") with the given comment. Ed25519 keys take their seed from
// random; since Go 1.26 RSA and ECDSA generation always use the system's
// secure source and ignore random.
func GenerateHostKey(keyType, comment string, random io.Reader) (*HostKey, error) {
	priv, err := generateSigner(keyType, random)
	if err != nil {
		return nil, err
	}
	return encodeHostKey(keyType, priv, comment)
}

// generateSigner is the slow half of GenerateHostKey: the key itself,
// which needs no comment and so can be made before the hostname is known.
func generateSigner(keyType string, random io.Reader) (crypto.Signer, error) {
	var priv crypto.Signer
	var err error
	switch keyType {
	case "ed25519":
		var seedBytes [ed25519.SeedSize]byte
		if random == nil {
			_, priv, err = ed25519.GenerateKey(nil)
		} else if _, err = io.ReadFull(random, seedBytes[:]); err == nil {
			priv = ed25519.NewKeyFromSeed(seedBytes[:])
		}
	case "ecdsa":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), random)
	case "rsa":
		priv, err = rsa.GenerateKey(random, rsaHostKeyBits)
	default:
		return nil, fmt.Errorf("generate %s host key: %w", keyType, errUnsupportedKeyType)
	}
	if err != nil {
		return nil, fmt.Errorf("generate %s host key: %w", keyType, err)
	}
	return priv, nil
}

// encodeHostKey writes priv as ssh-keygen's files with comment.
func encodeHostKey(keyType string, priv crypto.Signer, comment string) (*HostKey, error) {
	block, err := sshkey.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("encode %s host key: %w", keyType, err)
	}
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("encode %s public key: %w", keyType, err)
	}
	return &HostKey{
		Type:      keyType,
		Private:   encodeOpenSSHPEM(block),
		Public:    []byte(authorizedLine(pub, comment) + "\n"),
		PublicKey: pub,
		Comment:   comment,
	}, nil
}

// encodeOpenSSHPEM wraps the base64 body at 70 columns, as ssh-keygen does
// (encoding/pem wraps at 64; both parse, but the files then look like
// ssh-keygen's).
func encodeOpenSSHPEM(block *pem.Block) []byte {
	body := pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes})
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) < 2 {
		return body
	}
	joined := strings.Join(lines[1:len(lines)-1], "")
	var b strings.Builder
	b.WriteString(lines[0] + "\n")
	for len(joined) > 70 {
		b.WriteString(joined[:70] + "\n")
		joined = joined[70:]
	}
	if joined != "" {
		b.WriteString(joined + "\n")
	}
	b.WriteString(lines[len(lines)-1] + "\n")
	return []byte(b.String())
}

// authorizedLine is "type base64[ comment]" without a newline.
func authorizedLine(pub *sshkey.PublicKey, comment string) string {
	return strings.TrimSuffix(string(sshkey.MarshalAuthorizedKey(pub, comment)), "\n")
}

// DerivePublicKey returns what cloud-init's
// `o=$(ssh-keygen -yf KEY) && echo "$o" root@localhost` writes for a private
// key given in cloud-config without its public half: the public key, the
// key's own comment when the file carries one (OpenSSH format), then
// "root@localhost".
func DerivePublicKey(private []byte) ([]byte, error) {
	priv, err := sshkey.ParseRawPrivateKey(private)
	if errors.Is(err, sshkey.ErrPassphraseMissing) {
		return nil, errors.New("the private key is encrypted (ssh-keygen -y would ask for its passphrase)")
	}
	if err != nil {
		return nil, err
	}
	pub, err := sshkey.PublicKeyOf(priv)
	if err != nil {
		return nil, err
	}
	comment, _ := OpenSSHKeyComment(private)
	line := authorizedLine(pub, comment)
	return []byte(line + " root@localhost\n"), nil
}

// privateKeyLayout lists, per key type, the fields that precede the
// comment in an unencrypted openssh-key-v1 private section ('s' a
// length-prefixed string or mpint, 'b' one byte), after PROTOCOL.key and
// sshkey_private_serialize in OpenSSH.
var privateKeyLayout = map[string]string{
	"ssh-rsa":                            "ssssss", // n e d iqmp p q
	"ssh-dss":                            "sssss",  // p q g y x
	"ssh-ed25519":                        "ss",     // public, private
	"ecdsa-sha2-nistp256":                "sss",    // curve, public point, scalar
	"ecdsa-sha2-nistp384":                "sss",
	"ecdsa-sha2-nistp521":                "sss",
	"sk-ssh-ed25519@openssh.com":         "ssbss", // public, application, flags, handle, reserved
	"sk-ecdsa-sha2-nistp256@openssh.com": "sssbss",
}

// OpenSSHKeyComment returns the comment stored in an unencrypted
// "OPENSSH PRIVATE KEY" file. Other formats (PEM RSA, PKCS#8) carry no
// comment: ok is false for them and for anything malformed.
func OpenSSHKeyComment(private []byte) (comment string, ok bool) {
	block, _ := pem.Decode(private)
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" {
		return "", false
	}
	const magic = "openssh-key-v1\x00"
	data := block.Bytes
	if !strings.HasPrefix(string(data), magic) {
		return "", false
	}
	r := wireReader{data: data[len(magic):]}
	cipher, _ := r.str()
	kdf, _ := r.str()
	r.str() // kdf options
	nkeys, _ := r.uint32()
	if r.failed || string(cipher) != "none" || string(kdf) != "none" || nkeys != 1 {
		return "", false
	}
	r.str() // public key blob
	section, _ := r.str()
	if r.failed {
		return "", false
	}
	p := wireReader{data: section}
	check1, _ := p.uint32()
	check2, _ := p.uint32()
	keyType, _ := p.str()
	if p.failed || check1 != check2 {
		return "", false
	}
	layout, known := privateKeyLayout[string(keyType)]
	if !known {
		return "", false
	}
	for _, kind := range layout {
		if kind == 'b' {
			p.byte()
		} else {
			p.str()
		}
	}
	c, _ := p.str()
	if p.failed {
		return "", false
	}
	return string(c), true
}

// wireReader reads SSH wire-format values; after the first short read every
// later read fails too, so callers check failed once at the end.
type wireReader struct {
	data   []byte
	failed bool
}

func (r *wireReader) uint32() (uint32, bool) {
	if r.failed || len(r.data) < 4 {
		r.failed = true
		return 0, false
	}
	v := binary.BigEndian.Uint32(r.data)
	r.data = r.data[4:]
	return v, true
}

func (r *wireReader) byte() (byte, bool) {
	if r.failed || len(r.data) < 1 {
		r.failed = true
		return 0, false
	}
	v := r.data[0]
	r.data = r.data[1:]
	return v, true
}

func (r *wireReader) str() ([]byte, bool) {
	n, ok := r.uint32()
	if !ok || uint64(n) > uint64(len(r.data)) {
		r.failed = true
		return nil, false
	}
	v := r.data[:n]
	r.data = r.data[n:]
	return v, true
}

// Randomart draws OpenSSH's "drunken bishop" picture of a key's SHA256
// fingerprint, the box ssh-keygen prints after generating a key.
func Randomart(pub *sshkey.PublicKey) string {
	const (
		width   = 17
		height  = 9
		symbols = " .o+=*BOX@%&#/^SE"
	)
	// The last two symbols mark the start and the end; ordinary cells stop
	// counting before them.
	maxVisits := len(symbols) - 1
	var field [width][height]int
	digest := sha256.Sum256(pub.Marshal())
	x, y := width/2, height/2
	for _, b := range digest {
		input := int(b)
		for range 4 {
			if input&1 != 0 {
				x++
			} else {
				x--
			}
			if input&2 != 0 {
				y++
			} else {
				y--
			}
			x = min(max(x, 0), width-1)
			y = min(max(y, 0), height-1)
			if field[x][y] < maxVisits-2 {
				field[x][y]++
			}
			input >>= 2
		}
	}
	field[width/2][height/2] = maxVisits - 1
	field[x][y] = maxVisits

	title := fmt.Sprintf("[%s %d]", keyTypeLabel(pub), pub.Bits())
	if len(title) > width {
		title = fmt.Sprintf("[%s]", keyTypeLabel(pub))
	}
	var b strings.Builder
	b.WriteString(boxRule(title, width) + "\n")
	for row := range height {
		b.WriteByte('|')
		for col := range width {
			b.WriteByte(symbols[min(field[col][row], maxVisits)])
		}
		b.WriteString("|\n")
	}
	b.WriteString(boxRule("[SHA256]", width))
	return b.String()
}

func boxRule(title string, width int) string {
	left := (width - len(title)) / 2
	right := width - len(title) - left
	if left < 0 {
		left, right = 0, 0
	}
	return "+" + strings.Repeat("-", left) + title + strings.Repeat("-", right) + "+"
}

// keyTypeLabel is OpenSSH's short upper-case name for a key type.
func keyTypeLabel(pub *sshkey.PublicKey) string {
	switch pub.Type() {
	case sshkey.TypeRSA:
		return "RSA"
	case sshkey.TypeDSA:
		return "DSA"
	case sshkey.TypeECDSA256, sshkey.TypeECDSA384, sshkey.TypeECDSA521:
		return "ECDSA"
	case sshkey.TypeED25519:
		return "ED25519"
	case sshkey.TypeSKECDSA256:
		return "ECDSA-SK"
	case sshkey.TypeSKED25519:
		return "ED25519-SK"
	}
	return strings.ToUpper(pub.Type())
}
