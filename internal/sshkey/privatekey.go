package sshkey

import (
	"bytes"
	"crypto"
	"crypto/rand"
	//lint:ignore SA1019 DSA host keys given in cloud-config are still read
	"crypto/dsa"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ErrPassphraseMissing marks a private key that is encrypted: reading it
// would need a passphrase, which seedinit never has.
var ErrPassphraseMissing = errors.New("the private key is encrypted and no passphrase was given")

const (
	openSSHMagic   = "openssh-key-v1\x00"
	openSSHPEMType = "OPENSSH PRIVATE KEY"
	// The "none" cipher's block size, which the private section is padded
	// to (PROTOCOL.key).
	unencryptedBlockSize = 8
)

// ParseRawPrivateKey reads a private key file: OpenSSH's own format
// ("OPENSSH PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY"), SEC 1 ("EC PRIVATE
// KEY"), PKCS#8 ("PRIVATE KEY") or OpenSSL's DSA ("DSA PRIVATE KEY"). It
// returns *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey or
// *dsa.PrivateKey. An encrypted key gives an error that wraps
// ErrPassphraseMissing.
func ParseRawPrivateKey(data []byte) (crypto.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("parse private key: no PEM block")
	}
	if strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") || block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, fmt.Errorf("parse %s: %w", block.Type, ErrPassphraseMissing)
	}
	key, err := parsePEMBlock(block)
	if err != nil {
		return nil, fmt.Errorf("parse %.40s: %w", block.Type, err)
	}
	return key, nil
}

func parsePEMBlock(block *pem.Block) (crypto.PrivateKey, error) {
	switch block.Type {
	case openSSHPEMType:
		return parseOpenSSHPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		return key, checkSSHCurve(key)
	case "PRIVATE KEY":
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		switch key := key.(type) {
		case *rsa.PrivateKey, ed25519.PrivateKey:
			return key, nil
		case *ecdsa.PrivateKey:
			return key, checkSSHCurve(key)
		}
		return nil, fmt.Errorf("unsupported key type %T", key)
	case "DSA PRIVATE KEY":
		return parseDSAPrivateKey(block.Bytes)
	}
	return nil, errors.New("unsupported kind of PEM block")
}

func checkSSHCurve(key *ecdsa.PrivateKey) error {
	if _, ok := curveOf(key.Curve); !ok {
		return fmt.Errorf("curve %s has no SSH key type", curveName(key.Curve))
	}
	return nil
}

// parseDSAPrivateKey reads OpenSSL's DSAPrivateKey: a sequence of version
// (0), p, q, g, y and x.
func parseDSAPrivateKey(der []byte) (*dsa.PrivateKey, error) {
	var fields struct {
		Version       int
		P, Q, G, Y, X *big.Int
	}
	rest, err := asn1.Unmarshal(der, &fields)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing data after the key")
	}
	if fields.Version != 0 {
		return nil, fmt.Errorf("version %d, want 0", fields.Version)
	}
	key := &dsa.PrivateKey{
		PublicKey: dsa.PublicKey{Parameters: dsa.Parameters{P: fields.P, Q: fields.Q, G: fields.G}, Y: fields.Y},
		X:         fields.X,
	}
	if err := checkDSA(&key.PublicKey); err != nil {
		return nil, err
	}
	if key.X.Sign() <= 0 {
		return nil, errors.New("zero private value")
	}
	return key, nil
}

