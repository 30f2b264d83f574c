package ssh

import (
	"context"
	"crypto"
	"fmt"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/safego"
)

// pendingKeys are host keys being made since the run's config was merged,
// by type: an RSA key takes seconds of a slow CPU, which the modules
// before ssh (growpart and resizefs waiting on the disk, users) need not
// wait for. Each channel gives one result.
type pendingKeys map[string]chan signerResult

type signerResult struct {
	priv crypto.Signer
	err  error
}

// prestartHostKeys starts making the keys Run will generate: the types of
// ssh_genkeytypes that seedinit makes, unless ssh_keys gives keys, and
// without a type whose key Run keeps (ssh_deletekeys false and the key
// there). A key made and then not used is only time spent. The keys come
// from env.Random, which waits for the kernel's pool, as Run's would.
func prestartHostKeys(ctx context.Context, env *apply.Env) any {
	cfg := env.Config
	if cfg.Has("ssh_keys") {
		return nil
	}
	keyTypes, err := genKeyTypes(cfg)
	if err != nil {
		return nil
	}
	deleteKeys, err := cfg.Bool("ssh_deletekeys", true)
	if err != nil {
		return nil
	}
	random := env.Random
	if random != nil {
		random = &lockedReader{r: random}
	}
	pending := pendingKeys{}
	for _, keyType := range keyTypes {
		switch keyType {
		case "rsa", "ecdsa", "ed25519":
		default:
			continue
		}
		if _, dup := pending[keyType]; dup || (!deleteKeys && env.Root.Exists(hostKeyPath(keyType))) {
			continue
		}
		if ch, ok := takeEarly(keyType); ok {
			pending[keyType] = ch
			env.Log.Debug("host key started early taken", "type", keyType)
			continue
		}
		ch := make(chan signerResult, 1)
		pending[keyType] = ch
		safego.Go("make the "+keyType+" host key", func() {
			if err := ctx.Err(); err != nil {
				ch <- signerResult{err: err}
				return
			}
			priv, err := generateSigner(keyType, random)
			ch <- signerResult{priv: priv, err: err}
		}, func(err error) { ch <- signerResult{err: err} })
	}
	if len(pending) == 0 {
		return nil
	}
	env.Log.Debug("host keys started", "types", len(pending))
	return pending
}

func (p pendingKeys) has(keyType string) bool {
	_, ok := p[keyType]
	return ok
}

// take waits for the key of keyType started for this run and returns it
// with comment.
func (p pendingKeys) take(ctx context.Context, keyType, comment string) (*HostKey, error) {
	ch := p[keyType]
	delete(p, keyType)
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return encodeHostKey(keyType, r.priv, comment)
	case <-ctx.Done():
		return nil, fmt.Errorf("generate %s host key: %w", keyType, ctx.Err())
	}
}
