package ds

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParseIMDSListing(f *testing.F) {
	for _, s := range []string{
		"ami-id\nhostname\nnetwork/\npublic-keys/\n",
		"0=appliance-admin\n1=backup",
		"security-credentials/\niam/\n",
		"../\n./x\n//\nfoo?bar\n=\n0=\n-1=neg\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, listing []byte) {
		leaves, children := parseIMDSListing(listing)
		for _, c := range children {
			if escapesDir(c) || c == "security-credentials" {
				t.Errorf("unsafe child %q", c)
			}
		}
		for _, l := range leaves {
			if escapesDir(l.resource) {
				t.Errorf("unsafe leaf %+v", l)
			}
		}
	})
}

func FuzzDecodeIMDSLeaf(f *testing.F) {
	for _, s := range []string{"i-0123", "a\nb\n", `{"Code": "Success"}`, "{not json}", "\xff\xfe", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		v := decodeIMDSLeaf(blob)
		if _, err := json.Marshal(v); err != nil && json.Valid(blob) {
			t.Errorf("decoded value of valid input does not re-encode: %v", err)
		}
		_ = publicKeysFromMetadata(v)
	})
}

func FuzzEC2SeedFromMetadata(f *testing.F) {
	f.Add([]byte(`{"instance-id":"i-1","placement":{"availability-zone":"us-east-1a"},"public-keys":{"k":"ssh-rsa AAA"},"network":{"interfaces":{"macs":{}}}}`),
		[]byte(`{"instanceId":"i-2","region":"eu-west-1"}`))
	f.Add([]byte(`{}`), []byte(`not json`))
	f.Fuzz(func(t *testing.T, metadata, identity []byte) {
		var md map[string]any
		if json.Unmarshal(metadata, &md) != nil {
			return
		}
		id, _ := parseIdentityDocument(identity)
		s, err := ec2SeedFromMetadata(md, id, ec2Style{datasource: "Ec2", identityDocument: true})
		if err == nil && s.InstanceID == "" {
			t.Error("a seed without an instance-id")
		}
	})
}

// escapesDir reports whether a relative path is empty, absolute, or has a
// segment that climbs or repeats a slash.
func escapesDir(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
