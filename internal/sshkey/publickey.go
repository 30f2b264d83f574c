// Package sshkey reads and writes the few OpenSSH key encodings seedinit
// needs: public key blobs and authorized_keys lines (RFC 4253 §6.6,
// RFC 5656 §3.1, RFC 8709, PROTOCOL.u2f), SHA256 fingerprints, and
// private key files (openssh-key-v1 from PROTOCOL.key, plus the PEM forms
// ssh-keygen -m PEM and -m PKCS8 write). Everything it parses may come from
// user data, so every length is checked before use.
package sshkey

import (
	"bytes"
	"crypto"
	"sync"

	//lint:ignore SA1019 DSA host keys given in cloud-config are still read and reported
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Key type names as they appear in key blobs and authorized_keys lines.
const (
	TypeRSA        = "ssh-rsa"
	TypeDSA        = "ssh-dss"
	TypeECDSA256   = "ecdsa-sha2-nistp256"
	TypeECDSA384   = "ecdsa-sha2-nistp384"
	TypeECDSA521   = "ecdsa-sha2-nistp521"
	TypeED25519    = "ssh-ed25519"
	TypeSKECDSA256 = "sk-ecdsa-sha2-nistp256@openssh.com"
	TypeSKED25519  = "sk-ssh-ed25519@openssh.com"
)

// OpenSSH's bounds on RSA moduli (SSH_RSA_MINIMUM_MODULUS_SIZE and
// OPENSSL_RSA_MAX_MODULUS_BITS); sshd and ssh-keygen refuse keys outside.
const (
	minRSABits = 1024
	maxRSABits = 16384
)

// sshCurve ties an ECDSA key type to its RFC 5656 curve identifier.
type sshCurve struct {
	keyType string
	name    string
	curve   elliptic.Curve
}

// sshCurves is built on first use: crypto/elliptic sets up every curve's
// parameters on the first call, work no start of the binary should pay.
var sshCurves = sync.OnceValue(func() []sshCurve {
	return []sshCurve{
		{TypeECDSA256, "nistp256", elliptic.P256()},
		{TypeECDSA384, "nistp384", elliptic.P384()},
		{TypeECDSA521, "nistp521", elliptic.P521()},
	}
})

func curveByType(keyType string) (sshCurve, bool) {
	for _, c := range sshCurves() {
		if c.keyType == keyType {
			return c, true
		}
	}
	return sshCurve{}, false
}

func curveOf(curve elliptic.Curve) (sshCurve, bool) {
	for _, c := range sshCurves() {
		if c.curve == curve {
			return c, true
		}
	}
	return sshCurve{}, false
}

// PublicKey is a parsed SSH public key. Its wire form is always the
// canonical re-encoding, as OpenSSH hashes for fingerprints.
type PublicKey struct {
	keyType string
	// key is *rsa.PublicKey, *dsa.PublicKey, *ecdsa.PublicKey or
	// ed25519.PublicKey; for the security-key types it is the
	// authenticator's key, which verifies only FIDO signatures.
	key         crypto.PublicKey
	application string // security-key types only
	wire        []byte
}

// Type is the key's SSH type name, such as "ssh-ed25519".
func (k *PublicKey) Type() string { return k.keyType }

// Marshal returns the key blob (RFC 4253 §6.6).
func (k *PublicKey) Marshal() []byte { return bytes.Clone(k.wire) }

// CryptoKey is the key itself: *rsa.PublicKey, *dsa.PublicKey,
// *ecdsa.PublicKey or ed25519.PublicKey (for the security-key types, the
// authenticator's key).
func (k *PublicKey) CryptoKey() crypto.PublicKey { return k.key }

// Equal reports whether both are the same key.
func (k *PublicKey) Equal(other *PublicKey) bool {
	return other != nil && bytes.Equal(k.wire, other.wire)
}

// Bits is the key size ssh-keygen -l shows: the RSA modulus or DSA prime
// length, the ECDSA curve size, 256 for Ed25519 and the security-key types.
func (k *PublicKey) Bits() int {
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return key.N.BitLen()
	case *dsa.PublicKey:
		return key.P.BitLen()
	case *ecdsa.PublicKey:
		return key.Curve.Params().BitSize
	case ed25519.PublicKey:
		return 256
	}
	return 0
}

