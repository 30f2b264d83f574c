// Package certs is cloud-init's ca_certs module: trusted CA certificates
// added to the target's store and, on Debian-style stores (Debian,
// Ubuntu, Alpine, busybox images), the store regenerated in Go the way
// update-ca-certificates does, so the target needs no tools.
package certs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// Store is where a distro keeps its CA certificates.
type Store struct {
	// CertDir holds the certificates the config file selects from.
	CertDir string
	// FileName is the file under CertDir that cloud-init's certificates go to.
	FileName string
	// ConfigFile selects certificates in CertDir ("" when there is none).
	ConfigFile string
	// SystemDir is where links and the bundle are made.
	SystemDir string
	// LocalCertDir holds the admin's own certificates, always trusted.
	LocalCertDir string
	// Bundle is the concatenated store, inside SystemDir.
	Bundle string
	// UpdateCommand regenerates the store on distros where seedinit does
	// not do it in Go.
	UpdateCommand []string
}

// DebianStore is the layout update-ca-certificates manages.
var DebianStore = Store{
	CertDir:      "/usr/share/ca-certificates",
	FileName:     "cloud-init-ca-certs.crt",
	ConfigFile:   "/etc/ca-certificates.conf",
	SystemDir:    "/etc/ssl/certs",
	LocalCertDir: "/usr/local/share/ca-certificates",
	Bundle:       "ca-certificates.crt",
}

// RHELStore is the layout update-ca-trust (p11-kit) manages.
var RHELStore = Store{
	CertDir:       "/usr/share/pki/ca-trust-source",
	FileName:      "anchors/cloud-init-ca-certs.crt",
	SystemDir:     "/etc/pki/ca-trust",
	UpdateCommand: []string{"update-ca-trust"},
}

func init() {
	apply.Register(apply.Module{Name: "ca_certs", Frequency: apply.PerInstance, Keys: []string{"ca_certs", "ca-certs"}, Run: run})
}

func run(ctx context.Context, env *apply.Env) error {
	key := "ca_certs"
	switch {
	case env.Config.Has("ca-certs") && env.Config.Has("ca_certs"):
		env.Warn("found both ca-certs (deprecated) and ca_certs; ignoring ca-certs")
	case env.Config.Has("ca-certs"):
		env.Warn("the key ca-certs is deprecated; use ca_certs")
		key = "ca-certs"
	case !env.Config.Has("ca_certs"):
		return apply.Skip("no ca_certs in the config")
	}
	cfg := apply.Config{}
	if env.Config[key] != nil {
		m, _, err := env.Config.Map(key)
		if err != nil {
			return fmt.Errorf("read %w", err)
		}
		cfg = m
	}
	store := storeFor(env.Root)
	var errs []error
	removeKey := "remove_defaults"
	if cfg.Has("remove-defaults") {
		env.Warn("the key %s.remove-defaults is deprecated; use %s.remove_defaults", key, key)
		removeKey = "remove-defaults"
	}
	remove, err := cfg.Bool(removeKey, false)
	if err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", key, err))
	} else if remove {
		if err := RemoveDefaults(env.Root, store); err != nil {
			errs = append(errs, err)
		}
		if store.ConfigFile != "" {
			stopTrustingNewDefaults(ctx, env)
		}
	}
	trusted, _, err := cfg.StringList("trusted", false)
	if err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", key, err))
	} else if len(trusted) > 0 {
		env.Log.Info("adding trusted CA certificates", "count", len(trusted))
		if err := AddTrusted(env.Root, store, trusted); err != nil {
			errs = append(errs, err)
		}
	}
	if len(store.UpdateCommand) > 0 {
		if err := runUpdateCommand(ctx, env, store); err != nil {
			errs = append(errs, err)
		}
	} else if _, err := Update(env.Root, store); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// storeFor picks the RHEL layout on targets that have update-ca-trust's
// tree and no Debian-style config, the Debian layout otherwise.
func storeFor(root *rootfs.Root) Store {
	if root.Exists("/etc/pki/ca-trust") && !root.Exists(DebianStore.ConfigFile) {
		return RHELStore
	}
	return DebianStore
}

