package ssh

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/users"
)

// DisableRootOptions is cloud-init's default disable_root_opts: root's keys
// stay in place but a login with them only prints which user to use and
// exits with status 142. $USER and $DISABLE_USER are substituted with the
// default user (or NONE) and "root".
const DisableRootOptions = `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,` +
	`command="echo 'Please login as the user \"$USER\" rather than the user \"$DISABLE_USER\".';echo;sleep 10;exit 142"`

// rootKeyOptions is the options prefix root's authorized keys get: the
// disable_root_opts template filled in, or none when root login is allowed.
func rootKeyOptions(disableRoot bool, template, defaultUser string) string {
	if !disableRoot {
		return ""
	}
	if defaultUser == "" {
		defaultUser = "NONE"
	}
	opts := strings.ReplaceAll(template, "$USER", defaultUser)
	return strings.ReplaceAll(opts, "$DISABLE_USER", "root")
}

// authorizedKeys gathers the keys cc_ssh installs: the datasource's public
// keys (unless allow_public_ssh_keys is false), then ssh_authorized_keys.
// Duplicates are dropped, first one kept (cloud-init makes a set of them,
// in no defined order).
func authorizedKeys(env *apply.Env) ([]string, error) {
	var errs []error
	var keys []string
	allowPublic, err := env.Config.Bool("allow_public_ssh_keys", true)
	if err != nil {
		errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
	}
	if allowPublic && env.Seed != nil {
		keys = append(keys, env.Seed.PublicKeys...)
	} else if !allowPublic {
		env.Log.Debug("not installing the datasource's public keys: allow_public_ssh_keys is false")
	}
	cfgKeys, _, err := env.Config.StringList("ssh_authorized_keys", false)
	if err != nil {
		errs = append(errs, fmt.Errorf("read ssh settings: %w", err))
	}
	keys = append(keys, cfgKeys...)
	seen := map[string]bool{}
	unique := keys[:0:0]
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		unique = append(unique, k)
	}
	return unique, errors.Join(errs...)
}

// applyCredentials installs keys for the default user and for root, as
// cc_ssh's apply_credentials: the default user gets them as they are; root
// always gets them too, behind the disable_root_opts prefix unless
// disable_root is false.
func applyCredentials(env *apply.Env) error {
	var errs []error
	user, err := DefaultUser(env.Config)
	if err != nil {
		// cloud-init gives up on credentials when the default user cannot
		// be worked out; so do we, rather than guess whose keys these are.
		return fmt.Errorf("apply ssh credentials: %w", err)
	}
	disableRoot, err := env.Config.Bool("disable_root", true)
	if err != nil {
		errs = append(errs, fmt.Errorf("apply ssh credentials: %w", err))
	}
	template := DisableRootOptions
	if s, ok, err := env.Config.String("disable_root_opts"); err != nil {
		errs = append(errs, fmt.Errorf("apply ssh credentials: %w", err))
	} else if ok {
		template = s
	}
	keys, err := authorizedKeys(env)
	if err != nil {
		errs = append(errs, fmt.Errorf("apply ssh credentials: %w", err))
	}
	if user != "" {
		if err := setupUserKeys(env, user, keys, ""); err != nil {
			errs = append(errs, fmt.Errorf("install authorized keys for %s: %w", user, err))
		}
	}
	if err := setupUserKeys(env, "root", keys, rootKeyOptions(disableRoot, template, user)); err != nil {
		errs = append(errs, fmt.Errorf("install authorized keys for root: %w", err))
	}
	return errors.Join(errs...)
}

// DefaultUser names the default user the users module creates (see
// users.DefaultUserName); "" means none.
func DefaultUser(cfg apply.Config) (string, error) {
	return users.DefaultUserName(cfg)
}
