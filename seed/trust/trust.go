// Package trust decides whether a seed may be applied, once, over
// everything the seed applies. A seed's publisher signs one manifest
// (manifest.go) that lists each part by role and digest and may bind the
// seed to instances and to a window of time; the signature is OpenSSH's
// sshsig format (PROTOCOL.sshsig, what `ssh-keygen -Y sign` writes) made
// with an Ed25519 key in the namespace "seedinit-seed-manifest"; the
// trusted keys are authorized_keys lines. Decide (decide.go) builds the
// seed to apply from the documents the manifest covers and nothing else.
//
// sshsig rather than minisign: ssh-keygen is on every machine that
// builds images, the keys are the ones operators already handle, the
// namespace keeps a seed signature from being taken for a git or a file
// signature, and the armored text fits where seeds travel (files, HTTP,
// credentials, fw_cfg).
package trust

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/seedinit/seedinit/internal/sshkey"
)

// Namespace is the sshsig namespace of seed manifest signatures:
// `ssh-keygen -Y sign -n seedinit-seed-manifest` makes them too. It is not
// the "seedinit-seed" of the signatures seedinit made over each part
// before manifests: none of those can pass for a manifest's.
const Namespace = "seedinit-seed-manifest"

// Policy says what unsigned or badly signed seed parts get.
type Policy int

const (
	// Off: signatures are not looked at (the default).
	Off Policy = iota
	// Warn: every part is applied; the ones a trusted manifest does not
	// cover are reported.
	Warn
	// Require: only what a trusted manifest covers is applied.
	Require
)

func (p Policy) String() string {
	switch p {
	case Warn:
		return "warn"
	case Require:
		return "require"
	}
	return "off"
}

// ParsePolicy reads "off", "warn" or "require".
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "":
		return Off, nil
	case "warn":
		return Warn, nil
	case "require":
		return Require, nil
	}
	return Off, fmt.Errorf("trust policy %q: want off, warn or require", s)
}

// Keys are the trusted Ed25519 keys.
type Keys []*sshkey.PublicKey

// ParseKeys reads authorized_keys lines ("ssh-ed25519 AAAA... comment");
// blank and '#' lines are skipped. A line that is not an Ed25519 key is
// an error naming it: a trust anchor is never passed over silently.
func ParseKeys(data []byte, where string) (Keys, error) {
	var keys Keys
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, err := sshkey.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", where, i+1, err)
		}
		if k.Type() != sshkey.TypeED25519 {
			return nil, fmt.Errorf("%s line %d: a %s key; seed signatures are Ed25519 (ssh-ed25519)", where, i+1, k.Type())
		}
		keys = append(keys, k)
	}
	return keys, nil
}

const (
	armorBegin   = "-----BEGIN SSH SIGNATURE-----"
	armorEnd     = "-----END SSH SIGNATURE-----"
	magic        = "SSHSIG"
	sigVersion   = 1
	maxSignature = 16 << 10
)

// ErrUntrusted is a signature that is sound but made by a key not among
// the trusted ones.
var ErrUntrusted = errors.New("signed by a key that is not trusted")

// Verify checks an armored signature over message and returns the
// trusted key that made it.
func (k Keys) Verify(message, armored []byte) (*sshkey.PublicKey, error) {
	sig, err := parseArmored(armored)
	if err != nil {
		return nil, err
	}
	if sig.namespace != Namespace {
		return nil, fmt.Errorf("signature for namespace %q, not %q", sig.namespace, Namespace)
	}
	if sig.key.Type() != sshkey.TypeED25519 || sig.sigType != sshkey.TypeED25519 {
		return nil, fmt.Errorf("a %s signature; seed signatures are Ed25519", sig.sigType)
	}
	var trusted *sshkey.PublicKey
	for _, t := range k {
		if t.Equal(sig.key) {
			trusted = t
			break
		}
	}
	if trusted == nil {
		return nil, fmt.Errorf("%w (%s)", ErrUntrusted, sshkey.FingerprintSHA256(sig.key))
	}
	h, err := newHash(sig.hashAlg)
	if err != nil {
		return nil, err
	}
	h.Write(message)
	pub, _ := trusted.CryptoKey().(ed25519.PublicKey)
	if len(sig.blob) != ed25519.SignatureSize || !ed25519.Verify(pub, signedData(sig.namespace, sig.hashAlg, h.Sum(nil)), sig.blob) {
		return nil, errors.New("the signature does not match the content")
	}
	return trusted, nil
}