// parseOpenSSHPrivateKey reads the body of an openssh-key-v1 file
// (PROTOCOL.key) that holds one unencrypted key.
func parseOpenSSHPrivateKey(data []byte) (crypto.PrivateKey, error) {
	if !bytes.HasPrefix(data, []byte(openSSHMagic)) {
		return nil, errors.New("not an openssh-key-v1 key")
	}
	r := wireReader{rest: data[len(openSSHMagic):]}
	cipher := r.text()
	kdf := r.text()
	r.bytes() // KDF options
	count := r.uint32()
	publicBlob := r.bytes()
	section := r.bytes()
	if err := r.finish(); err != nil {
		return nil, err
	}
	if count != 1 {
		return nil, fmt.Errorf("%d keys in the file, want 1", count)
	}
	public, err := ParsePublicKey(publicBlob)
	if err != nil {
		return nil, err
	}
	if cipher != "none" {
		return nil, ErrPassphraseMissing
	}
	if kdf != "none" {
		return nil, fmt.Errorf("key derivation %.20q without a cipher", kdf)
	}
	if len(section)%unencryptedBlockSize != 0 {
		return nil, fmt.Errorf("private section of %d bytes is not padded to %d", len(section), unencryptedBlockSize)
	}

	p := wireReader{rest: section}
	// Both check numbers come out equal only when decryption worked; for
	// an unencrypted key a mismatch means a damaged file.
	if check1, check2 := p.uint32(), p.uint32(); p.err == nil && check1 != check2 {
		return nil, errors.New("check numbers differ: the key is damaged")
	}
	keyType := p.text()
	if p.err == nil && keyType != public.Type() {
		return nil, fmt.Errorf("private key is %.64q but the public key is %s", keyType, public.Type())
	}
	priv, err := readPrivateFields(&p, keyType)
	if err != nil {
		return nil, fmt.Errorf("read %s private key: %w", public.Type(), err)
	}
	p.bytes() // comment
	if p.err != nil {
		return nil, fmt.Errorf("read %s private key: %w", public.Type(), p.err)
	}
	for i, b := range p.rest {
		if b != byte(i+1) {
			return nil, errors.New("bad padding after the private key")
		}
	}
	derived, err := PublicKeyOf(priv)
	if err != nil {
		return nil, err
	}
	if !derived.Equal(public) {
		return nil, errors.New("the private key does not match its public key")
	}
	return priv, nil
}

// PublicKeyOf returns the public half of a key ParseRawPrivateKey gave.
func PublicKeyOf(priv crypto.PrivateKey) (*PublicKey, error) {
	switch key := priv.(type) {
	case *dsa.PrivateKey:
		// dsa has no Public method.
		return NewPublicKey(&key.PublicKey)
	case crypto.Signer:
		return NewPublicKey(key.Public())
	}
	return nil, fmt.Errorf("encode public key: unsupported private key type %T", priv)
}

// readPrivateFields reads a key's private fields as
// sshkey_private_serialize in OpenSSH writes them.
func readPrivateFields(p *wireReader, keyType string) (crypto.PrivateKey, error) {
	switch keyType {
	case TypeRSA:
		// Unlike the public blob, n comes before e here.
		n, e, d := p.mpint(), p.mpint(), p.mpint()
		p.mpint() // iqmp: Precompute derives it again
		prime1, prime2 := p.mpint(), p.mpint()
		if p.err != nil {
			return nil, p.err
		}
		if err := checkRSA(e, n); err != nil {
			return nil, err
		}
		key := &rsa.PrivateKey{
			PublicKey: rsa.PublicKey{N: n, E: int(e.Int64())},
			D:         d,
			Primes:    []*big.Int{prime1, prime2},
		}
		if err := key.Validate(); err != nil {
			return nil, err
		}
		key.Precompute()
		return key, nil
	case TypeDSA:
		key := &dsa.PrivateKey{}
		key.P, key.Q, key.G, key.Y, key.X = p.mpint(), p.mpint(), p.mpint(), p.mpint(), p.mpint()
		if p.err != nil {
			return nil, p.err
		}
		if err := checkDSA(&key.PublicKey); err != nil {
			return nil, err
		}
		return key, nil
	case TypeECDSA256, TypeECDSA384, TypeECDSA521:
		c, _ := curveByType(keyType)
		name := p.text()
		point := p.bytes()
		d := p.mpint()
		if p.err != nil {
			return nil, p.err
		}
		if name != c.name {
			return nil, fmt.Errorf("curve %.20q, want %q", name, c.name)
		}
		size := (c.curve.Params().BitSize + 7) / 8
		if d.BitLen() > size*8 {
			return nil, errors.New("private scalar too large for the curve")
		}
		key, err := ecdsa.ParseRawPrivateKey(c.curve, d.FillBytes(make([]byte, size)))
		if err != nil {
			return nil, err
		}
		if derived, err := key.PublicKey.Bytes(); err != nil || !bytes.Equal(derived, point) {
			return nil, errors.New("the private scalar does not give the stored public point")
		}
		return key, nil
	case TypeED25519:
		public := p.bytes()
		private := p.bytes()
		if p.err != nil {
			return nil, p.err
		}
		// The private half is the 32-byte seed followed by the public key.
		if len(public) != ed25519.PublicKeySize || len(private) != ed25519.PrivateKeySize {
			return nil, errors.New("wrong key sizes")
		}
		key := ed25519.NewKeyFromSeed(private[:ed25519.SeedSize])
		if !bytes.Equal(private[ed25519.SeedSize:], public) {
			return nil, errors.New("the private key carries a different public key")
		}
		return key, nil
	}
	return nil, errors.New("unsupported key type")
}

