package seed

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"github.com/seedinit/seedinit/internal/testenv"
)

// TestA2BBase64MatchesCPython compares a2bBase64 with binascii.a2b_base64
// (not strict), which email's base64 parts go through in cloud-init, on
// inputs made of the characters where the two could part: padding in
// every place, data after padding, line breaks and bytes outside the
// alphabet.
func TestA2BBase64MatchesCPython(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Skipf(t, "CPython oracle unavailable: %s not found", python)
	}
	rng := rand.New(rand.NewPCG(29, 31))
	alphabet := []byte("QUJDRA==\n*")
	var inputs [][]byte
	for _, s := range []string{"QQ=Q==", "QUI=QUI=", "QQ==QUJD", "Q=Q=Q=", "QUJ=D", "=QUJD", "QU=J=D=="} {
		inputs = append(inputs, []byte(s))
	}
	for range 3000 {
		in := make([]byte, rng.IntN(12))
		for i := range in {
			in[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, in)
	}
	encoded := make([]string, len(inputs))
	for i, in := range inputs {
		encoded[i] = base64.StdEncoding.EncodeToString(in)
	}
	req, _ := json.Marshal(encoded)
	cmd := exec.Command(python, "-c", `
import base64, binascii, json, sys
out = []
for s in json.load(sys.stdin):
    try:
        out.append(base64.b64encode(binascii.a2b_base64(base64.b64decode(s))).decode())
    except binascii.Error:
        out.append(None)
json.dump(out, sys.stdout)
`)
	cmd.Stdin = bytes.NewReader(req)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run CPython: %v", err)
	}
	var want []*string
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(inputs) {
		t.Fatalf("CPython's answer: %v (%d answers for %d inputs)", err, len(want), len(inputs))
	}
	failed := 0
	for i, in := range inputs {
		got, err := a2bBase64(in)
		var gotS *string
		if err == nil {
			s := base64.StdEncoding.EncodeToString(got)
			gotS = &s
		}
		if (gotS == nil) != (want[i] == nil) || (gotS != nil && *gotS != *want[i]) {
			if failed++; failed <= 10 {
				t.Errorf("a2bBase64(%q) = %s, CPython %s", in, show(gotS), show(want[i]))
			}
		}
	}
	if failed > 10 {
		t.Errorf("... %d inputs differ in all", failed)
	}
}

func show(s *string) string {
	if s == nil {
		return "error"
	}
	b, _ := base64.StdEncoding.DecodeString(*s)
	return string(bytes.ToValidUTF8([]byte(`"`+string(b)+`"`), []byte("?")))
}
