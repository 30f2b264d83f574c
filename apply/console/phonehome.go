package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/seed"
)

// PhoneHomeAllKeys is what post: all sends, in cloud-init's order.
var PhoneHomeAllKeys = []string{
	"pub_key_dsa", "pub_key_rsa", "pub_key_ecdsa", "pub_key_ed25519",
	"instance_id", "hostname", "fqdn",
}

var phoneHomeKeyFiles = map[string]string{
	"pub_key_dsa":     "/etc/ssh/ssh_host_dsa_key.pub",
	"pub_key_rsa":     "/etc/ssh/ssh_host_rsa_key.pub",
	"pub_key_ecdsa":   "/etc/ssh/ssh_host_ecdsa_key.pub",
	"pub_key_ed25519": "/etc/ssh/ssh_host_ed25519_key.pub",
}

// phoneHomeTimeout bounds each try.
const phoneHomeTimeout = 30 * time.Second

// phoneHomeRetryWait is the pause between tries (cloud-init's 3 seconds).
var phoneHomeRetryWait = 3 * time.Second

const defaultPhoneHomeTries = 10

func runPhoneHome(ctx context.Context, env *apply.Env) error {
	if !env.Config.Has("phone_home") {
		return apply.Skip("no phone_home in the config")
	}
	cfg, _, err := env.Config.Map("phone_home")
	if err != nil {
		return fmt.Errorf("read phone_home: %w", err)
	}
	rawURL, ok, err := cfg.String("url")
	if err != nil {
		return fmt.Errorf("read phone_home: %w", err)
	}
	if !ok {
		env.Warn("phone_home has no url; nothing posted")
		return apply.Skip("no url in phone_home")
	}
	tries := defaultPhoneHomeTries
	if n, ok, err := cfg.Int("tries"); err != nil || !ok {
		if ok {
			env.Warn("phone_home: tries is not an integer, using %d", tries)
		}
	} else {
		tries = int(n)
	}
	post := PhoneHomeAllKeys
	if v, ok := cfg["post"]; ok && v != "all" {
		if post, err = apply.AsStringList(v, false); err != nil {
			return fmt.Errorf("read phone_home: post: %w", err)
		}
	}
	form := PhoneHomeForm(env, post)
	instanceID := ""
	if env.Seed != nil {
		instanceID = env.Seed.InstanceID
	}
	target := strings.NewReplacer("${INSTANCE_ID}", instanceID, "$INSTANCE_ID", instanceID).Replace(rawURL)
	if err := postForm(ctx, target, form, tries); err != nil {
		// cloud-init logs the failure and lets the boot go on.
		env.Warn("phone_home: %v", err)
	}
	return nil
}

// PhoneHomeForm is the form phone_home posts: each requested key, "N/A"
// for one that cannot be had, in the order requested. Keys named twice
// are sent once, where first named.
func PhoneHomeForm(env *apply.Env, post []string) []formField {
	values := map[string]string{}
	if env.Seed != nil {
		values["instance_id"] = env.Seed.InstanceID
		host := env.Seed.LocalHostname
		short, _, _ := strings.Cut(host, ".")
		values["hostname"], values["fqdn"] = short, host
	}
	for k, p := range phoneHomeKeyFiles {
		if data, err := env.Root.ReadFile(p); err == nil {
			values[k] = string(data)
		} else {
			env.Log.Debug("phone_home: host key missing", "file", p)
		}
	}
	var form []formField
	seen := map[string]bool{}
	for _, k := range post {
		if seen[k] {
			continue
		}
		seen[k] = true
		v, ok := values[k]
		if !ok {
			env.Warn("phone_home: requested key %s is not available", k)
			v = "N/A"
		}
		form = append(form, formField{k, v})
	}
	return form
}

type formField struct{ Key, Value string }

func encodeForm(form []formField) string {
	var parts []string
	for _, f := range form {
		parts = append(parts, url.QueryEscape(f.Key)+"="+url.QueryEscape(f.Value))
	}
	return strings.Join(parts, "&")
}

func postForm(ctx context.Context, target string, form []formField, tries int) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("post to %q: not an http or https URL", seed.RedactURL(target))
	}
	body := encodeForm(form)
	var errs []error
	for try := 1; try <= max(tries, 1); try++ {
		err := postOnce(ctx, u.String(), body)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("try %d: %s", try, seed.RedactError(err, u.String())))
		if try < tries {
			select {
			case <-ctx.Done():
				return errors.Join(append(errs, ctx.Err())...)
			case <-time.After(phoneHomeRetryWait):
			}
		}
	}
	return fmt.Errorf("post to %s failed in %d tries: %w", seed.RedactURL(u.String()), max(tries, 1), errors.Join(errs...))
}

func postOnce(ctx context.Context, target, body string) error {
	_, err := seed.Web(ctx, seed.WebRequest{
		Method:  http.MethodPost,
		URL:     target,
		Header:  map[string]string{"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "seedinit/" + apply.Version},
		Body:    []byte(body),
		Timeout: phoneHomeTimeout,
		MaxSize: 512,
	})
	var status *seed.WebStatusError
	switch {
	case errors.As(err, &status):
		return fmt.Errorf("HTTP %d: %s", status.Code, status.Snippet)
	case errors.Is(err, seed.ErrTooLarge):
		return nil // accepted; what the server says back is not used
	}
	return err
}
