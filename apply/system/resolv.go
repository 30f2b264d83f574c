package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

const resolvConfPath = "/etc/resolv.conf"

// resolvHeader replaces the comment cloud-init's template puts on top; the
// lines after it are the template's output, blank lines included.
const resolvHeader = `# Written by seedinit from the cloud-config's resolv_conf, because
# manage_resolv_conf is true. It is written once per instance; edits made
# after that are kept until the instance changes.
#
`

func runResolvConf(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("manage_resolv_conf") {
		return apply.Skip("no manage_resolv_conf in the config")
	}
	manage, err := env.Config.Bool("manage_resolv_conf", false)
	if err != nil {
		return fmt.Errorf("read manage_resolv_conf: %w", err)
	}
	if !manage {
		return apply.Skip("manage_resolv_conf is false")
	}
	if !env.Config.Has("resolv_conf") {
		env.Warn("manage_resolv_conf is true but resolv_conf gives no settings")
		return nil
	}
	params, _, err := env.Config.Map("resolv_conf")
	if err != nil {
		return fmt.Errorf("read resolv_conf: %w", err)
	}
	text, err := RenderResolvConf(params)
	if err != nil {
		return err
	}
	// A resolv.conf that is a link (systemd-resolved's stub, resolvconf's
	// file in /run) is replaced by a file, as cloud-init's write does,
	// rather than written through into /run.
	if fi, err := env.Root.Lstat(resolvConfPath); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if err := env.Root.Remove(resolvConfPath); err != nil {
			return fmt.Errorf("replace the link %s: %w", resolvConfPath, err)
		}
	}
	if _, err := env.Root.WriteFileIfChanged(resolvConfPath, []byte(text), 0o644, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write %s: %w", resolvConfPath, err)
	}
	return nil
}

// RenderResolvConf renders /etc/resolv.conf from the resolv_conf mapping
// (nameservers, searchdomains, domain, sortlist, options) in the layout of
// cloud-init's resolv.conf template: options that are true become flags,
// options that are false are dropped, the rest are "key:value" sorted by
// key.
func RenderResolvConf(params apply.Config) (string, error) {
	var errs []error
	list := func(key string) ([]string, bool) {
		if !params.Has(key) {
			return nil, false
		}
		l, _, err := params.StringList(key, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("read resolv_conf: %w", err))
		}
		return l, true
	}
	var b strings.Builder
	b.WriteString(resolvHeader)
	if servers, ok := list("nameservers"); ok {
		for _, s := range servers {
			b.WriteString("nameserver " + s + "\n")
		}
		b.WriteString("\n")
	}
	if domains, ok := list("searchdomains"); ok {
		b.WriteString("search ")
		for _, d := range domains {
			b.WriteString(d + " ")
		}
		b.WriteString("\n")
	}
	if params.Has("domain") {
		d, _, err := params.String("domain")
		if err != nil {
			errs = append(errs, fmt.Errorf("read resolv_conf: %w", err))
		}
		b.WriteString("domain " + d + "\n")
	}
	if sorts, ok := list("sortlist"); ok {
		b.WriteString("\nsortlist ")
		for _, s := range sorts {
			b.WriteString(s + " ")
		}
	}
	options, _, err := params.Map("options")
	if err != nil {
		errs = append(errs, fmt.Errorf("read resolv_conf: %w", err))
	}
	var flags, pairs []string
	for _, k := range options.Keys() {
		v := options[k]
		if on, isBool := v.(bool); isBool {
			if on {
				flags = append(flags, k)
			}
			continue
		}
		s, err := apply.AsString(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("read resolv_conf: options: %s: %w", k, err))
			continue
		}
		pairs = append(pairs, k+":"+s)
	}
	// A Go map has no order; cloud-init keeps the YAML's order for flags.
	// Sorting keeps the output stable across runs.
	sort.Strings(flags)
	if len(flags)+len(pairs) > 0 {
		b.WriteString("\noptions")
		for _, f := range append(flags, pairs...) {
			b.WriteString(" " + f)
		}
	}
	b.WriteString("\n")
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return b.String(), nil
}