// RemoveDefaults empties the store (the certificate directory and the
// system directory) and its config file, as cloud-init's
// remove_default_ca_certs does.
func RemoveDefaults(root *rootfs.Root, s Store) error {
	var errs []error
	for _, dir := range []string{s.CertDir, s.SystemDir} {
		entries, err := root.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove the default certificates: %w", err))
			continue
		}
		for _, e := range entries {
			if err := removeAll(root, path.Join(dir, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("remove the default certificates: %w", err))
			}
		}
	}
	if s.ConfigFile != "" {
		if err := root.WriteFile(s.ConfigFile, nil, 0o644, rootfs.KeepOwner); err != nil {
			errs = append(errs, fmt.Errorf("remove the default certificates: empty %s: %w", s.ConfigFile, err))
		}
	}
	return errors.Join(errs...)
}

func removeAll(root *rootfs.Root, name string) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		entries, err := root.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := removeAll(root, path.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	return root.Remove(name)
}

// stopTrustingNewDefaults tells debconf not to trust the certificates a
// ca-certificates upgrade brings, as cloud-init does on Debian and Ubuntu.
func stopTrustingNewDefaults(ctx context.Context, env *apply.Env) {
	if !env.Root.Exists("/usr/bin/debconf-set-selections") {
		return
	}
	cmd := apply.Command{Argv: []string{"/bin/sh", "-c",
		"echo 'ca-certificates ca-certificates/trust_new_crts select no' | /usr/bin/debconf-set-selections -"}}
	if err := env.Sys.Run(ctx, cmd); err != nil {
		env.Warn("ca_certs: debconf-set-selections: %v", err)
	}
}

// AddTrusted writes the certificates into the store's cloud-init file
// (joined by newlines, as cloud-init writes them) and selects that file
// in the store's config, last.
func AddTrusted(root *rootfs.Root, s Store, certs []string) error {
	file := path.Join(s.CertDir, s.FileName)
	if err := root.MkdirAll(path.Dir(file), 0o755, rootfs.Owner{}); err != nil {
		return fmt.Errorf("add trusted certificates: %w", err)
	}
	if _, err := root.WriteFileIfChanged(file, []byte(strings.Join(certs, "\n")), 0o644, rootfs.Owner{}); err != nil {
		return fmt.Errorf("add trusted certificates: write %s: %w", file, err)
	}
	if s.ConfigFile == "" {
		return nil
	}
	old, err := root.ReadFile(s.ConfigFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("add trusted certificates: read %s: %w", s.ConfigFile, err)
	}
	if _, err := root.WriteFileIfChanged(s.ConfigFile, []byte(selectInConfig(string(old), s.FileName)), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("add trusted certificates: write %s: %w", s.ConfigFile, err)
	}
	return nil
}

// selectInConfig moves name to the end of a ca-certificates.conf, as
// cloud-init's update_cert_config does (trailing white space of the
// rest dropped).
func selectInConfig(conf, name string) string {
	if conf == "" {
		return name + "\n"
	}
	var kept []string
	for _, l := range splitLines(conf) {
		if l != name {
			kept = append(kept, l)
		}
	}
	rest := strings.TrimRight(strings.Join(kept, "\n"), " \t\n\r\v\f")
	if rest == "" {
		// cloud-init writes "\n<name>\n" here; the blank line means nothing
		// to update-ca-certificates, and leaving it out keeps reruns equal.
		return name + "\n"
	}
	return rest + "\n" + name + "\n"
}

// splitLines is Python's str.splitlines for the separators a text file
// has.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func runUpdateCommand(ctx context.Context, env *apply.Env, s Store) error {
	name := s.UpdateCommand[0]
	if p, ok := apply.LookPath(env.Root, name); ok {
		argv := append([]string{p}, s.UpdateCommand[1:]...)
		if err := env.Sys.Run(ctx, apply.Command{Argv: argv}); err != nil {
			return fmt.Errorf("update the CA store with %s: %w", name, err)
		}
		return nil
	}
	env.Warn("ca_certs: %s is not available on this image; certificates were added to %s but the store was not regenerated", name, s.CertDir)
	return nil
}
