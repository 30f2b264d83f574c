package system

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/jinja"
)

//go:embed templates/*.tmpl
var templates embed.FS

// ntpClient is how one NTP client is found and configured, cloud-init's
// ntp client config (check_exe, confpath, packages, service_name,
// template).
type ntpClient struct {
	Name     string
	CheckExe string
	ConfPath string
	Packages []string
	Service  string
	// Template is one of templates/ or, from ntp.config.template, the
	// user's own Jinja text.
	Template     string
	UserTemplate string
}

// ntpClients are cloud-init's clients with the distro overrides that
// matter for where the file goes.
func ntpClients(distro string) map[string]ntpClient {
	c := map[string]ntpClient{
		"chrony":            {Name: "chrony", CheckExe: "chronyd", ConfPath: "/etc/chrony.conf", Packages: []string{"chrony"}, Service: "chrony", Template: "chrony.conf"},
		"ntp":               {Name: "ntp", CheckExe: "ntpd", ConfPath: "/etc/ntp.conf", Packages: []string{"ntp"}, Service: "ntp", Template: "ntp.conf"},
		"ntpdate":           {Name: "ntpdate", CheckExe: "ntpdate", ConfPath: "/etc/ntp.conf", Packages: []string{"ntpdate"}, Service: "ntpdate", Template: "ntp.conf"},
		"openntpd":          {Name: "openntpd", CheckExe: "ntpd", ConfPath: "/etc/ntpd.conf", Service: "ntpd", Template: "ntpd.conf.openntpd"},
		"systemd-timesyncd": {Name: "systemd-timesyncd", CheckExe: "/lib/systemd/systemd-timesyncd", ConfPath: "/etc/systemd/timesyncd.conf.d/cloud-init.conf", Service: "systemd-timesyncd", Template: "timesyncd.conf"},
	}
	set := func(name string, f func(*ntpClient)) {
		x := c[name]
		f(&x)
		c[name] = x
	}
	switch distro {
	case "debian", "ubuntu", "cos":
		set("chrony", func(x *ntpClient) { x.ConfPath = "/etc/chrony/chrony.conf" })
	case "alpine":
		set("chrony", func(x *ntpClient) { x.ConfPath, x.Service = "/etc/chrony/chrony.conf", "chronyd" })
		// Alpine's "ntp" is busybox ntpd, which reads only server lines.
		set("ntp", func(x *ntpClient) { x.Packages, x.Service, x.Template = nil, "ntpd", "ntp.conf.busybox" })
	case "mariner", "photon":
		set("systemd-timesyncd", func(x *ntpClient) {
			x.CheckExe, x.ConfPath = "/usr/lib/systemd/systemd-timesyncd", "/etc/systemd/timesyncd.conf"
		})
	case "opensuse", "sles", "openmandriva":
		set("systemd-timesyncd", func(x *ntpClient) { x.CheckExe = "/usr/lib/systemd/systemd-timesyncd" })
	}
	return c
}

// preferredNTPClients is the order "auto" tries clients in.
func preferredNTPClients(distro string) []string {
	if distro == "alpine" {
		return []string{"chrony", "ntp"}
	}
	return []string{"chrony", "systemd-timesyncd", "ntp", "ntpdate"}
}

func runNTP(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("ntp") {
		return apply.Skip("no ntp in the config")
	}
	ntp := apply.Config{}
	if env.Config["ntp"] != nil {
		m, _, err := env.Config.Map("ntp")
		if err != nil {
			return fmt.Errorf("read ntp: %w", err)
		}
		ntp = m
	}
	enabled, err := ntp.Bool("enabled", true)
	if err != nil {
		return fmt.Errorf("read ntp: %w", err)
	}
	if !enabled {
		return apply.Skip("ntp is disabled by ntp.enabled")
	}
	distro := readOSRelease(env.Root).distro()
	name, _, err := ntp.String("ntp_client")
	if err != nil {
		return fmt.Errorf("read ntp: %w", err)
	}
	client, err := selectNTPClient(env.Root, distro, name)
	if err != nil {
		return err
	}
	if override, ok, err := ntp.Map("config"); err != nil {
		return fmt.Errorf("read ntp: %w", err)
	} else if ok {
		if client, err = overrideNTPClient(client, override); err != nil {
			return err
		}
	}
	servers, _, err := ntp.StringList("servers", false)
	if err != nil {
		return fmt.Errorf("read ntp: %w", err)
	}
	pools, _, err := ntp.StringList("pools", false)
	if err != nil {
		return fmt.Errorf("read ntp: %w", err)
	}
	text, err := RenderNTPConfig(client, distro, servers, pools)
	if err != nil {
		return err
	}
	if err := keepDistConfig(env.Root, client.ConfPath, text); err != nil {
		return err
	}
	if _, err := env.Root.WriteFileIfChanged(client.ConfPath, text, 0o644, rootfs.Owner{}); err != nil {
		return fmt.Errorf("write the %s config %s: %w", client.Name, client.ConfPath, err)
	}
	if _, ok := apply.LookPath(env.Root, client.CheckExe); !ok {
		// cloud-init would install the packages here; seedinit leaves
		// installing to the packages module and the image.
		env.Warn("ntp: %s (%s) is not available on this image; its config %s is written for when it is installed (packages: %s)",
			client.Name, client.CheckExe, client.ConfPath, strings.Join(client.Packages, " "))
	}
	return nil
}