// MarshalPrivateKey encodes an RSA, ECDSA or Ed25519 private key as an
// unencrypted openssh-key-v1 PEM block with comment inside, as ssh-keygen
// writes it when given an empty passphrase.
func MarshalPrivateKey(priv crypto.PrivateKey, comment string) (*pem.Block, error) {
	p := wireWriter{}
	// The check number only proves a correct decryption; random as
	// ssh-keygen makes it.
	var check [4]byte
	if _, err := rand.Read(check[:]); err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	p.uint32(binary.BigEndian.Uint32(check[:]))
	p.uint32(binary.BigEndian.Uint32(check[:]))

	var public crypto.PublicKey
	switch key := priv.(type) {
	case *rsa.PrivateKey:
		if len(key.Primes) != 2 {
			return nil, fmt.Errorf("encode RSA private key: %d primes, OpenSSH takes 2", len(key.Primes))
		}
		prime1, prime2 := key.Primes[0], key.Primes[1]
		iqmp := new(big.Int).ModInverse(prime2, prime1)
		if iqmp == nil {
			return nil, errors.New("encode RSA private key: the primes are not coprime")
		}
		p.text(TypeRSA)
		for _, v := range []*big.Int{key.N, big.NewInt(int64(key.E)), key.D, iqmp, prime1, prime2} {
			p.mpint(v)
		}
		public = &key.PublicKey
	case *ecdsa.PrivateKey:
		c, ok := curveOf(key.Curve)
		if !ok {
			return nil, fmt.Errorf("encode ECDSA private key: curve %s has no SSH key type", curveName(key.Curve))
		}
		point, err := key.PublicKey.Bytes()
		if err != nil {
			return nil, fmt.Errorf("encode ECDSA private key: %w", err)
		}
		scalar, err := key.Bytes()
		if err != nil {
			return nil, fmt.Errorf("encode ECDSA private key: %w", err)
		}
		p.text(c.keyType)
		p.text(c.name)
		p.bytes(point)
		p.mpint(new(big.Int).SetBytes(scalar))
		public = &key.PublicKey
	case ed25519.PrivateKey:
		if len(key) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("encode Ed25519 private key: %d bytes, want %d", len(key), ed25519.PrivateKeySize)
		}
		pub := key.Public().(ed25519.PublicKey)
		p.text(TypeED25519)
		p.bytes(pub)
		p.bytes(key)
		public = pub
	case *ed25519.PrivateKey:
		if key == nil {
			return nil, errors.New("encode Ed25519 private key: nil key")
		}
		return MarshalPrivateKey(*key, comment)
	default:
		return nil, fmt.Errorf("encode private key: unsupported key type %T", priv)
	}
	p.text(comment)
	for i := byte(1); len(p.buf)%unencryptedBlockSize != 0; i++ {
		p.buf = append(p.buf, i)
	}

	pub, err := NewPublicKey(public)
	if err != nil {
		return nil, err
	}
	w := wireWriter{buf: []byte(openSSHMagic)}
	w.text("none") // cipher
	w.text("none") // KDF
	w.text("")     // KDF options
	w.uint32(1)    // number of keys
	w.bytes(pub.wire)
	w.bytes(p.buf)
	return &pem.Block{Type: openSSHPEMType, Bytes: w.buf}, nil
}
