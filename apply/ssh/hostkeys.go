package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/safego"
	"github.com/seedinit/seedinit/internal/sshkey"
)

const sshDir = "/etc/ssh"

// hostKeyPath is cloud-init's KEY_FILE_TPL: /etc/ssh/ssh_host_<type>_key.
func hostKeyPath(keyType string) string {
	return path.Join(sshDir, "ssh_host_"+keyType+"_key")
}

// hostKeyGlob is the pattern cloud-init deletes in /etc/ssh.
const hostKeyGlob = "ssh_host_*key*"

// DefaultGenKeyTypes are the host key types generated when ssh_genkeytypes
// is not set. cloud-init 22.4.2 also lists dsa; seedinit does not make DSA
// keys (OpenSSH disabled them by default in 7.0 and removed them in 9.8).
var DefaultGenKeyTypes = []string{"rsa", "ecdsa", "ed25519"}

// configKeyTypes are the key types ssh_keys accepts, in cloud-init's
// GENERATE_KEY_NAMES order, which is also the order seedinit writes them in.
var configKeyTypes = []string{"rsa", "dsa", "ecdsa", "ed25519"}

// configKeyParts are the suffixes of an ssh_keys entry and the file each
// names relative to the private key's path.
var configKeyParts = []struct{ suffix, fileSuffix string }{
	{"_private", ""},
	{"_public", ".pub"},
	{"_certificate", "-cert.pub"},
}

// rootOwner is root:root when seedinit runs as root; otherwise (tests as
// a user) files keep the writer's own ids, since chown would fail.
func rootOwner() rootfs.Owner {
	if os.Geteuid() != 0 {
		return rootfs.KeepOwner
	}
	return rootfs.Owner{UID: 0, GID: 0}
}

// deleteHostKeys removes /etc/ssh/ssh_host_*key* as cloud-init does on a new
// instance, so that instances cloned from one image do not share keys.
func deleteHostKeys(env *apply.Env) error {
	entries, err := env.Root.ReadDir(sshDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list host keys in %s: %w", sshDir, err)
	}
	var errs []error
	for _, e := range entries {
		if ok, _ := path.Match(hostKeyGlob, e.Name()); !ok {
			continue
		}
		name := path.Join(sshDir, e.Name())
		if e.IsDir() {
			errs = append(errs, fmt.Errorf("delete host key %s: is a directory", name))
			continue
		}
		if err := env.Root.Remove(name); err != nil {
			errs = append(errs, fmt.Errorf("delete host key: %w", err))
			continue
		}
		env.Log.Debug("deleted host key file", "path", name)
	}
	return errors.Join(errs...)
}

// writeConfiguredKeys writes the host keys and certificates given in
// ssh_keys verbatim, derives a missing public key from its private one,
// and points sshd at the last certificate written.
func writeConfiguredKeys(env *apply.Env, keys apply.Config) error {
	known := map[string]bool{}
	var errs []error
	var lastCert string
	written := map[string]bool{}
	for _, keyType := range configKeyTypes {
		for _, part := range configKeyParts {
			entry := keyType + part.suffix
			known[entry] = true
			if !keys.Has(entry) {
				continue
			}
			// Written as given: cloud-init fails on anything but text.
			content, isString := keys[entry].(string)
			if !isString {
				errs = append(errs, fmt.Errorf("write ssh_keys entry %s: want a string, got %s", entry, apply.TypeName(keys[entry])))
				continue
			}
			name := hostKeyPath(keyType) + part.fileSuffix
			// cloud-init 22.4.2 writes all three 0600 (newer releases
			// make the public halves 0644).
			if err := env.Root.WriteFile(name, []byte(content), 0o600, rootOwner()); err != nil {
				errs = append(errs, fmt.Errorf("write ssh_keys entry %s: %w", entry, err))
				continue
			}
			written[entry] = true
			env.Log.Info("wrote host key from ssh_keys", "entry", entry, "path", name)
			if part.suffix == "_certificate" {
				lastCert = name
			}
		}
	}
	for _, entry := range keys.Keys() {
		if known[entry] {
			continue
		}
		reason := "unrecognized"
		if unsupportedConfigKey(entry) {
			reason = "unsupported"
		}
		env.Warn("ssh: skipping %s ssh_keys entry %q", reason, entry)
	}
	if lastCert != "" {
		if _, err := UpdateSSHDConfig(env.Root, Setting{Keyword: "HostCertificate", Value: lastCert}); err != nil {
			errs = append(errs, fmt.Errorf("set HostCertificate %s: %w", lastCert, err))
		}
	}
	for _, keyType := range configKeyTypes {
		privEntry, pubEntry := keyType+"_private", keyType+"_public"
		if keys.Has(pubEntry) || !written[privEntry] {
			continue
		}
		privName := hostKeyPath(keyType)
		pub, err := DerivePublicKey([]byte(keys[privEntry].(string)))
		if err != nil {
			errs = append(errs, fmt.Errorf("derive public key for ssh_keys entry %s: %w", privEntry, err))
			continue
		}
		if err := env.Root.WriteFile(privName+".pub", pub, 0o644, rootOwner()); err != nil {
			errs = append(errs, fmt.Errorf("derive public key for ssh_keys entry %s: %w", privEntry, err))
			continue
		}
		env.Log.Debug("derived public host key", "path", privName+".pub", "from", privName)
	}
	return errors.Join(errs...)
}