// selectNTPClient picks the client the user named, or with "auto" the
// first of the distro's preferred clients that the target has, else the
// distro's first choice.
func selectNTPClient(root *rootfs.Root, distro, name string) (ntpClient, error) {
	clients := ntpClients(distro)
	if name != "" && name != "auto" {
		c, ok := clients[name]
		if !ok {
			// A client cloud-init does not know needs ntp.config to say
			// everything about it.
			return ntpClient{Name: name}, nil
		}
		return c, nil
	}
	preferred := preferredNTPClients(distro)
	for _, n := range preferred {
		if _, ok := apply.LookPath(root, clients[n].CheckExe); ok {
			return clients[n], nil
		}
	}
	return clients[preferred[0]], nil
}

// overrideNTPClient applies ntp.config (check_exe, confpath, packages,
// service_name, template) with cloud-init's supplemental checks.
func overrideNTPClient(c ntpClient, cfg apply.Config) (ntpClient, error) {
	var errs []error
	str := func(key string, dst *string) {
		if !cfg.Has(key) {
			return
		}
		v, ok := cfg[key].(string)
		if !ok || (key == "confpath" && v == "") {
			errs = append(errs, fmt.Errorf("read ntp: config: %s: want a string, got %s", key, apply.TypeName(cfg[key])))
			return
		}
		*dst = v
	}
	str("check_exe", &c.CheckExe)
	str("confpath", &c.ConfPath)
	str("service_name", &c.Service)
	if cfg.Has("packages") {
		l, ok := cfg["packages"].([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("read ntp: config: packages: want a list, got %s", apply.TypeName(cfg["packages"])))
		} else {
			c.Packages = nil
			for i, p := range l {
				s, err := apply.AsString(p)
				if err != nil {
					errs = append(errs, fmt.Errorf("read ntp: config: packages: item %d: %w", i, err))
					continue
				}
				c.Packages = append(c.Packages, s)
			}
		}
	}
	if cfg["template"] != nil {
		str("template", &c.UserTemplate)
	}
	var missing []string
	for _, k := range []struct {
		key string
		v   string
	}{{"check_exe", c.CheckExe}, {"confpath", c.ConfPath}, {"service_name", c.Service}} {
		if k.v == "" {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("read ntp: config: missing required keys: %s", strings.Join(missing, ", ")))
	} else if c.Template == "" && c.UserTemplate == "" {
		errs = append(errs, errors.New("read ntp: config: either template or a client seedinit knows is required"))
	}
	return c, errors.Join(errs...)
}

// defaultNTPNames are cloud-init's four pool names for a distro when the
// config gives neither servers nor pools.
func defaultNTPNames(distro string) []string {
	pool := distro
	switch distro {
	case "sles":
		pool = "opensuse"
	case "alpine", "eurolinux":
		pool = ""
	}
	var names []string
	for i := range 4 {
		n := strconv.Itoa(i) + "."
		if pool != "" {
			n += pool + "."
		}
		names = append(names, n+"pool.ntp.org")
	}
	return names
}

// RenderNTPConfig renders a client's config for servers and pools, with
// cloud-init's defaults: Alpine's busybox ntpd, which has no pool
// directive, always gets default servers when none are given; other
// clients get default pools when neither is given.
func RenderNTPConfig(c ntpClient, distro string, servers, pools []string) ([]byte, error) {
	switch {
	case len(servers) == 0 && distro == "alpine" && c.Service == "ntpd":
		servers = defaultNTPNames(distro)
	case len(servers) == 0 && len(pools) == 0:
		pools = defaultNTPNames(distro)
	}
	src := []byte(c.UserTemplate)
	name := "ntp.config.template"
	if c.UserTemplate == "" {
		name = c.Template + ".tmpl"
		var err error
		if src, err = templates.ReadFile("templates/" + name); err != nil {
			return nil, fmt.Errorf("render the %s config: no template %s: %w", c.Name, name, err)
		}
	}
	// The "## template:jinja" line marks a template; it is not output.
	if first, rest, ok := strings.Cut(string(src), "\n"); ok && strings.HasPrefix(strings.ReplaceAll(first, " ", ""), "##template:jinja") {
		src = []byte(rest)
	}
	vars := map[string]any{"servers": toAny(servers), "pools": toAny(pools)}
	out, err := jinja.RenderWith(src, vars, jinja.Options{Name: name})
	if err != nil {
		return nil, fmt.Errorf("render the %s config: %w", c.Name, err)
	}
	return out, nil
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// keepDistConfig saves the image's own config as <confpath>.dist before
// the first write, as cloud-init does; later runs leave the saved copy.
func keepDistConfig(root *rootfs.Root, confPath string, next []byte) error {
	old, err := root.ReadFile(confPath)
	if err != nil || string(old) == string(next) || root.Exists(confPath+".dist") {
		return nil
	}
	if err := root.WriteFile(confPath+".dist", old, 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("keep the image's %s as .dist: %w", confPath, err)
	}
	return nil
}
