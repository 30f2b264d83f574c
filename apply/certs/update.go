package certs

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/internal/rootfs"
)

// UpdateResult says what Update changed.
type UpdateResult struct {
	Added, Removed []string // links in the system directory
	// Bundle lists the certificate files concatenated into the bundle,
	// in order; nil when the bundle was left as it was.
	Bundle []string
}

// Update does what Debian's update-ca-certificates does to a store,
// without running it: links <name>.pem in the system directory to each
// certificate the config file selects and each local certificate,
// removes the links of deselected ("!name") ones, rebuilds the bundle from
// the selected certificates (config order, then the local ones sorted),
// and when links changed removes dangling ones and makes the
// <subject-hash>.N links that `openssl rehash` would. The store's hook
// directory (Java keystores and the like) is not run.
func Update(root *rootfs.Root, s Store) (UpdateResult, error) {
	var res UpdateResult
	var errs []error
	if err := root.MkdirAll(s.SystemDir, 0o755, rootfs.Owner{}); err != nil {
		return res, fmt.Errorf("update the CA store: %w", err)
	}
	conf, err := root.ReadFile(s.ConfigFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("update the CA store: read %s: %w", s.ConfigFile, err)
	}
	if len(conf) == 0 {
		// An empty config means a fresh start: links into the store go.
		if err := clearStoreLinks(root, s); err != nil {
			errs = append(errs, err)
		}
	}
	var selected []string
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.Trim(line, " \t")
		switch {
		case line == "", strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "!"):
			pemLink := path.Join(s.SystemDir, strings.TrimSuffix(path.Base(strings.Trim(line[1:], " \t")), ".crt")+".pem")
			if fi, err := root.Lstat(pemLink); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				if err := root.Remove(pemLink); err != nil {
					errs = append(errs, fmt.Errorf("update the CA store: remove %s: %w", pemLink, err))
					continue
				}
				res.Removed = append(res.Removed, pemLink)
			}
		default:
			selected = append(selected, path.Join(s.CertDir, line))
		}
	}
	var bundle bytes.Buffer
	add := func(cert string) {
		data, err := root.ReadFile(cert)
		if err != nil {
			return // update-ca-certificates warns and goes on
		}
		pemLink := path.Join(s.SystemDir, pemName(cert))
		if dest, err := root.Readlink(pemLink); err != nil || dest != cert {
			if root.Exists(pemLink) || isLink(root, pemLink) {
				if err := root.Remove(pemLink); err != nil {
					errs = append(errs, fmt.Errorf("update the CA store: replace %s: %w", pemLink, err))
					return
				}
			}
			if err := root.Symlink(cert, pemLink); err != nil {
				errs = append(errs, fmt.Errorf("update the CA store: link %s: %w", pemLink, err))
				return
			}
			res.Added = append(res.Added, pemLink)
		}
		bundle.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			bundle.WriteByte('\n')
		}
		res.Bundle = append(res.Bundle, cert)
	}
	for _, cert := range selected {
		if fi, err := root.Stat(cert); err == nil && fi.Mode().IsRegular() {
			add(cert)
		}
	}
	local, err := findCerts(root, s.LocalCertDir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, cert := range local {
		add(cert)
	}
	if len(res.Added)+len(res.Removed) > 0 {
		if err := removeDangling(root, s.SystemDir); err != nil {
			errs = append(errs, err)
		}
		if err := Rehash(root, s.SystemDir); err != nil {
			errs = append(errs, err)
		}
	}
	if res.Bundle != nil {
		name := path.Join(s.SystemDir, s.Bundle)
		if _, err := root.WriteFileIfChanged(name, bundle.Bytes(), 0o644, rootfs.KeepOwner); err != nil {
			errs = append(errs, fmt.Errorf("update the CA store: write %s: %w", name, err))
		}
	}
	return res, errors.Join(errs...)
}

