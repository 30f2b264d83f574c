package trust

import (
	"fmt"

	"github.com/seedinit/seedinit/apply/ssh/sshkey"
	"github.com/seedinit/seedinit/seed"
)

// Parts are the seed parts that carry signatures, in the order they are
// reported.
var Parts = []string{"meta-data", "user-data", "vendor-data", "network-config"}

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

// PartContent is the content of one part of s as it will be applied
// (the meta-data document as served), nil when s has none.
func PartContent(s *seed.Seed, name string) []byte {
	switch name {
	case "meta-data":
		return s.MetaRaw
	case "user-data":
		return s.UserData
	case "vendor-data":
		return s.VendorData
	case "network-config":
		return s.NetworkConfig
	}
	return nil
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
	for _, name := range Parts {
		content := PartContent(s, name)
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
