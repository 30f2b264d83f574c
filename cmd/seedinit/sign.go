package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/images/seedimg"
	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
)

// bindingFlags are the flags that bind a signed seed to instances and to
// a window of time, shared by seed sign and seed build --sign-key.
type bindingFlags struct {
	systemUUIDs, macs, instanceIDs stringList
	notBefore, notAfter, validFor  *string
}

func manifestFlags(fs *flag.FlagSet) *bindingFlags {
	b := &bindingFlags{}
	fs.Var(&b.systemUUIDs, "system-uuid", "bind the seed to the machine with this SMBIOS system UUID (repeatable: any of them)")
	fs.Var(&b.macs, "mac", "bind the seed to a machine with a NIC of this MAC address (repeatable: any of them)")
	fs.Var(&b.instanceIDs, "instance-id", "bind the seed to this instance-id (repeatable: any of them)")
	b.notBefore = fs.String("not-before", "", "the seed is refused before this time (2006-01-02T15:04:05Z)")
	b.notAfter = fs.String("not-after", "", "the seed is refused after this time (2006-01-02T15:04:05Z)")
	b.validFor = fs.String("valid-for", "", "the seed is refused this long after signing (720h, 30d)")
	return b
}

func (b *bindingFlags) given() bool {
	return len(b.systemUUIDs)+len(b.macs)+len(b.instanceIDs) > 0 || *b.notBefore != "" || *b.notAfter != "" || *b.validFor != ""
}

// manifest is the manifest the flags ask for, signed at now, its parts
// still to fill.
func (b *bindingFlags) manifest(now time.Time) (*trust.Manifest, error) {
	m := &trust.Manifest{SignedAt: now.UTC().Truncate(time.Second)}
	for _, u := range b.systemUUIDs {
		n, err := trust.NormalizeSystemUUID(u)
		if err != nil {
			return nil, fmt.Errorf("--system-uuid: %w", err)
		}
		m.SystemUUIDs = append(m.SystemUUIDs, n)
	}
	for _, mac := range b.macs {
		n, err := trust.NormalizeMAC(mac)
		if err != nil {
			return nil, fmt.Errorf("--mac: %w", err)
		}
		m.MACs = append(m.MACs, n)
	}
	for _, id := range b.instanceIDs {
		if id == "" || strings.TrimSpace(id) != id || strings.ContainsAny(id, "\n\r") {
			return nil, fmt.Errorf("--instance-id %q: want an instance-id without surrounding spaces", id)
		}
		m.InstanceIDs = append(m.InstanceIDs, id)
	}
	var err error
	if *b.notBefore != "" {
		if m.NotBefore, err = time.Parse(time.RFC3339, *b.notBefore); err != nil {
			return nil, fmt.Errorf("--not-before %q: want 2006-01-02T15:04:05Z", *b.notBefore)
		}
	}
	if *b.notAfter != "" && *b.validFor != "" {
		return nil, errors.New("--not-after and --valid-for: give one")
	}
	if *b.notAfter != "" {
		if m.NotAfter, err = time.Parse(time.RFC3339, *b.notAfter); err != nil {
			return nil, fmt.Errorf("--not-after %q: want 2006-01-02T15:04:05Z", *b.notAfter)
		}
	}
	if *b.validFor != "" {
		d, err := parseValidity(*b.validFor)
		if err != nil {
			return nil, fmt.Errorf("--valid-for %q: %w", *b.validFor, err)
		}
		m.NotAfter = m.SignedAt.Add(d)
	}
	if !m.NotBefore.IsZero() && !m.NotAfter.IsZero() && m.NotAfter.Before(m.NotBefore) {
		return nil, errors.New("the seed would expire before it is valid (--not-after before --not-before)")
	}
	return m, nil
}

// parseValidity reads a Go duration, or whole days as "30d".
func parseValidity(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, errors.New("want a positive duration: 720h, 30d")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration: 720h, 30d")
	}
	return d, nil
}

// signManifest fills m's parts (by role) and files (by path in the
// target) from in, and returns the manifest and its signature.
func signManifest(priv ed25519.PrivateKey, m *trust.Manifest, in seedimg.SignInput) ([]byte, []byte, error) {
	mm := *m
	mm.Parts = map[string][32]byte{}
	for role, content := range in.Parts {
		mm.Parts[role] = trust.Digest(content)
	}
	mm.Files = map[string][32]byte{}
	for p, content := range in.Files {
		mm.Files[p] = trust.Digest(content)
	}
	mm.Bootstrap = map[string]trust.BootstrapFile{}
	for _, f := range in.Bootstrap {
		if f.Dir {
			continue
		}
		uid, gid := max(f.UID, 0), max(f.GID, 0)
		mm.Bootstrap[f.Path] = trust.BootstrapFile{Digest: trust.Digest(f.Content), Mode: f.Mode & 0o777, UID: uid, GID: gid}
	}
	return trust.SignManifest(priv, &mm)
}

