package files

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

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
		// Decoding may fail but never panic; a bomb is read only so far.
		io.Copy(io.Discard, io.LimitReader(e.ContentReader(), 1<<20))
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

// FuzzBase64Reader checks the streaming decoder against decoding in one
// go (referenceBase64, the decoder as it was before it streamed), whatever
// the sizes of the reads on either side.
func FuzzBase64Reader(f *testing.F) {
	for _, s := range []string{"YQ==", "YWJj", "YQ", "Y Q==", "!!", "YWJjZA==x", "", "YQ=", "Y=Q=", "YWJj===", "Y"} {
		f.Add([]byte(s), uint8(1), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, srcChunk, dstChunk uint8) {
		want, wantErr := referenceBase64(in)
		var src io.Reader = bytes.NewReader(in)
		if srcChunk%2 == 1 {
			src = iotest.OneByteReader(src)
		} else {
			src = iotest.HalfReader(src)
		}
		r := newBase64Reader(src)
		var got []byte
		buf := make([]byte, 1+int(dstChunk)%7)
		var err error
		for {
			var n int
			n, err = r.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if err == io.EOF {
			err = nil
		}
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || (wantErr == nil && !bytes.Equal(got, want)) {
			t.Errorf("streaming %q = %q, %v; in one go: %q, %v", in, got, err, want, wantErr)
		}
	})
}

// referenceBase64 is the one-shot decoder the streaming one replaced.
func referenceBase64(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in)*3/4)
	var quad, pads int
	var left byte
	data := 0
	for _, c := range in {
		if c == '=' {
			if quad >= 2 {
				pads++
				if quad+pads >= 4 {
					return out, nil
				}
			}
			continue
		}
		v := b64value(c)
		if v < 0 {
			continue
		}
		data++
		pads = 0
		b := byte(v)
		switch quad {
		case 0:
			left = b
		case 1:
			out = append(out, left<<2|b>>4)
			left = b & 0x0f
		case 2:
			out = append(out, left<<4|b>>2)
			left = b & 0x03
		case 3:
			out = append(out, left<<6|b)
			left = 0
		}
		quad = (quad + 1) % 4
	}
	switch quad {
	case 0:
		return out, nil
	case 1:
		return nil, fmt.Errorf("number of data characters (%d) cannot be 1 more than a multiple of 4", data)
	}
	return nil, errors.New("incorrect padding")
}
