// Package seedfiles writes the files a seed hands the target beside its
// cloud-config: OpenStack's injected files (meta_data.json's "files",
// Nova's personality files), once per instance at their paths, as
// cloud-init's ConfigDrive writes them on an instance's first boot.
package seedfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

func init() {
	apply.Register(apply.Module{Name: "injected_files", Frequency: apply.PerInstance, Run: runInjectedFiles})
}

// Modes of injected files: cloud-init's write_injected_files writes every
// one 0660; a file whose path says it holds a secret (a license, a key,
// a password, a token) is kept from the group too. Nova gives no mode.
const (
	injectedMode       fs.FileMode = 0o660
	injectedSecretMode fs.FileMode = 0o600
	injectedDirMode    fs.FileMode = 0o755
)

// runInjectedFiles writes the seed's injected files through the target
// writer: inside the target whatever the path or the target's links say,
// each file replaced atomically with its mode and owner (root) set before
// it appears. A file that cannot be written is reported and the others
// are still written. Content is never logged.
func runInjectedFiles(ctx context.Context, env *apply.Env) error {
	if len(env.Seed.Files) == 0 {
		return apply.Skip("the seed injects no file")
	}
	owner := rootfs.Owner{UID: 0, GID: 0}
	if os.Geteuid() != 0 {
		owner = rootfs.KeepOwner
	}
	var errs []error
	written := 0
	for _, f := range env.Seed.Files {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("write injected files: stopped before %s: %w", f.Path, err))
			break
		}
		p := path.Clean("/" + f.Path)
		if p == "/" {
			errs = append(errs, fmt.Errorf("write injected file %q (from %s): not a file's path", f.Path, f.Where))
			continue
		}
		mode := injectedMode
		if secretLike(p) {
			mode = injectedSecretMode
		}
		if err := env.Root.MkdirAll(path.Dir(p), injectedDirMode, owner); err != nil {
			errs = append(errs, fmt.Errorf("write injected file %s: make its directory: %w", p, err))
			continue
		}
		if err := env.Root.WriteFile(p, f.Content, mode, owner); err != nil {
			errs = append(errs, fmt.Errorf("write injected file %s: %w", p, err))
			continue
		}
		written++
		env.Log.Info("injected file written", "path", p, "mode", fmt.Sprintf("%04o", mode), "bytes", len(f.Content), "from", f.Where)
	}
	if written == 0 && len(errs) == 0 {
		return apply.Skip("no injected file to write")
	}
	return errors.Join(errs...)
}

// secretWords are the words of a path that say a file holds a secret;
// secretStems the pieces of words that do ("licenses", "db-password").
var (
	secretWords = map[string]bool{
		"key": true, "keys": true, "apikey": true, "privkey": true, "ssh": true,
		"creds": true, "shadow": true, "gshadow": true, "keytab": true, "pass": true,
	}
	secretStems = []string{"secret", "private", "licen", "passw", "passphrase", "token", "credential"}
	secretExts  = map[string]bool{
		".key": true, ".pem": true, ".p12": true, ".pfx": true, ".jks": true, ".keystore": true,
		".lic": true, ".gpg": true, ".keytab": true,
	}
)

// secretLike says whether a path looks like it holds a secret: a word of
// one of its names (split at anything not a letter or digit) is one of
// secretWords or has one of secretStems in it, or its name ends in a
// key's or a license's extension. Wrongly taken for a secret, a file is
// only not readable by its group.
func secretLike(p string) bool {
	lower := strings.ToLower(p)
	if secretExts[path.Ext(lower)] {
		return true
	}
	words := strings.FieldsFunc(lower, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, w := range words {
		if secretWords[w] {
			return true
		}
		for _, stem := range secretStems {
			if strings.Contains(w, stem) {
				return true
			}
		}
	}
	return false
}