// unsupportedConfigKey matches the security-key types cloud-init names as
// unsupported rather than unknown.
func unsupportedConfigKey(entry string) bool {
	for _, t := range []string{"ecdsa-sk", "ed25519-sk"} {
		for _, part := range configKeyParts {
			if entry == t+part.suffix {
				return true
			}
		}
	}
	return false
}

// generateHostKeys makes the missing host keys of the requested types, in
// parallel, and writes them with the modes ssh-keygen (and, with an
// ssh_keys group, sshd-keygen) gives them. It returns the paths written.
func generateHostKeys(ctx context.Context, env *apply.Env, keyTypes []string, comment string, quiet bool) ([]string, error) {
	type job struct {
		keyType string
		key     *HostKey
		err     error
	}
	var jobs []*job
	var errs []error
	seen := map[string]bool{}
	for _, keyType := range keyTypes {
		if seen[keyType] {
			continue
		}
		seen[keyType] = true
		if !validKeyTypeName(keyType) {
			env.Warn("ssh: unknown host key type %q in ssh_genkeytypes", keyType)
			continue
		}
		name := hostKeyPath(keyType)
		switch keyType {
		case "rsa", "ecdsa", "ed25519":
			keep, err := keepExistingKey(env, keyType, name)
			if err != nil {
				errs = append(errs, err)
			}
			if !keep && err == nil {
				jobs = append(jobs, &job{keyType: keyType})
			}
		default:
			if env.Root.Exists(name) {
				continue
			}
			if keyType == "dsa" {
				env.Warn("ssh: not generating a dsa host key: DSA is deprecated and seedinit does not make DSA keys")
			} else {
				env.Warn("ssh: unknown host key type %q in ssh_genkeytypes", keyType)
			}
		}
	}
	if len(jobs) == 0 {
		return nil, errors.Join(errs...)
	}

	// Generating an RSA key takes long enough that the others should not
	// wait for it. The reader is shared, so reads are serialized. Keys
	// keep env.Random (crypto/rand), not env.EarlyRand: a host key made
	// before the kernel's pool is ready could be guessed, so waiting for
	// the pool is right here.
	random := env.Random
	if random != nil {
		random = &lockedReader{r: random}
	}
	// Keys started when the config was merged are taken once the others
	// are under way.
	pending, _ := env.Prestarted.(pendingKeys)
	var wg sync.WaitGroup
	for _, j := range jobs {
		if pending.has(j.keyType) {
			continue
		}
		wg.Add(1)
		safego.Go("generate the "+j.keyType+" host key", func() {
			defer wg.Done()
			if err := ctx.Err(); err != nil {
				j.err = err
				return
			}
			j.key, j.err = GenerateHostKey(j.keyType, comment, random)
		}, func(err error) { j.key, j.err = nil, err })
	}
	for _, j := range jobs {
		if pending.has(j.keyType) {
			j.key, j.err = pending.take(ctx, j.keyType, comment)
		}
	}
	wg.Wait()

	gid, hasGroup := lookupGroup(env, "ssh_keys")
	var written []string
	for _, j := range jobs {
		if j.err != nil {
			errs = append(errs, j.err)
			continue
		}
		name := hostKeyPath(j.keyType)
		if err := writeGeneratedKey(env, name, j.key, gid, hasGroup); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, name)
		env.Log.Info("generated host key", "type", j.keyType, "path", name,
			"fingerprint", sshkey.FingerprintSHA256(j.key.PublicKey))
		if !quiet && env.Console != nil {
			fmt.Fprint(env.Console, keygenReport(name, j.key))
		}
	}
	return written, errors.Join(errs...)
}