// NewPublicKey wraps an RSA, DSA, ECDSA (P-256, P-384, P-521) or Ed25519
// public key.
func NewPublicKey(pub crypto.PublicKey) (*PublicKey, error) {
	switch key := pub.(type) {
	case *rsa.PublicKey:
		if key.N == nil {
			return nil, errors.New("encode RSA public key: no modulus")
		}
		if err := checkRSA(big.NewInt(int64(key.E)), key.N); err != nil {
			return nil, fmt.Errorf("encode RSA public key: %w", err)
		}
		return newPublicKey(TypeRSA, key, "")
	case *dsa.PublicKey:
		if err := checkDSA(key); err != nil {
			return nil, fmt.Errorf("encode DSA public key: %w", err)
		}
		return newPublicKey(TypeDSA, key, "")
	case *ecdsa.PublicKey:
		c, ok := curveOf(key.Curve)
		if !ok {
			return nil, fmt.Errorf("encode ECDSA public key: curve %s has no SSH key type", curveName(key.Curve))
		}
		return newPublicKey(c.keyType, key, "")
	case ed25519.PublicKey:
		if len(key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("encode Ed25519 public key: %d bytes, want %d", len(key), ed25519.PublicKeySize)
		}
		return newPublicKey(TypeED25519, key, "")
	case *ed25519.PublicKey:
		if key == nil {
			return nil, errors.New("encode Ed25519 public key: nil key")
		}
		return NewPublicKey(*key)
	}
	return nil, fmt.Errorf("encode public key: unsupported key type %T", pub)
}

func curveName(curve elliptic.Curve) string {
	if curve == nil || curve.Params() == nil {
		return "(none)"
	}
	return curve.Params().Name
}

// newPublicKey encodes an already checked key.
func newPublicKey(keyType string, key crypto.PublicKey, application string) (*PublicKey, error) {
	w := wireWriter{}
	w.text(keyType)
	switch key := key.(type) {
	case *rsa.PublicKey:
		// The public blob puts e before n (RFC 4253 §6.6).
		w.mpint(big.NewInt(int64(key.E)))
		w.mpint(key.N)
	case *dsa.PublicKey:
		w.mpint(key.P)
		w.mpint(key.Q)
		w.mpint(key.G)
		w.mpint(key.Y)
	case *ecdsa.PublicKey:
		point, err := key.Bytes()
		if err != nil {
			return nil, fmt.Errorf("encode %s public key: %w", keyType, err)
		}
		c, _ := curveOf(key.Curve)
		w.text(c.name)
		w.bytes(point)
	case ed25519.PublicKey:
		w.bytes(key)
	}
	if keyType == TypeSKECDSA256 || keyType == TypeSKED25519 {
		w.text(application)
	}
	return &PublicKey{keyType: keyType, key: key, application: application, wire: w.buf}, nil
}

func checkRSA(e, n *big.Int) error {
	// Go's rsa package keeps e in an int and wants it odd and at least 3.
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
		return fmt.Errorf("public exponent %.20s out of range", e.String())
	}
	if bits := n.BitLen(); bits < minRSABits || bits > maxRSABits {
		return fmt.Errorf("modulus of %d bits, want %d to %d", bits, minRSABits, maxRSABits)
	}
	return nil
}

func checkDSA(key *dsa.PublicKey) error {
	for _, v := range []*big.Int{key.P, key.Q, key.G, key.Y} {
		if v == nil || v.Sign() <= 0 {
			return errors.New("missing or zero parameter")
		}
	}
	return nil
}

// ParsePublicKey parses a key blob (RFC 4253 §6.6).
func ParsePublicKey(wire []byte) (*PublicKey, error) {
	r := wireReader{rest: wire}
	keyType := r.text()
	if r.err != nil {
		return nil, fmt.Errorf("parse public key: %w", r.err)
	}
	key, application, err := readPublicFields(&r, keyType)
	if err == nil {
		err = r.finish()
	}
	if err != nil {
		return nil, fmt.Errorf("parse %.64q public key: %w", keyType, err)
	}
	return newPublicKey(keyType, key, application)
}