// pemName is update-ca-certificates' link name for a certificate file.
func pemName(cert string) string {
	base := strings.TrimSuffix(path.Base(cert), ".crt")
	return strings.NewReplacer(" ", "_", "(", "=", ")", "=", ",", "_").Replace(base) + ".pem"
}

func isLink(root *rootfs.Root, name string) bool {
	fi, err := root.Lstat(name)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// findCerts lists the *.crt files under dir, following links, sorted.
func findCerts(root *rootfs.Root, dir string) ([]string, error) {
	var out []string
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		if depth > 16 {
			return nil
		}
		entries, err := root.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("update the CA store: list %s: %w", d, err)
		}
		for _, e := range entries {
			p := path.Join(d, e.Name())
			fi, err := root.Stat(p)
			if err != nil {
				continue
			}
			switch {
			case fi.IsDir():
				if err := walk(p, depth+1); err != nil {
					return err
				}
			case fi.Mode().IsRegular() && strings.HasSuffix(p, ".crt"):
				out = append(out, p)
			}
		}
		return nil
	}
	err := walk(dir, 0)
	sort.Strings(out)
	return out, err
}

// clearStoreLinks removes the links in the system directory that point
// into the store's directories, and dangling ones.
func clearStoreLinks(root *rootfs.Root, s Store) error {
	entries, err := root.ReadDir(s.SystemDir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		p := path.Join(s.SystemDir, e.Name())
		dest, err := root.Readlink(p)
		if err != nil {
			continue
		}
		if strings.HasPrefix(dest, s.CertDir) || (s.LocalCertDir != "" && strings.HasPrefix(dest, s.LocalCertDir)) || !root.Exists(p) {
			if err := root.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("update the CA store: remove %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

func removeDangling(root *rootfs.Root, dir string) error {
	entries, err := root.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		if isLink(root, p) && !root.Exists(p) {
			if err := root.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("update the CA store: remove the dangling %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

var hashLinkName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{8}\.r?[0-9]+$`) })

// Rehash makes the <subject-hash>.N links `openssl rehash` makes in dir:
// one per distinct certificate in the *.pem, *.crt and *.cer files that
// hold exactly one, numbered from 0 per hash in file name order. Stale
// hash links are removed first.
func Rehash(root *rootfs.Root, dir string) error {
	entries, err := root.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("rehash %s: %w", dir, err)
	}
	var errs []error
	var names []string
	for _, e := range entries {
		n := e.Name()
		p := path.Join(dir, n)
		if hashLinkName().MatchString(n) && isLink(root, p) {
			if err := root.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("rehash %s: remove %s: %w", dir, p, err))
			}
			continue
		}
		if ext := path.Ext(n); ext == ".pem" || ext == ".crt" || ext == ".cer" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	next := map[uint32]int{}
	seen := map[[sha1.Size]byte]bool{}
	for _, n := range names {
		data, err := root.ReadFile(path.Join(dir, n))
		if err != nil {
			continue
		}
		cert, ok := singleCert(data)
		if !ok {
			continue
		}
		fp := sha1.Sum(cert.Raw)
		if seen[fp] {
			continue
		}
		seen[fp] = true
		h, err := SubjectHash(cert.RawSubject)
		if err != nil {
			errs = append(errs, fmt.Errorf("rehash %s: %s: %w", dir, n, err))
			continue
		}
		link := path.Join(dir, fmt.Sprintf("%08x.%d", h, next[h]))
		next[h]++
		if err := root.Symlink(n, link); err != nil {
			errs = append(errs, fmt.Errorf("rehash %s: link %s: %w", dir, link, err))
		}
	}
	return errors.Join(errs...)
}

// singleCert parses a PEM file that holds exactly one certificate.
func singleCert(data []byte) (*x509.Certificate, bool) {
	var found *x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" && block.Type != "TRUSTED CERTIFICATE" {
			continue
		}
		if found != nil {
			return nil, false
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, false
		}
		found = cert
	}
	return found, found != nil
}
