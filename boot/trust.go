package boot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

// Seed signatures: the trusted keys and the policy baked into the
// system PID 1 runs from (the initramfs, or the root when seedinit is its
// /sbin/init), by `seedinit initramfs build --trust-key --trust-policy`.
const (
	TrustedKeysPath = "/etc/seedinit/trusted-seed-keys"
	TrustPolicyPath = "/etc/seedinit/trust-policy"
)

// trustPolicy is the stricter of the baked policy and seedinit.trust=:
// the command line can ask for more checking, never for less than the
// image was built with. A value that does not parse counts as require.
func (p *PID1) trustPolicy() trust.Policy {
	policy := trust.Off
	if b, err := os.ReadFile(TrustPolicyPath); err == nil {
		baked, err := trust.ParsePolicy(string(b))
		if err != nil {
			p.Log.Error("seed signatures", "file", TrustPolicyPath, "error", err.Error(), "taken as", "require")
			baked = trust.Require
		}
		policy = max(policy, baked)
	}
	if p.Opts.Trust != "" {
		cmdline, err := trust.ParsePolicy(p.Opts.Trust)
		if err != nil {
			p.Log.Error("seed signatures", "option", "seedinit.trust", "error", err.Error(), "taken as", "require")
			cmdline = trust.Require
		}
		policy = max(policy, cmdline)
	}
	return policy
}

// checkSeedTrust checks the seed's signatures under the policy, takes out
// what Require refuses, logs each part's verdict (never its content) and
// returns what the stages report: refused parts as errors, parts applied
// unverified as warnings.
func (p *PID1) checkSeedTrust(sd *seed.Seed) (errs, warns []string) {
	policy := p.trustPolicy()
	if policy == trust.Off {
		return nil, nil
	}
	var keys trust.Keys
	b, err := os.ReadFile(TrustedKeysPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("no trusted keys (%s): no part can be trusted", TrustedKeysPath)
	case err == nil:
		keys, err = trust.ParseKeys(b, TrustedKeysPath)
	}
	if err != nil {
		p.Log.Error("seed signatures", "error", err.Error())
		if policy == trust.Require {
			errs = append(errs, "seed signatures: "+err.Error())
		} else {
			warns = append(warns, "seed signatures: "+err.Error())
		}
	}
	findings := trust.Check(sd, keys, policy)
	for _, f := range findings {
		switch {
		case f.Trusted:
			p.Log.Info("seed part trusted", "part", f.Part, "detail", f.Detail)
		case f.Dropped:
			p.Log.Error("seed part not applied", "part", f.Part, "policy", policy.String(), "why", f.Detail)
		default:
			p.Log.Warn("seed part applied unverified", "part", f.Part, "policy", policy.String(), "why", f.Detail)
		}
	}
	fErrs, fWarns := trust.Report(findings, policy)
	return append(errs, fErrs...), append(warns, fWarns...)
}
