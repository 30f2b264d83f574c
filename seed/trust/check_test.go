package trust

import (
	"strings"
	"testing"

	"github.com/seedinit/seedinit/seed"
)

func signedSeed(t *testing.T) (*seed.Seed, Keys) {
	t.Helper()
	priv, keys := newKey(t)
	s := &seed.Seed{
		Datasource: "NoCloud", InstanceID: "i-1", LocalHostname: "waf-01",
		PublicKeys:    []string{"ssh-ed25519 AAAA admin"},
		Metadata:      map[string]any{"instance-id": "i-1", "local-hostname": "waf-01"},
		MetaRaw:       []byte("instance-id: i-1\nlocal-hostname: waf-01\n"),
		UserData:      []byte("#cloud-config\nusers: [{name: admin}]\n"),
		NetworkConfig: []byte("version: 2\n"), NetworkFormat: "v2",
		Signatures: map[string][]byte{},
	}
	for _, name := range []string{"meta-data", "user-data", "network-config"} {
		sig, err := Sign(priv, s.PartContent(name))
		if err != nil {
			t.Fatal(err)
		}
		s.Signatures[name] = sig
	}
	return s, keys
}

func TestCheckAllSigned(t *testing.T) {
	s, keys := signedSeed(t)
	for _, f := range Check(s, keys, Require) {
		if !f.Trusted || f.Dropped || !strings.HasPrefix(f.Detail, "signed by SHA256:") {
			t.Errorf("%+v", f)
		}
	}
	if s.UserData == nil || s.LocalHostname != "waf-01" || len(s.PublicKeys) != 1 {
		t.Errorf("a signed seed lost parts: %+v", s)
	}
}

// A tampered user-data is taken out whole under Require; the signed parts
// stay. Under Warn, everything stays and the finding says why.
func TestCheckTamperedUserData(t *testing.T) {
	for _, policy := range []Policy{Require, Warn} {
		s, keys := signedSeed(t)
		s.UserData = append(s.UserData, "runcmd: [evil]\n"...)
		var userData Finding
		for _, f := range Check(s, keys, policy) {
			if f.Part == "user-data" {
				userData = f
			} else if !f.Trusted {
				t.Errorf("%v: %+v", policy, f)
			}
		}
		if userData.Trusted || userData.Detail != "the signature does not match the content" || userData.Dropped != (policy == Require) {
			t.Errorf("%v: user-data %+v", policy, userData)
		}
		if (s.UserData == nil) != (policy == Require) || s.NetworkConfig == nil {
			t.Errorf("%v: user-data %q, network-config %q", policy, s.UserData, s.NetworkConfig)
		}
	}
}

// Unsigned meta-data under Require leaves the identity only.
func TestCheckUnsignedMetaData(t *testing.T) {
	s, keys := signedSeed(t)
	delete(s.Signatures, "meta-data")
	s.Config = map[string]any{"password": "x"}
	findings := Check(s, keys, Require)
	if findings[0].Part != "meta-data" || findings[0].Detail != "unsigned" || !findings[0].Dropped {
		t.Errorf("meta-data: %+v", findings[0])
	}
	if s.InstanceID != "i-1" || s.LocalHostname != "" || s.PublicKeys != nil || s.Config != nil || len(s.Metadata) != 1 {
		t.Errorf("seed after: %+v", s)
	}
	if s.UserData == nil {
		t.Error("the signed user-data was dropped")
	}
}

// A metadata service's tree has no document to sign: it is judged as
// unsigned meta-data.
func TestCheckMetadataServiceTree(t *testing.T) {
	s := &seed.Seed{Datasource: "Ec2", InstanceID: "i-2", PublicKeys: []string{"ssh-ed25519 AAAA x"}, Metadata: map[string]any{"instance-id": "i-2"}}
	_, keys := newKey(t)
	f := Check(s, keys, Require)
	if len(f) != 1 || f[0].Part != "meta-data" || !f[0].Dropped || s.PublicKeys != nil {
		t.Errorf("findings %+v, keys %v", f, s.PublicKeys)
	}
	if Check(s, keys, Off) != nil {
		t.Error("Off checked something")
	}
}

func TestReport(t *testing.T) {
	errs, warns := Report([]Finding{
		{Part: "meta-data", Trusted: true, Detail: "signed by SHA256:x"},
		{Part: "user-data", Detail: "unsigned", Dropped: true},
		{Part: "vendor-data", Detail: "unsigned"},
	}, Require)
	if len(errs) != 1 || errs[0] != "seed signature (require): user-data not applied: unsigned" ||
		len(warns) != 1 || warns[0] != "seed signature (require): vendor-data applied unverified: unsigned" {
		t.Errorf("errors %q, warnings %q", errs, warns)
	}
}
