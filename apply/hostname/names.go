package hostname

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

const (
	defaultHost   = "localhost"
	defaultDomain = "localdomain"
	hostnameFile  = "/etc/hostname"
	hostsFile     = "/etc/hosts"
)

// kernelHostname is the running system's hostname; tests replace it.
var kernelHostname = os.Hostname

// names is what cloud-init's util.get_hostname_fqdn returns.
type names struct {
	Hostname string
	FQDN     string
	// IsDefault is set when no name came from config or metadata and the
	// system's own name is the default "localhost": such a name is left to
	// other services.
	IsDefault bool
}

// resolveNames picks the short name and the FQDN: config's fqdn and
// hostname first, then the seed's local-hostname, then the system's own.
func resolveNames(env *apply.Env) (names, error) {
	fqdn, hasFQDN, err := env.Config.String("fqdn")
	if err != nil {
		return names{}, err
	}
	host, hasHost, err := env.Config.String("hostname")
	if err != nil {
		return names{}, err
	}
	switch {
	case hasFQDN:
		if !hasHost {
			host, _, _ = strings.Cut(fqdn, ".")
		}
		return names{Hostname: host, FQDN: fqdn}, nil
	case hasHost && strings.Index(host, ".") > 0:
		// A dotted hostname is taken as the FQDN, as users expect.
		short, _, _ := strings.Cut(host, ".")
		return names{Hostname: short, FQDN: host}, nil
	}
	n := names{}
	n.FQDN, _ = seedHostname(env, true)
	if hasHost {
		n.Hostname = host
	} else {
		n.Hostname, n.IsDefault = seedHostname(env, false)
	}
	return n, nil
}

// seedHostname is cloud-init's DataSource.get_hostname: metadata's
// local-hostname (an IPv4 address becomes ip-a-b-c-d), or else the
// system's current name, with the domain appended when withDomain.
func seedHostname(env *apply.Env, withDomain bool) (string, bool) {
	local := ""
	if env.Seed != nil {
		local = env.Seed.LocalHostname
	}
	isDefault := false
	var toks []string
	switch {
	case local == "":
		current := systemHostname(env)
		if current == defaultHost {
			isDefault = true
		}
		hosts, _ := env.Root.ReadFile(hostsFile)
		fromHosts := fqdnFromHosts(string(hosts), current)
		switch {
		case strings.Index(fromHosts, ".") > 0:
			toks = strings.Split(fromHosts, ".")
		case strings.Index(current, ".") > 0:
			toks = strings.Split(current, ".")
		case current != "":
			toks = []string{current, defaultDomain}
		default:
			toks = []string{defaultHost, defaultDomain}
		}
	case isIPv4(local):
		toks = []string{"ip-" + strings.ReplaceAll(local, ".", "-")}
	default:
		toks = strings.Split(local, ".")
	}
	name, domain := toks[0], defaultDomain
	if len(toks) > 1 {
		domain = strings.Join(toks[1:], ".")
	}
	if withDomain && domain != defaultDomain {
		name += "." + domain
	}
	return name, isDefault
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// systemHostname is the name the system has now: the kernel's when the
// target is the running system, else the one the target's /etc/hostname
// would give it at boot.
func systemHostname(env *apply.Env) string {
	if env.Sys != nil && env.Sys.Live() {
		if h, err := kernelHostname(); err == nil {
			return h
		}
	}
	if h, _ := readHostnameFile(env, hostnameFile); h != "" {
		return h
	}
	// What a system without a name calls itself, and the name cloud-init
	// then leaves to other services.
	return defaultHost
}

// readHostnameFile returns the name in an /etc/hostname-style file; a
// missing file or one with two names gives "".
func readHostnameFile(env *apply.Env, name string) (string, error) {
	b, err := env.Root.ReadFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("read hostname from %s: %w", name, err)
	}
	c, err := parseHostnameConf(string(b))
	if err != nil {
		return "", nil
	}
	return c.Hostname(), nil
}

// selectName is the name written to /etc/hostname: Debian's short name
// unless prefer_fqdn_over_hostname says otherwise.
func selectName(n names, preferFQDN bool) string {
	if preferFQDN && n.FQDN != "" {
		return n.FQDN
	}
	if n.Hostname == "" {
		return n.FQDN
	}
	return n.Hostname
}