// readPublicFields reads the fields after the type name of a key blob.
func readPublicFields(r *wireReader, keyType string) (key crypto.PublicKey, application string, err error) {
	switch keyType {
	case TypeRSA:
		e := r.mpint()
		n := r.mpint()
		if r.err != nil {
			return nil, "", r.err
		}
		if err := checkRSA(e, n); err != nil {
			return nil, "", err
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, "", nil
	case TypeDSA:
		key := &dsa.PublicKey{}
		key.P, key.Q, key.G, key.Y = r.mpint(), r.mpint(), r.mpint(), r.mpint()
		if r.err != nil {
			return nil, "", r.err
		}
		return key, "", checkDSA(key)
	case TypeECDSA256, TypeECDSA384, TypeECDSA521, TypeSKECDSA256:
		c, _ := curveByType(keyType)
		if keyType == TypeSKECDSA256 {
			c, _ = curveByType(TypeECDSA256)
		}
		name := r.text()
		point := r.bytes()
		if keyType == TypeSKECDSA256 {
			application = r.text()
		}
		if r.err != nil {
			return nil, "", r.err
		}
		if name != c.name {
			return nil, "", fmt.Errorf("curve %.20q, want %q", name, c.name)
		}
		key, err := ecdsa.ParseUncompressedPublicKey(c.curve, point)
		if err != nil {
			return nil, "", err
		}
		return key, application, nil
	case TypeED25519, TypeSKED25519:
		point := r.bytes()
		if keyType == TypeSKED25519 {
			application = r.text()
		}
		if r.err != nil {
			return nil, "", r.err
		}
		if len(point) != ed25519.PublicKeySize {
			return nil, "", fmt.Errorf("key of %d bytes, want %d", len(point), ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(bytes.Clone(point)), application, nil
	}
	return nil, "", errors.New("unsupported key type")
}

// ParseAuthorizedKey returns the first key in data, which holds lines in
// the format of a .pub file or authorized_keys: "type base64 comment",
// optionally after options (which are skipped). Blank and '#' lines are
// passed over, as are lines whose key does not parse.
func ParseAuthorizedKey(data []byte) (*PublicKey, string, error) {
	var firstErr error
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		key, comment, err := parseKeyLine(line)
		if err == nil {
			return key, comment, nil
		}
		// Not a key at the start: perhaps options first, which OpenSSH
		// skips up to the first blank outside double quotes.
		if key, comment, optErr := parseKeyLine(skipOptions(line)); optErr == nil {
			return key, comment, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("only blank and comment lines")
	}
	return nil, "", fmt.Errorf("find an SSH public key: %w", firstErr)
}

// skipOptions drops an authorized_keys options field: everything up to the
// first space or tab outside double quotes, where \" does not end a quote.
func skipOptions(line string) string {
	quoted := false
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		if !quoted && (c == ' ' || c == '\t') {
			break
		}
		switch {
		case c == '\\' && i+1 < len(line) && line[i+1] == '"':
			i++
		case c == '"':
			quoted = !quoted
		}
	}
	return strings.TrimLeft(line[i:], " \t")
}

// parseKeyLine parses "type base64[ comment]". The type word must name the
// blob's type, as OpenSSH requires.
func parseKeyLine(line string) (*PublicKey, string, error) {
	keyType, rest := cutField(line)
	encoded, rest := cutField(rest)
	if keyType == "" || encoded == "" {
		return nil, "", errors.New("want \"type base64-key [comment]\"")
	}
	blob, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, "", fmt.Errorf("decode %.64q key: %w", keyType, err)
	}
	key, err := ParsePublicKey(blob)
	if err != nil {
		return nil, "", err
	}
	if key.Type() != keyType {
		return nil, "", fmt.Errorf("line says %.64q but the key is %s", keyType, key.Type())
	}
	return key, strings.TrimSpace(rest), nil
}

// cutField splits off the first word, skipping the blanks before it.
func cutField(s string) (field, rest string) {
	s = strings.TrimLeft(s, " \t")
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// MarshalAuthorizedKey is the .pub and authorized_keys line for key:
// "type base64[ comment]\n".
func MarshalAuthorizedKey(key *PublicKey, comment string) []byte {
	line := key.keyType + " " + base64.StdEncoding.EncodeToString(key.wire)
	if comment != "" {
		line += " " + comment
	}
	return []byte(line + "\n")
}

// FingerprintSHA256 is OpenSSH's default fingerprint: "SHA256:" and the
// unpadded base64 of the blob's SHA-256.
func FingerprintSHA256(key *PublicKey) string {
	sum := sha256.Sum256(key.wire)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}
