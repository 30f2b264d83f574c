package console

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/internal/sshkey"
)

// now stamps the syslog-style lines of keys_to_console; tests fix it.
var now = time.Now

func runKeysToConsole(ctx context.Context, env *apply.Env) error {
	if sshCfg, ok, err := env.Config.Map("ssh"); err == nil && ok {
		emit, err := sshCfg.Bool("emit_keys_to_console", true)
		if err != nil {
			return fmt.Errorf("read ssh: %w", err)
		}
		if !emit {
			return apply.Skip("ssh.emit_keys_to_console is false")
		}
	}
	fpSkip, _, err := env.Config.StringList("ssh_fp_console_blacklist", true)
	if err != nil {
		return fmt.Errorf("read ssh_fp_console_blacklist: %w", err)
	}
	keySkip := []string{"ssh-dss"}
	if env.Config.Has("ssh_key_console_blacklist") {
		if keySkip, _, err = env.Config.StringList("ssh_key_console_blacklist", true); err != nil {
			return fmt.Errorf("read ssh_key_console_blacklist: %w", err)
		}
	}
	text, err := HostKeysReport(env.Root, fpSkip, keySkip, now())
	if err != nil {
		return err
	}
	// cloud-init strips the helper's output and adds one newline.
	if _, err := io.WriteString(env.Console, strings.TrimSpace(text)+"\n"); err != nil {
		return fmt.Errorf("write the host keys to the console: %w", err)
	}
	return nil
}

// HostKeysReport is what cloud-init's write-ssh-key-fingerprints helper
// prints for the target's /etc/ssh/ssh_host_*key.pub: the fingerprints as
// ssh-keygen -l shows them, through logger -s (so each line carries a
// syslog prefix stamped at), then the public keys between BEGIN/END
// markers. Key types in fpSkip or keySkip are left out of the
// respective part.
func HostKeysReport(root *rootfs.Root, fpSkip, keySkip []string, at time.Time) (string, error) {
	entries, err := root.ReadDir("/etc/ssh")
	if err != nil {
		return "", nil
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "ssh_host_") && strings.HasSuffix(n, "key.pub") {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	type hostKey struct{ typ, line, text string }
	var keys []hostKey
	for _, n := range files {
		p := path.Join("/etc/ssh", n)
		if fi, err := root.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := root.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		typ, _, _ := strings.Cut(strings.TrimLeft(first, " \t"), " ")
		keys = append(keys, hostKey{typ: typ, line: keygenLine(p, data), text: string(data)})
	}
	syslog := func(msg string) string {
		return "<14>" + at.Format(time.Stamp) + " cloud-init: " + msg + "\n"
	}
	var b strings.Builder
	shown := false
	for _, k := range keys {
		if slices.Contains(fpSkip, k.typ) {
			continue
		}
		if !shown {
			b.WriteString(syslog(strings.Repeat("#", 61)))
			b.WriteString(syslog("-----BEGIN SSH HOST KEY FINGERPRINTS-----"))
			shown = true
		}
		b.WriteString(syslog(k.line))
	}
	if shown {
		b.WriteString(syslog("-----END SSH HOST KEY FINGERPRINTS-----"))
		b.WriteString(syslog(strings.Repeat("#", 61)))
	}
	shown = false
	for _, k := range keys {
		if slices.Contains(keySkip, k.typ) {
			continue
		}
		if !shown {
			b.WriteString("-----BEGIN SSH HOST KEY KEYS-----\n")
			shown = true
		}
		b.WriteString(k.text)
	}
	if shown {
		b.WriteString("-----END SSH HOST KEY KEYS-----\n")
	}
	return b.String(), nil
}

// keygenLine is ssh-keygen -l -f's line for a public key file: bits,
// SHA256 fingerprint, comment ("no comment" when there is none) and the
// key type in parentheses; or ssh-keygen's complaint when the file holds
// no key.
func keygenLine(file string, data []byte) string {
	pub, comment, err := sshkey.ParseAuthorizedKey(data)
	if err != nil {
		return file + " is not a public key file."
	}
	if comment == "" {
		comment = "no comment"
	}
	return fmt.Sprintf("%d %s %s (%s)", pub.Bits(), sshkey.FingerprintSHA256(pub), comment, keygenTypeName(pub.Type()))
}

func keygenTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "sk-ecdsa"):
		return "ECDSA-SK"
	case strings.HasPrefix(t, "sk-ssh-ed25519"):
		return "ED25519-SK"
	case strings.HasPrefix(t, "ecdsa"):
		return "ECDSA"
	case strings.HasPrefix(t, "ssh-ed25519"):
		return "ED25519"
	case strings.HasPrefix(t, "ssh-rsa"):
		return "RSA"
	case strings.HasPrefix(t, "ssh-dss"):
		return "DSA"
	}
	return strings.ToUpper(t)
}