// validKeyTypeName refuses names that would not make a plain file name
// under /etc/ssh (the type is spliced into the path).
func validKeyTypeName(keyType string) bool {
	return keyType != "" && !strings.ContainsAny(keyType, "/\x00") && keyType != "." && keyType != ".."
}

// keepExistingKey reports whether a host key already at name stays.
// cloud-init keeps any file there; seedinit keeps one that parses (or is
// encrypted) and replaces one that does not, since sshd could not use it.
// A kept key whose .pub is missing gets it back.
func keepExistingKey(env *apply.Env, keyType, name string) (bool, error) {
	data, err := env.Root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check existing %s host key: %w", keyType, err)
	}
	priv, err := sshkey.ParseRawPrivateKey(data)
	if errors.Is(err, sshkey.ErrPassphraseMissing) {
		return true, nil
	}
	if err != nil {
		env.Warn("ssh: replacing unreadable %s host key %s: %v", keyType, name, err)
		return false, nil
	}
	if env.Root.Exists(name + ".pub") {
		return true, nil
	}
	pub, err := sshkey.PublicKeyOf(priv)
	if err != nil {
		return true, nil
	}
	comment, _ := OpenSSHKeyComment(data)
	line := authorizedLine(pub, comment) + "\n"
	if err := env.Root.WriteFile(name+".pub", []byte(line), 0o644, rootOwner()); err != nil {
		return true, fmt.Errorf("restore public half of %s host key: %w", keyType, err)
	}
	return true, nil
}

// writeGeneratedKey writes the pair, public half first so that sshd never
// sees a private key whose .pub is stale.
func writeGeneratedKey(env *apply.Env, name string, key *HostKey, gid int, hasGroup bool) error {
	privMode, privOwner := fs.FileMode(0o600), rootOwner()
	if hasGroup {
		// sshd-keygen's "sanitize permissions", which cloud-init copies.
		privMode = 0o640
		privOwner.GID = gid
	}
	if err := env.Root.WriteFile(name+".pub", key.Public, 0o644, rootOwner()); err != nil {
		return fmt.Errorf("write %s host key: %w", key.Type, err)
	}
	if err := env.Root.WriteFile(name, key.Private, privMode, privOwner); err != nil {
		return fmt.Errorf("write %s host key: %w", key.Type, err)
	}
	return nil
}

// keygenReport is what `ssh-keygen -t TYPE -N "" -f NAME` prints on
// stdout, which cloud-init copies to the console unless ssh_quiet_keygen.
func keygenReport(name string, key *HostKey) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generating public/private %s key pair.\n", key.Type)
	fmt.Fprintf(&b, "Your identification has been saved in %s\n", name)
	fmt.Fprintf(&b, "Your public key has been saved in %s.pub\n", name)
	b.WriteString("The key fingerprint is:\n")
	fmt.Fprintf(&b, "%s %s\n", sshkey.FingerprintSHA256(key.PublicKey), key.Comment)
	b.WriteString("The key's randomart image is:\n")
	b.WriteString(Randomart(key.PublicKey) + "\n")
	return b.String()
}

// lookupGroup finds a group's id in the target's /etc/group.
func lookupGroup(env *apply.Env, group string) (int, bool) {
	data, err := env.Root.ReadFile("/etc/group")
	if err != nil {
		return 0, false
	}
	return groupID(data, group)
}

// groupID parses /etc/group text ("name:password:gid:members") for name.
func groupID(data []byte, name string) (int, bool) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		fields := strings.Split(string(line), ":")
		if len(fields) < 3 || fields[0] != name {
			continue
		}
		gid, err := strconv.Atoi(fields[2])
		if err != nil || gid < 0 {
			continue
		}
		return gid, true
	}
	return 0, false
}

// lockedReader lets goroutines share one random source.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}
