package hostname

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/scripts/citemplate"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// Debian-style targets: the template cloud-init's Debian package ships and
// the loopback address Debian gives the machine's own name.
const (
	hostsTemplate = "/etc/cloud/templates/hosts.debian.tmpl"
	localhostIP   = "127.0.1.1"
)

// now is the clock for that header; tests replace it.
var now = time.Now

// stockCloudConfig is the image's cloud-init configuration; without it
// seedinit makes the new hostname resolve (see runUpdateEtcHosts).
const stockCloudConfig = "/etc/cloud/cloud.cfg"

// builtinHosts is the /etc/hosts that manage_etc_hosts writes when the
// target has no template: the same entries as Debian's hosts.debian.tmpl.
const builtinHosts = `# This file is managed by seedinit because manage_etc_hosts is on: it is
# rewritten at every boot. To keep a change, put it in
# /etc/cloud/templates/hosts.debian.tmpl, or turn manage_etc_hosts off in
# the cloud-config.
#
127.0.1.1 {{fqdn}} {{hostname}}
127.0.0.1 localhost

# IPv6 loopback and multicast names
::1 localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters

`

type hostsMode int

const (
	hostsUnmanaged hostsMode = iota
	hostsTemplateMode
	hostsLocalhostMode
)

// parseManageEtcHosts reads manage_etc_hosts as cloud-init does: true or
// "template" render the template; exactly "localhost" edits the 127.0.1.1
// line; anything else leaves /etc/hosts alone.
func parseManageEtcHosts(v any) hostsMode {
	switch t := v.(type) {
	case nil:
		return hostsUnmanaged
	case bool:
		if t {
			return hostsTemplateMode
		}
		return hostsUnmanaged
	}
	s, err := apply.AsString(v)
	if err != nil || s == "" {
		return hostsUnmanaged
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "on", "yes", "template":
		return hostsTemplateMode
	}
	if s == "localhost" {
		return hostsLocalhostMode
	}
	return hostsUnmanaged
}

func runUpdateEtcHosts(ctx context.Context, env *apply.Env) error {
	mode := parseManageEtcHosts(env.Config["manage_etc_hosts"])
	if _, set := env.Config["manage_etc_hosts"]; !set && !env.Root.Exists(stockCloudConfig) {
		// Cloud images set manage_etc_hosts in their stock cloud.cfg; an
		// appliance without one would otherwise be left with a hostname
		// that does not resolve (sudo complains at every call). The
		// 127.0.1.1 line is what Debian's installer and cloud-init's
		// "localhost" mode write, and touches nothing else.
		mode = hostsLocalhostMode
	}
	if mode == hostsUnmanaged {
		return apply.Skip("manage_etc_hosts is not set: %s left alone", hostsFile)
	}
	if s, _ := env.Config["manage_etc_hosts"].(string); s == "template" {
		env.Warn("manage_etc_hosts: \"template\" is deprecated: use true")
	}
	n, err := resolveNames(env)
	if err != nil {
		return fmt.Errorf("update %s: %w", hostsFile, err)
	}
	if n.Hostname == "" {
		env.Warn("manage_etc_hosts is set, but no hostname was found: %s left alone", hostsFile)
		return nil
	}
	if mode == hostsLocalhostMode {
		return updateLocalhostEntry(env, n)
	}
	content := renderHostsTemplate(env, n)
	if _, err := env.Root.WriteFileIfChanged(hostsFile, []byte(content), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("update %s: %w", hostsFile, err)
	}
	return nil
}

// renderHostsTemplate renders the target's hosts template, or the built-in
// one when the target has none or it cannot be rendered.
func renderHostsTemplate(env *apply.Env, n names) string {
	vars := map[string]any{"hostname": n.Hostname, "fqdn": n.FQDN}
	tmpl, err := env.Root.ReadFile(hostsTemplate)
	switch {
	case err == nil:
		out, err := citemplate.Render(string(tmpl), vars)
		if err == nil {
			return out
		}
		env.Warn("render %s: %v; writing seedinit's built-in /etc/hosts", hostsTemplate, err)
	case !errors.Is(err, fs.ErrNotExist):
		env.Warn("read %s: %v; writing seedinit's built-in /etc/hosts", hostsTemplate, err)
	}
	return strings.NewReplacer("{{fqdn}}", n.FQDN, "{{hostname}}", n.Hostname).Replace(builtinHosts)
}

// updateLocalhostEntry makes sure a 127.0.1.1 line names fqdn with hostname
// as an alias, keeping the rest of the file, as cloud-init's
// Distro.update_etc_hosts does.
func updateLocalhostEntry(env *apply.Env, n names) error {
	header := ""
	old, err := env.Root.ReadFile(hostsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		header = fmt.Sprintf("# Added by seedinit v. %s on %s\n", apply.Version, now().UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	case err != nil:
		return fmt.Errorf("update %s: %w", hostsFile, err)
	}
	conf := parseHostsConf(string(old))
	entries := conf.Entries(localhostIP)
	for _, e := range entries {
		if len(e) >= 1 && e[0] == n.FQDN && contains(e[1:], n.Hostname) {
			return nil
		}
	}
	entries = append(entries, []string{n.FQDN, n.Hostname})
	conf.DeleteEntries(localhostIP)
	for _, e := range entries {
		if len(e) >= 1 {
			conf.AddEntry(localhostIP, e...)
		}
	}
	// cloud-init ends the file with one more newline than its parser
	// writes; the next run finds the entry and leaves the file alone.
	content := header + conf.String() + "\n"
	if err := env.Root.WriteFile(hostsFile, []byte(content), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("update %s: %w", hostsFile, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
