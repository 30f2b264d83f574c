// Package hostname implements cloud-init's set_hostname, update_hostname
// and update_etc_hosts modules: the name in /etc/hostname, the kernel's
// hostname on a live system, and /etc/hosts.
package hostname

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

var nameKeys = []string{"hostname", "fqdn", "prefer_fqdn_over_hostname", "preserve_hostname", "create_hostname_file"}

func init() {
	apply.Register(apply.Module{Name: "set_hostname", Frequency: apply.PerInstance, Keys: nameKeys, Run: runSetHostname})
	apply.Register(apply.Module{Name: "update_hostname", Frequency: apply.PerBoot, Keys: nameKeys, Run: runUpdateHostname})
	apply.Register(apply.Module{Name: "update_etc_hosts", Frequency: apply.PerBoot, Keys: []string{"manage_etc_hosts", "hostname", "fqdn"}, Run: runUpdateEtcHosts})
}

// setHostnameRecord is data/set-hostname: what set_hostname last applied,
// so that it acts again only when the names change.
func setHostnameRecord() string { return apply.Path("data", "set-hostname") }

func previousHostnameFile() string { return apply.Path("data", "previous-hostname") }

type options struct {
	preserve   bool
	preferFQDN bool
	createFile bool
}

func readOptions(cfg apply.Config) (options, error) {
	var o options
	var errs []error
	var err error
	if o.preserve, err = cfg.Bool("preserve_hostname", false); err != nil {
		errs = append(errs, err)
	}
	if o.preferFQDN, err = cfg.Bool("prefer_fqdn_over_hostname", false); err != nil {
		errs = append(errs, err)
	}
	if o.createFile, err = cfg.Bool("create_hostname_file", true); err != nil {
		errs = append(errs, err)
	}
	return o, errors.Join(errs...)
}

func runSetHostname(ctx context.Context, env *apply.Env) error {
	opts, err := readOptions(env.Config)
	if err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	if opts.preserve {
		return apply.Skip("preserve_hostname is set")
	}
	n, err := resolveNames(env)
	if err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	prev, err := readSetHostnameRecord(env)
	if err != nil {
		env.Warn("set hostname: %v; setting the hostname again", err)
	}
	if prev != nil && prev.Hostname == n.Hostname && prev.FQDN == n.FQDN {
		return apply.SkipDone("hostname %s (%s) unchanged since it was last set", n.FQDN, n.Hostname)
	}
	if n.IsDefault && n.Hostname == defaultHost {
		return apply.Skip("the hostname is the default localhost: left to other services")
	}
	chosen := selectName(n, opts.preferFQDN)
	env.Log.Info("setting the hostname", "hostname", n.Hostname, "fqdn", n.FQDN, "written", chosen)
	if err := writeHostnameFile(env, hostnameFile, chosen, opts.createFile); err != nil {
		return fmt.Errorf("set hostname to %s: %w", chosen, err)
	}
	applyKernelHostname(env, chosen)
	if _, err := env.Root.WriteFileIfChanged(setHostnameRecord(), encodeSetHostnameRecord(n), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("set hostname: record it: %w", err)
	}
	return nil
}

type hostnameRecord struct {
	FQDN     string `json:"fqdn"`
	Hostname string `json:"hostname"`
}

func readSetHostnameRecord(env *apply.Env) (*hostnameRecord, error) {
	b, err := env.Root.ReadFile(setHostnameRecord())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec hostnameRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read %s: %w", setHostnameRecord(), err)
	}
	return &rec, nil
}

// encodeSetHostnameRecord writes the record as Python's json.dumps(indent=1,
// sort_keys=True) does, so the file is the same whichever tool wrote it.
func encodeSetHostnameRecord(n names) []byte {
	return []byte("{\n \"fqdn\": " + pyJSONString(n.FQDN) + ",\n \"hostname\": " + pyJSONString(n.Hostname) + "\n}\n")
}

// pyJSONString quotes s as Python's json module does by default: ASCII
// only, with \uXXXX escapes (surrogate pairs beyond the BMP).
func pyJSONString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(&b, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func runUpdateHostname(ctx context.Context, env *apply.Env) error {
	opts, err := readOptions(env.Config)
	if err != nil {
		return fmt.Errorf("update hostname: %w", err)
	}
	if opts.preserve {
		return apply.Skip("preserve_hostname is set")
	}
	n, err := resolveNames(env)
	if err != nil {
		return fmt.Errorf("update hostname: %w", err)
	}
	if n.IsDefault && n.Hostname == defaultHost {
		return apply.Skip("the hostname is the default localhost: left to other services")
	}
	chosen := selectName(n, opts.preferFQDN)
	prev, err := readHostnameFile(env, previousHostnameFile())
	if err != nil {
		return fmt.Errorf("update hostname: %w", err)
	}
	current, err := readHostnameFile(env, hostnameFile)
	if err != nil {
		return fmt.Errorf("update hostname: %w", err)
	}
	if current != "" && prev != "" && current != prev {
		// Someone renamed the machine after seedinit (or cloud-init) last
		// set it: their choice wins.
		return apply.Skip("%s (%s) differs from %s (%s): the hostname is maintained by hand", hostnameFile, current, previousHostnameFile(), prev)
	}
	updatePrev := prev == "" || prev != chosen
	updateSystem := current == "" || (current == prev && current != chosen)
	var errs []error
	if updatePrev {
		if err := writeHostnameFile(env, previousHostnameFile(), chosen, true); err != nil {
			errs = append(errs, err)
		}
	}
	if updateSystem {
		env.Log.Info("updating the hostname", "hostname", n.Hostname, "fqdn", n.FQDN, "written", chosen)
		if err := writeHostnameFile(env, hostnameFile, chosen, opts.createFile); err != nil {
			errs = append(errs, err)
		}
		// cloud-init gives the kernel the short name here even when the
		// file gets the FQDN.
		applyKernelHostname(env, n.Hostname)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("update hostname to %s: %w", chosen, err)
	}
	return nil
}

// writeHostnameFile puts name into an /etc/hostname-style file, keeping its
// comments; a file with two names is replaced whole. With create false a
// missing file stays missing (create_hostname_file: false).
func writeHostnameFile(env *apply.Env, file, name string, create bool) error {
	old, err := env.Root.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			env.Log.Info("not creating the hostname file: create_hostname_file is false", "file", file)
			return nil
		}
	case err != nil:
		return fmt.Errorf("write hostname to %s: %w", file, err)
	}
	conf, err := parseHostnameConf(string(old))
	if err != nil {
		conf = &hostnameConf{}
	}
	conf.SetHostname(name)
	if _, err := env.Root.WriteFileIfChanged(file, []byte(conf.String()), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("write hostname to %s: %w", file, err)
	}
	return nil
}

// applyKernelHostname sets the running kernel's name, only when the target
// is the running system: an offline root gets its name from /etc/hostname
// when it boots. A failure is a warning, as for cloud-init: the name is
// only until the next boot, and the file is what lasts.
func applyKernelHostname(env *apply.Env, name string) {
	name = strings.TrimSpace(name)
	if env.Sys == nil || !env.Sys.Live() || name == "" {
		return
	}
	if err := env.Sys.SetHostname(name); err != nil {
		env.Warn("set the kernel hostname to %s: %v", name, err)
	}
}
