package trust

import (
	"fmt"

	"github.com/seedinit/seedinit/apply/ssh/sshkey"
	"github.com/seedinit/seedinit/seed"
)

// Finding is what the check said of one part the seed has.
type Finding struct {
	Part    string
	Trusted bool
	// Detail: the key that signed it ("signed by SHA256:..."), or why it
	// is not trusted ("unsigned", "the signature does not match the
	// content", ...). Never the part's content.
	Detail string
	// Dropped: the part was taken out of the seed (Require).
	Dropped bool
}

func (f Finding) String() string {
	switch {
	case f.Trusted:
		return fmt.Sprintf("%s: %s", f.Part, f.Detail)
	case f.Dropped:
		return fmt.Sprintf("%s not applied: %s", f.Part, f.Detail)
	}
	return fmt.Sprintf("%s applied unverified: %s", f.Part, f.Detail)
}

// Check verifies each part s has against its signature under policy.
// With Require, a part not signed by one of keys is taken out of s as a
// whole, never in part: user-data, vendor-data and network-config are
// dropped; for meta-data, whose instance-id the run needs, only the
// identity stays (instance-id, datasource, platform), and the keys, the
// hostname, the datasource's own config and the rest of the tree go. A
// source that serves no meta-data document (a metadata service's tree)
// has its metadata judged as unsigned meta-data. Off checks nothing.
func Check(s *seed.Seed, keys Keys, policy Policy) []Finding {
	if policy == Off || s == nil {
		return nil
	}
	var out []Finding
	for _, name := range seed.PartNames {
		content := s.PartContent(name)
		if content == nil && !(name == "meta-data" && hasMetadata(s)) {
			continue
		}
		f := Finding{Part: name}
		sig := s.Signatures[name]
		switch {
		case content == nil:
			f.Detail = "no one meta-data document to check (a metadata service's tree, or meta-data merged from several sources)"
		case sig == nil:
			f.Detail = "unsigned"
		default:
			if k, err := keys.Verify(content, sig); err != nil {
				f.Detail = err.Error()
			} else {
				f.Trusted, f.Detail = true, "signed by "+sshkey.FingerprintSHA256(k)
			}
		}
		if !f.Trusted && policy == Require {
			drop(s, name)
			f.Dropped = true
		}
		out = append(out, f)
	}
	return out
}

// Report turns findings into what a run reports: parts left out as
// errors, parts applied unverified as warnings, each as "seed signature
// (POLICY): ...".
func Report(findings []Finding, policy Policy) (errs, warns []string) {
	for _, f := range findings {
		line := "seed signature (" + policy.String() + "): " + f.String()
		switch {
		case f.Dropped:
			errs = append(errs, line)
		case !f.Trusted:
			warns = append(warns, line)
		}
	}
	return errs, warns
}

func hasMetadata(s *seed.Seed) bool {
	return len(s.Metadata) > 0 || len(s.PublicKeys) > 0 || s.LocalHostname != "" || len(s.Config) > 0
}

func drop(s *seed.Seed, name string) {
	switch name {
	case "user-data":
		s.UserData = nil
	case "vendor-data":
		s.VendorData = nil
	case "network-config":
		s.NetworkConfig, s.NetworkFormat = nil, ""
	case "meta-data":
		s.MetaRaw = nil
		s.Metadata = map[string]any{"instance-id": s.InstanceID}
		s.LocalHostname = ""
		s.PublicKeys = nil
		s.Config = nil
		s.Keep = nil
		s.Region, s.AvailabilityZone = "", ""
	}
}
