package seed

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addUserDataSeeds seeds a fuzz target with the testdata user-data and a
// few fragments that reach the odd corners of the MIME reader.
func addUserDataSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/userdata/*.userdata")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"",
		"#cloud-config\na: 1\n",
		"#include http://127.0.0.1:9/\n",
		"#cloud-config-archive\n- '#!/bin/sh'\n- {type: a/b/c, content: x, filename: ~, launch-index: 1.5}\n",
		"## template: jinja\n#cloud-config\n{{ v1.x }}\n",
		"MIME-Version: 1.0\nContent-Type: message/rfc822\n\nContent-Type: message/rfc822\n\n#!/bin/sh\n",
		"MIME-Version: 1.0\nContent-Type: message/delivery-status\n\nA: 1\n\nB: 2\n",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"a;b\"\n\n--a;b\n--a;b--\n",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary*0*=us-ascii''%41; boundary*1=B\n\n--AB\n\n#!/bin/sh\n--AB--\n",
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n#!/bin/sh=\r\n=41=\r\n--B--",
		"From x\nFrom y\nMIME-Version: 1.0\n:bad\n continued\nFrom z\n\nbody",
	} {
		f.Add([]byte(s))
	}
	// Hostile shapes, small enough for the fuzzer to mutate.
	var parts, keys strings.Builder
	parts.WriteString("Content-Type: multipart/mixed; boundary=B\nMIME-Version: 1.0\n\n")
	keys.WriteString("#cloud-config\n")
	for i := range 200 {
		fmt.Fprintf(&parts, "--B\nContent-Type: text/cloud-config\n\n#cloud-config\nmerge_how: dict(recurse_array)+list(append)\nruncmd: [%d]\n", i)
		fmt.Fprintf(&keys, "k%d: [%d, x]\n", i, i)
	}
	parts.WriteString("--B--\n")
	f.Add([]byte(parts.String()))
	f.Add([]byte(keys.String()))
	f.Add([]byte("#cloud-config\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"))
	f.Add([]byte("## template: jinja\n#cloud-config\n{% set l = [1] %}" + strings.Repeat("{% set l = l + l %}", 40) + "\nn: {{ l|length }}\n"))
	f.Add([]byte("#cloud-config-archive\n" + strings.Repeat("- {type: text/cloud-config, content: 'a: 1'}\n", 50)))
	f.Add([]byte("#cloud-config-jsonp\n[" + strings.Repeat(`{"op":"copy","from":"/a","path":"/a/-"},`, 30) + `{"op":"test","path":"/a","value":1}]`))
}

// FuzzProcessUserData feeds arbitrary user-data through the whole decoder
// with fetching disabled. It must never panic, and every part it returns
// must be complete.
func FuzzProcessUserData(f *testing.F) {
	addUserDataSeeds(f)
	vars := map[string]any{"v1": map[string]any{"local_hostname": "h"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		index := len(raw) % 3
		got, err := ProcessUserData(context.Background(), raw, Options{
			MaxSize:      1 << 20,
			Fetch:        noFetch,
			TemplateVars: vars,
			LaunchIndex:  &index,
			IncludeOnce:  &MemoryIncludeCache{},
		})
		if err != nil {
			return
		}
		if len(got.Parts) > maxParts {
			t.Errorf("%d parts, over the limit of %d", len(got.Parts), maxParts)
		}
		for i, p := range got.Parts {
			if p.Kind == "" || p.Filename == "" || p.Source == "" || !strings.Contains(p.ContentType, "/") {
				t.Errorf("part %d is incomplete: %+v", i, p)
			}
		}
	})
}

// FuzzSplitMIME feeds arbitrary text to the MIME reader: it must never
// panic, every content type it reports is type/subtype, and no decoded
// payload is larger than the input.
func FuzzSplitMIME(f *testing.F) {
	addUserDataSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, _ := parseMIME(raw)
		total := 0
		msg.walk(func(p *mimePart) {
			if ct := p.contentType(); strings.Count(ct, "/") != 1 {
				t.Errorf("content type %q is not type/subtype", ct)
			}
			_ = p.filename()
			payload := p.payload()
			if len(payload) > len(raw) {
				t.Errorf("payload of %d bytes from %d bytes of input", len(payload), len(raw))
			}
			total += len(p.body)
		})
		if total > len(raw) {
			t.Errorf("bodies total %d bytes from %d bytes of input", total, len(raw))
		}
	})
}

// FuzzDecodeBase64 checks the lenient decoder against the standard
// library wherever the input is canonical base64.
func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"", "QUJD", "QUI=", "QQ==", "Q", "QUJD\nREVG", "!!QUJD", "QUJD====", "QQ==QQ=="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := DecodeBase64(in)
		want, stdErr := base64.StdEncoding.DecodeString(string(in))
		if stdErr == nil && (err != nil || string(got) != string(want)) {
			t.Errorf("DecodeBase64(%q) = %q, %v; standard library: %q", in, got, err, want)
		}
	})
}
