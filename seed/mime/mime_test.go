package mime

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/seed"

	"github.com/seedinit/seedinit/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var sampleParts = []Part{
	{Filename: "config.yaml", Type: "cloud-config", Content: []byte("#cloud-config\nhostname: web01\n")},
	{Filename: "setup.sh", Type: "x-shellscript", Content: []byte("#!/bin/sh\necho héllo\n")},
	{Filename: "boot.sh", Type: "x-shellscript-per-boot", Content: []byte("#!/bin/sh\n" + string(bytes.Repeat([]byte("x"), 200)) + "\n")},
	{Filename: "empty.txt", Type: "cloud-config", Content: nil},
}

func TestMakeMIMEGolden(t *testing.T) {
	got, err := makeMIME(sampleParts, "===============0123456789012345678==")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "sample.mime")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

var boundaryRE = regexp.MustCompile(`^Content-Type: multipart/mixed; boundary="={15}[0-9]{19}=="\n`)

type extracted struct {
	Filename    string
	ContentType string
	Content     string
}

func TestMakeMIMERoundTrip(t *testing.T) {
	msg, err := MakeMIME(sampleParts)
	if err != nil {
		t.Fatal(err)
	}
	if !boundaryRE.Match(msg) {
		t.Errorf("boundary not in Python's form:\n%s", msg[:120])
	}
	proc, err := seed.ProcessUserData(context.Background(), msg, seed.Options{})
	if err != nil {
		t.Fatalf("ProcessUserData: %v", err)
	}
	var got []extracted
	for _, p := range proc.Parts {
		got = append(got, extracted{p.Filename, p.ContentType, string(p.Content)})
	}
	var want []extracted
	for _, p := range sampleParts {
		want = append(want, extracted{p.Filename, "text/" + p.Type, string(p.Content)})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parts after ProcessUserData (-made +read):\n%s", diff)
	}
}

// cloudInitExtract runs cloud-init's own user-data processor over the
// message and lists the parts it hands to its handlers.
const cloudInitExtract = `
import sys, json
from cloudinit import helpers
from cloudinit.user_data import UserDataProcessor
msg = UserDataProcessor(helpers.Paths({})).process(sys.stdin.buffer.read())
out = []
for part in msg.walk():
    if part.get_content_maintype() == "multipart":
        continue
    out.append({"Filename": part.get_filename(), "ContentType": part.get_content_type(),
                "Content": part.get_payload(decode=True).decode()})
print(json.dumps(out))
`

func TestMakeMIMEAgainstCloudInit(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 is not installed")
	}
	if err := exec.Command(py, "-c", "import cloudinit.user_data").Run(); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/python3 cannot import cloudinit (install Debian's cloud-init)")
	}
	msg, err := MakeMIME(sampleParts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", cloudInitExtract)
	cmd.Stdin = bytes.NewReader(msg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init's UserDataProcessor: %v\n%s", err, stderr.String())
	}
	var theirs []extracted
	if err := json.Unmarshal(out, &theirs); err != nil {
		t.Fatal(err)
	}
	proc, err := seed.ProcessUserData(context.Background(), msg, seed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ours []extracted
	for _, p := range proc.Parts {
		ours = append(ours, extracted{p.Filename, p.ContentType, string(p.Content)})
	}
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("parts (-cloud-init +seedinit):\n%s", diff)
	}
}

// TestMakeMIMEMatchesCloudInitBytes compares our message with
// `cloud-init devel make-mime` once the random boundary is fixed.
func TestMakeMIMEMatchesCloudInitBytes(t *testing.T) {
	if _, err := os.Stat("/usr/bin/cloud-init"); err != nil {
		testenv.Skip(t, "cloud-init oracle: /usr/bin/cloud-init is not installed")
	}
	dir := t.TempDir()
	args := []string{"devel", "make-mime"}
	for _, p := range sampleParts {
		if err := os.WriteFile(filepath.Join(dir, p.Filename), p.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-a", p.Filename+":"+p.Type)
	}
	cmd := exec.Command("/usr/bin/cloud-init", args...)
	cmd.Dir = dir
	theirs, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init devel make-mime: %v", err)
	}
	m := regexp.MustCompile(`boundary="(={15}[0-9]{19}==)"`).FindSubmatch(theirs)
	if m == nil {
		t.Fatalf("no boundary in cloud-init's output")
	}
	ours, err := makeMIME(sampleParts, string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	// make-mime prints the message with print(), which adds a newline.
	if diff := cmp.Diff(string(theirs), string(ours)+"\n"); diff != "" {
		t.Errorf("(-cloud-init +seedinit):\n%s", diff)
	}
}

func TestUnknownTypesAndParse(t *testing.T) {
	got := UnknownTypes([]Part{{Type: "cloud-config"}, {Type: "Bogus"}})
	want := []string{"content type 'text/bogus' for attachment 2 may be incorrect!"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	tests := []struct {
		arg, file, typ string
		wantErr        bool
	}{
		{"a.yaml:cloud-config", "a.yaml", "cloud-config", false},
		{"a.yaml: x-shellscript ", "a.yaml", "x-shellscript", false},
		{"a:b:c", "a", "b:c", false},
		{"noType", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			f, typ, err := ParseAttach(tc.arg)
			if (err != nil) != tc.wantErr || f != tc.file || typ != tc.typ {
				t.Errorf("ParseAttach(%q) = %q, %q, %v", tc.arg, f, typ, err)
			}
		})
	}
	if _, err := MakeMIME([]Part{{Filename: "bin", Type: "cloud-config", Content: []byte{0xff}}}); err == nil {
		t.Error("MakeMIME accepted content that is not UTF-8")
	}
	if len(ListTypes()) != 12 || ListTypes()[0] != "cloud-boothook" {
		t.Errorf("ListTypes = %v", ListTypes())
	}
}

func FuzzMakeMIME(f *testing.F) {
	f.Add("a.yaml", "cloud-config", []byte("#cloud-config\n"))
	f.Add("s", "x-shellscript", []byte("#!/bin/sh\n"))
	f.Fuzz(func(t *testing.T, name, typ string, content []byte) {
		parts := []Part{{Filename: name, Type: typ, Content: content}}
		msg, err := MakeMIME(parts)
		if err != nil {
			return
		}
		if _, err := seed.ProcessUserData(context.Background(), msg, seed.Options{}); err != nil {
			t.Fatalf("ProcessUserData rejected our message: %v", err)
		}
	})
}
