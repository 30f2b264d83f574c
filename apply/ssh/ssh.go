// Package ssh is cloud-init's cc_ssh: it replaces the image's SSH host keys
// with the instance's own (given in ssh_keys or generated, in Go, without
// ssh-keygen) and installs the authorized keys of the default user and root.
//
// Offline there is no datasource to publish host keys to, so
// ssh_publish_hostkeys is read and ignored; sshd is never restarted (there
// is no init system to ask), so a live sshd picks up new host keys when it
// next starts.
package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

// ModuleName is cloud-init's name for the module (cc_ssh).
const ModuleName = "ssh"

// configKeys are the cloud-config keys the module reads.
var configKeys = []string{
	"ssh_deletekeys", "ssh_keys", "ssh_genkeytypes", "ssh_quiet_keygen",
	"ssh_publish_hostkeys", "ssh_authorized_keys", "allow_public_ssh_keys",
	"disable_root", "disable_root_opts",
}

func init() {
	apply.Register(apply.Module{
		Name:      ModuleName,
		Frequency: apply.PerInstance,
		Keys:      configKeys,
		Run:       Run,
		Prestart:  prestartHostKeys,
	})
}

// Run applies cc_ssh to env's target. Each step goes on when another
// fails; the errors come back joined.
func Run(ctx context.Context, env *apply.Env) error {
	var errs []error
	cfg := env.Config

	deleteKeys, err := cfg.Bool("ssh_deletekeys", true)
	if err != nil {
		errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
	}
	if deleteKeys {
		if err := deleteHostKeys(env); err != nil {
			errs = append(errs, err)
		}
	}

	hostKeysChanged := false
	if cfg.Has("ssh_keys") {
		keys, _, err := cfg.Map("ssh_keys")
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
		case keys != nil:
			if err := writeConfiguredKeys(env, keys); err != nil {
				errs = append(errs, err)
			}
			hostKeysChanged = true
		}
	} else {
		keyTypes, err := genKeyTypes(cfg)
		if err != nil {
			errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
		}
		quiet, err := cfg.Bool("ssh_quiet_keygen", false)
		if err != nil {
			errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
		}
		written, err := generateHostKeys(ctx, env, keyTypes, keyComment(env), quiet)
		if err != nil {
			errs = append(errs, err)
		}
		hostKeysChanged = len(written) > 0
	}
	if hostKeysChanged && env.Sys != nil && env.Sys.Live() {
		env.Log.Info("host keys changed; sshd is not restarted and uses them when it next starts")
	}

	if cfg.Has("ssh_publish_hostkeys") {
		env.Log.Debug("ssh_publish_hostkeys: no datasource to publish host keys to; ignored")
	}

	if err := applyCredentials(env); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// genKeyTypes reads ssh_genkeytypes as cloud-init's get_cfg_option_list:
// absent is the default list, null is none, a scalar is a list of one.
func genKeyTypes(cfg apply.Config) ([]string, error) {
	v, ok := cfg["ssh_genkeytypes"]
	if !ok {
		return DefaultGenKeyTypes, nil
	}
	if v == nil {
		return nil, nil
	}
	if s, isString := v.(string); isString {
		return []string{s}, nil
	}
	list, _, err := cfg.StringList("ssh_genkeytypes", false)
	if err != nil {
		if s, serr := apply.AsString(v); serr == nil {
			return []string{s}, nil
		}
	}
	return list, err
}

// keyComment is the comment ssh-keygen gives a key it makes as root:
// root@ and the host's name at that moment. On a live target that is the
// kernel's hostname (set_hostname ran before us); offline it is the name
// the target will boot with.
func keyComment(env *apply.Env) string {
	return "root@" + commentHostname(env)
}

func commentHostname(env *apply.Env) string {
	if env.Sys != nil && env.Sys.Live() {
		if h, err := os.Hostname(); err == nil && h != "" {
			return h
		}
	}
	if data, err := env.Root.ReadFile("/etc/hostname"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				return line
			}
		}
	}
	if env.Seed != nil && env.Seed.LocalHostname != "" {
		return env.Seed.LocalHostname
	}
	return "localhost"
}