// configDriveRoles are a config drive's files that a manifest covers.
var configDriveRoles = map[string]string{"meta_data.json": "meta-data", "user_data": "user-data", "network_data.json": "network-config"}

// runSeedSign is `seedinit seed sign --key KEY DIR`: one manifest over
// the seed's parts in DIR (NoCloud's meta-data, user-data, vendor-data
// and network-config), signed, beside them; in a config drive's tree
// (DIR/openstack/VERSION/), one in each version's directory.
func runSeedSign(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit seed sign", flag.ContinueOnError)
	keyFile := fs.String("key", "", "Ed25519 private key (OpenSSH format, unencrypted: ssh-keygen -t ed25519 -N '')")
	bind := manifestFlags(fs)
	rest, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if *keyFile == "" || len(rest) != 1 {
		return fail(stderr, "seed sign: usage: seedinit seed sign --key KEY [--system-uuid U]... [--mac M]... [--instance-id ID]... [--not-before T] [--not-after T | --valid-for D] DIR")
	}
	priv, err := readSigningKey(*keyFile)
	if err != nil {
		return fail(stderr, "seed sign: %v", err)
	}
	m, err := bind.manifest(time.Now())
	if err != nil {
		return fail(stderr, "seed sign: %v", err)
	}
	dirs, err := seedDirsToSign(rest[0])
	if err != nil {
		return fail(stderr, "seed sign: %v", err)
	}
	for _, d := range dirs {
		parts, files := map[string][]byte{}, map[string][]byte{}
		for _, f := range d.files {
			files[f.Path] = f.Content
		}
		var tree []seed.BootstrapFile
		if d.bootstrap != "" {
			if tree, err = seedimg.ReadBootstrapDir(d.bootstrap); err != nil {
				return fail(stderr, "seed sign: %v", err)
			}
		}
		for file, role := range d.roles {
			b, err := os.ReadFile(filepath.Join(d.dir, file))
			if errors.Is(err, iofs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fail(stderr, "seed sign: %v", err)
			}
			parts[role] = b
		}
		if len(parts)+len(files)+len(tree) == 0 {
			continue
		}
		body, sig, err := signManifest(priv, m, seedimg.SignInput{Parts: parts, Files: files, Bootstrap: tree})
		if err != nil {
			return fail(stderr, "seed sign: %s: %v", d.dir, err)
		}
		// A reader that meets the pair half written finds the signature
		// does not match, and refuses the seed.
		for _, f := range []struct {
			name string
			data []byte
		}{{seed.ManifestSignatureFile, sig}, {seed.ManifestFile, body}} {
			if err := atomicfile.Write(filepath.Join(d.dir, f.name), f.data, 0o644); err != nil {
				return fail(stderr, "seed sign: %v", err)
			}
		}
		roles := make([]string, 0, len(parts))
		for r := range parts {
			roles = append(roles, r)
		}
		sort.Strings(roles)
		for _, f := range d.files {
			roles = append(roles, "file "+f.Path)
		}
		if n := countTreeFiles(tree); n > 0 {
			roles = append(roles, fmt.Sprintf("bootstrap (%d files)", n))
		}
		fmt.Fprintf(stdout, "%s: %s\n", filepath.Join(d.dir, seed.ManifestFile), strings.Join(roles, " "))
	}
	return exitOK
}

// signDir is a directory of seed parts and the roles of its files, and
// the files the seed injects (a config drive's meta_data.json names
// them).
type signDir struct {
	dir   string
	roles map[string]string
	files []seed.InjectedFile
	// bootstrap is the seed's bootstrap tree, "" when it has none.
	bootstrap string
}

func countTreeFiles(tree []seed.BootstrapFile) int {
	n := 0
	for _, f := range tree {
		if !f.Dir {
			n++
		}
	}
	return n
}

// bootstrapIn is dir's bootstrap tree, "" when it has none.
func bootstrapIn(dir string) string {
	p := filepath.Join(dir, ds.BootstrapDir)
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return p
	}
	return ""
}

// seedDirsToSign finds the seed's part directories under dir: dir itself
// for NoCloud's layout, or each openstack/VERSION/ of a config drive's.
func seedDirsToSign(dir string) ([]signDir, error) {
	versions, _ := filepath.Glob(filepath.Join(dir, "openstack", "*", "meta_data.json"))
	if len(versions) > 0 {
		var out []signDir
		for _, v := range versions {
			files, err := ds.InjectedFilesIn(dir, filepath.Base(filepath.Dir(v)))
			if err != nil {
				return nil, err
			}
			out = append(out, signDir{dir: filepath.Dir(v), roles: configDriveRoles, files: files, bootstrap: bootstrapIn(dir)})
		}
		return out, nil
	}
	roles := map[string]string{}
	found := false
	for _, p := range seed.PartNames {
		roles[p] = p
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has none of %s, nor openstack/VERSION/meta_data.json", dir, strings.Join(seed.PartNames, ", "))
	}
	return []signDir{{dir: dir, roles: roles, bootstrap: bootstrapIn(dir)}}, nil
}