// Sign makes an armored signature over message with priv, as `ssh-keygen
// -Y sign -n seedinit-seed-manifest` does (SHA-512).
func Sign(priv ed25519.PrivateKey, message []byte) ([]byte, error) {
	pub, err := sshkey.NewPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	digest := sha512.Sum512(message)
	raw := ed25519.Sign(priv, signedData(Namespace, "sha512", digest[:]))
	var sigWire []byte
	sigWire = putString(sigWire, []byte(sshkey.TypeED25519))
	sigWire = putString(sigWire, raw)
	blob := []byte(magic)
	blob = binary.BigEndian.AppendUint32(blob, sigVersion)
	blob = putString(blob, pub.Marshal())
	blob = putString(blob, []byte(Namespace))
	blob = putString(blob, nil)
	blob = putString(blob, []byte("sha512"))
	blob = putString(blob, sigWire)
	enc := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n" + armorEnd + "\n")
	return b.Bytes(), nil
}

// signedData is what the key signs: the magic, the namespace, the
// reserved field, the hash's name and the message's hash.
func signedData(namespace, hashAlg string, digest []byte) []byte {
	d := []byte(magic)
	d = putString(d, []byte(namespace))
	d = putString(d, nil)
	d = putString(d, []byte(hashAlg))
	return putString(d, digest)
}

func newHash(name string) (hash.Hash, error) {
	switch name {
	case "sha512":
		return sha512.New(), nil
	case "sha256":
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("signature hash %q: want sha512 or sha256", name)
}

type signature struct {
	key       *sshkey.PublicKey
	namespace string
	hashAlg   string
	sigType   string
	blob      []byte
}

// parseArmored reads an armored sshsig; every length is checked, the
// input being whatever the seed's source served.
func parseArmored(armored []byte) (*signature, error) {
	if len(armored) > maxSignature {
		return nil, fmt.Errorf("signature of %d bytes: not an sshsig", len(armored))
	}
	text := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(text, armorBegin)
	if !ok {
		return nil, errors.New("not an SSH signature (no " + armorBegin + ")")
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok {
		return nil, errors.New("SSH signature without its end line")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("SSH signature: %w", err)
	}
	r := reader{b: raw}
	if string(r.fixed(len(magic))) != magic {
		return nil, errors.New("SSH signature: bad magic")
	}
	if v := r.uint32(); v != sigVersion {
		return nil, fmt.Errorf("SSH signature version %d, want %d", v, sigVersion)
	}
	keyWire := r.str()
	namespace := string(r.str())
	r.str() // reserved
	hashAlg := string(r.str())
	sigWire := r.str()
	if r.err != nil || len(r.b) != 0 {
		return nil, errors.New("SSH signature: truncated or trailing data")
	}
	key, err := sshkey.ParsePublicKey(keyWire)
	if err != nil {
		return nil, fmt.Errorf("SSH signature's key: %w", err)
	}
	sr := reader{b: sigWire}
	sigType := string(sr.str())
	blob := sr.str()
	if sr.err != nil || len(sr.b) != 0 {
		return nil, errors.New("SSH signature: bad signature field")
	}
	return &signature{key: key, namespace: namespace, hashAlg: hashAlg, sigType: sigType, blob: blob}, nil
}

func putString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// reader reads SSH wire fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fixed(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errors.New("short")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) uint32() uint32 {
	v := r.fixed(4)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

func (r *reader) str() []byte {
	n := r.uint32()
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		r.err = errors.New("short")
		return nil
	}
	return r.fixed(int(n))
}
