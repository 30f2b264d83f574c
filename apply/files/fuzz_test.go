package files

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// FuzzDecodeEntry feeds write_files items, as YAML, to the decoder: it must
// never panic, and what it accepts must be an absolute, clean path with a
// mode that chmod can take.
func FuzzDecodeEntry(f *testing.F) {
	for _, s := range []string{
		"path: /etc/motd\ncontent: hi\n",
		"{path: /a, encoding: b64, content: aGk=, permissions: '0755', owner: 'u:g'}",
		"{path: /a, encoding: gz+b64, content: H4sIAAAAAAAA/8vIBAD4GrEDAgAAAA==}",
		"{path: /a, encoding: gzip, content: !!binary H4sIAAAAAAAA/8vIBAD4GrEDAgAAAA==}",
		"{path: ../../x, permissions: 0644, append: yes, defer: on}",
		"{path: /a, permissions: 1e9}",
		"{path: /a, permissions: -1}",
		"{path: /a, source: {uri: 'http://127.0.0.1/x', headers: {A: b}}}",
		"{path: /a, owner: ':'}",
		"[1, 2]",
		"{content: x}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := yaml11.Load(doc)
		if err != nil {
			return
		}
		e, err := DecodeEntry(0, v)
		if err != nil {
			return
		}
		if e.Path == "" || e.Path[0] != '/' || bytes.Contains([]byte(e.Path), []byte("/../")) {
			t.Errorf("DecodeEntry accepted path %q", e.Path)
		}
		if e.Mode&^(0o777|modeSpecial) != 0 {
			t.Errorf("DecodeEntry gave mode %v with bits chmod cannot set", e.Mode)
		}
	})
}

// FuzzDecodeBase64 checks the Python-compatible decoder against the
// standard library on the inputs both must agree on.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"YQ==", "YWJj", "YQ", "Y Q==", "!!", "YWJjZA==x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := decodeBase64(in)
		want, stdErr := base64.StdEncoding.DecodeString(string(in))
		if stdErr == nil && (err != nil || !bytes.Equal(got, want)) {
			t.Errorf("decodeBase64(%q) = %q, %v; the standard decoder gives %q", in, got, err, want)
		}
	})
}
