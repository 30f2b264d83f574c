package trust

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/seedinit/seedinit/internal/sshkey"
)

// ReadSigningKey reads an unencrypted Ed25519 private key in OpenSSH's
// format (made by ssh-keygen -t ed25519 with no passphrase): the key `seedinit seed sign`,
// `seed build --sign-key` and `serve --sign-key` sign manifests with.
func ReadSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := sshkey.ParseRawPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T; seed signatures are Ed25519", path, k)
	}
	return priv, nil
}

// SignManifest writes m and signs it with priv: the manifest's bytes and
// its armored signature, the pair a seed carries as seed-manifest and
// seed-manifest.sig. A manifest that lists nothing is refused, as
// ParseManifest would refuse it.
func SignManifest(priv ed25519.PrivateKey, m *Manifest) (body, sig []byte, err error) {
	if len(m.Parts)+len(m.Files)+len(m.Bootstrap) == 0 {
		return nil, nil, errors.New("no part to sign")
	}
	body = m.Marshal()
	if sig, err = Sign(priv, body); err != nil {
		return nil, nil, err
	}
	return body, sig, nil
}
