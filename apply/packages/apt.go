package packages

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

const (
	aptProxyFile     = "/etc/apt/apt.conf.d/90cloud-init-aptproxy"
	aptConfigFile    = "/etc/apt/apt.conf.d/94cloud-init-config"
	aptTrustedDir    = "/etc/apt/trusted.gpg.d"
	aptHardenedDir   = "/etc/apt/cloud-init.gpg.d"
	aptSourcesDir    = "/etc/apt/sources.list.d"
	defaultRepoMatch = `^[\w-]+:\w`
)

func runAPTConfigure(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("apt") {
		return apply.Skip("no apt in the config")
	}
	cfg := apply.Config{}
	if env.Config["apt"] != nil {
		m, _, err := env.Config.Map("apt")
		if err != nil {
			return fmt.Errorf("read %w", err)
		}
		cfg = m
	}
	if _, ok := apply.LookPath(env.Root, "apt-get"); !ok {
		env.Warn("apt_configure: apt is not available on this image; apt settings ignored")
		return apply.Skip("no apt on this image")
	}
	var errs []error
	for _, k := range []string{"primary", "security", "generate_mirrorlists", "debconf_selections", "sources_list", "disable_suites"} {
		if cfg.Has(k) {
			env.Warn("apt_configure: apt.%s is not supported by seedinit yet; ignored", k)
		}
	}
	if err := applyAPTConfig(env.Root, cfg); err != nil {
		errs = append(errs, err)
	}
	if cfg.Has("sources") {
		if err := addAPTSources(ctx, env, cfg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// applyAPTConfig writes (or removes) the proxy and apt.conf snippets.
func applyAPTConfig(root *rootfs.Root, cfg apply.Config) error {
	var errs []error
	var proxies []string
	for _, p := range []struct{ key, format string }{
		{"proxy", `Acquire::http::Proxy "%s";`},
		{"http_proxy", `Acquire::http::Proxy "%s";`},
		{"ftp_proxy", `Acquire::ftp::Proxy "%s";`},
		{"https_proxy", `Acquire::https::Proxy "%s";`},
	} {
		if !yaml11.Truthy(cfg[p.key]) {
			continue
		}
		v, err := apply.AsString(cfg[p.key])
		if err != nil {
			errs = append(errs, fmt.Errorf("read apt: %s: %w", p.key, err))
			continue
		}
		proxies = append(proxies, fmt.Sprintf(p.format, v))
	}
	write := func(file, text string) {
		if text == "" {
			if root.Exists(file) {
				if err := root.Remove(file); err != nil {
					errs = append(errs, fmt.Errorf("remove %s: %w", file, err))
				}
			}
			return
		}
		if _, err := root.WriteFileIfChanged(file, []byte(text), fileMode(text, false), rootfs.Owner{}); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", file, err))
		}
	}
	if len(proxies) > 0 {
		write(aptProxyFile, strings.Join(proxies, "\n")+"\n")
	} else {
		write(aptProxyFile, "")
	}
	conf := ""
	if yaml11.Truthy(cfg["conf"]) {
		s, err := apply.AsString(cfg["conf"])
		if err != nil {
			// A bad value leaves the file as it is rather than removing it.
			return errors.Join(append(errs, fmt.Errorf("read apt: conf: %w", err))...)
		}
		conf = s
	}
	write(aptConfigFile, conf)
	return errors.Join(errs...)
}

// addAPTSources writes each apt.sources entry's line into its .list file
// (once: a line already there is not added again) and its inline key
// into a keyring; PPA-style entries go to the target's
// add-apt-repository.
func addAPTSources(ctx context.Context, env *apply.Env, cfg apply.Config) error {
	sources, _, err := cfg.Map("sources")
	if err != nil {
		return fmt.Errorf("read apt: %w", err)
	}
	match := regexp.MustCompile(defaultRepoMatch)
	if s, ok, err := cfg.String("add_apt_repo_match"); err != nil {
		return fmt.Errorf("read apt: %w", err)
	} else if ok && s != "" {
		if match, err = regexp.Compile(s); err != nil {
			return fmt.Errorf("read apt: add_apt_repo_match: %w", err)
		}
	}
	params := aptTemplateParams(env)
	var errs []error
	for _, name := range sources.Keys() {
		ent, _, err := sources.Map(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("read apt: sources: %w", err))
			continue
		}
		if ent == nil {
			ent = apply.Config{}
		}
		file := name
		if s, ok, _ := ent.String("filename"); ok {
			file = s
		}
		source, hasSource, err := ent.String("source")
		if err != nil {
			errs = append(errs, fmt.Errorf("read apt: sources: %s: %w", name, err))
			continue
		}
		hardened := hasSource && strings.Contains(source, "$KEY_FILE")
		keyFile, err := addAPTKey(env.Root, ent, file, hardened)
		if err != nil {
			errs = append(errs, fmt.Errorf("add the key of apt source %s: %w", name, err))
			continue
		}
		if !hasSource {
			continue
		}
		p := map[string]string{}
		for k, v := range params {
			p[k] = v
		}
		if keyFile != "" {
			p["KEY_FILE"] = keyFile
		}
		line := expandVars(source, p)
		if match.MatchString(line) {
			bin, ok := apply.LookPath(env.Root, "add-apt-repository")
			if !ok {
				errs = append(errs, fmt.Errorf("add apt source %s (%s): add-apt-repository is not available on this image", name, hideCredentials(line)))
				continue
			}
			if err := env.Sys.Run(ctx, apply.Command{Argv: []string{bin, "--no-update", line}}); err != nil {
				errs = append(errs, fmt.Errorf("add apt source %s with add-apt-repository: %w", name, err))
			}
			continue
		}
		if !strings.HasPrefix(file, "/") {
			file = path.Join(aptSourcesDir, file)
		}
		if !strings.HasSuffix(file, ".list") {
			file += ".list"
		}
		appendMode, err := ent.Bool("append", true)
		if err != nil {
			errs = append(errs, fmt.Errorf("read apt: sources: %s: %w", name, err))
			continue
		}
		if err := writeSourceLine(env.Root, file, line, appendMode); err != nil {
			errs = append(errs, fmt.Errorf("add apt source %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func writeSourceLine(root *rootfs.Root, file, line string, appendMode bool) error {
	content := line + "\n"
	if appendMode {
		old, _ := root.ReadFile(file)
		for _, l := range strings.Split(string(old), "\n") {
			if l == line {
				return nil
			}
		}
		content = string(old) + content
	}
	if _, err := root.WriteFileIfChanged(file, []byte(content), fileMode(content, false), rootfs.Owner{}); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// aptTemplateParams are the $NAMEs a source line may use.
func aptTemplateParams(env *apply.Env) map[string]string {
	release := ""
	id := ""
	if data, err := env.Root.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(l, "=")
			v = strings.Trim(v, `"'`)
			switch k {
			case "VERSION_CODENAME":
				release = v
			case "ID":
				id = v
			}
		}
	}
	mirror, security := "http://deb.debian.org/debian", "http://security.debian.org/debian-security"
	if id == "ubuntu" {
		mirror, security = "http://archive.ubuntu.com/ubuntu", "http://security.ubuntu.com/ubuntu"
	}
	return map[string]string{"RELEASE": release, "MIRROR": mirror, "PRIMARY": mirror, "SECURITY": security}
}

var varPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\w+)|\$\{(\w+)\}`) })

// expandVars is cloud-init's basic template: $NAME and ${NAME} replaced
// when NAME is known, left as they are otherwise.
func expandVars(s string, params map[string]string) string {
	return varPattern().ReplaceAllStringFunc(s, func(m string) string {
		sub := varPattern().FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := params[name]; ok {
			return v
		}
		return m
	})
}

// addAPTKey writes an entry's inline key, de-armored, to
// /etc/apt/trusted.gpg.d/<name>.gpg, or to /etc/apt/cloud-init.gpg.d for
// a source that names its key file ($KEY_FILE). It returns the path.
func addAPTKey(root *rootfs.Root, ent apply.Config, file string, hardened bool) (string, error) {
	if !ent.Has("key") {
		if ent.Has("keyid") {
			return "", errors.New("keyid needs a key server lookup, which seedinit does not do; give the key itself in key")
		}
		return "", nil
	}
	armored, _, err := ent.String("key")
	if err != nil {
		return "", err
	}
	binary, err := Dearmor(armored)
	if err != nil {
		return "", err
	}
	dir := aptTrustedDir
	if hardened {
		dir = aptHardenedDir
	}
	stem := strings.TrimSuffix(path.Base(file), path.Ext(file))
	keyFile := path.Join(dir, stem+".gpg")
	if err := root.MkdirAll(dir, 0o755, rootfs.Owner{}); err != nil {
		return "", err
	}
	if _, err := root.WriteFileIfChanged(keyFile, binary, 0o644, rootfs.Owner{}); err != nil {
		return "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	return keyFile, nil
}

// Dearmor decodes an OpenPGP ASCII-armored block (gpg --dearmor).
func Dearmor(text string) ([]byte, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "-----BEGIN PGP") {
		i++
	}
	if i == len(lines) {
		return nil, errors.New("dearmor the key: no -----BEGIN PGP line")
	}
	i++
	// Armor headers run to the first blank line, when there are any.
	for j := i; j < len(lines) && strings.TrimSpace(lines[j]) != ""; j++ {
		if !strings.Contains(lines[j], ": ") {
			break
		}
		i = j + 1
	}
	var body bytes.Buffer
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "-----END PGP") {
			out, err := base64.StdEncoding.DecodeString(body.String())
			if err != nil {
				return nil, fmt.Errorf("dearmor the key: %w", err)
			}
			if len(out) == 0 {
				return nil, errors.New("dearmor the key: empty")
			}
			return out, nil
		}
		if strings.HasPrefix(l, "=") && len(l) == 5 {
			continue // the CRC-24 checksum
		}
		body.WriteString(l)
	}
	return nil, errors.New("dearmor the key: no -----END PGP line")
}
