package certs

import "testing"

func FuzzSubjectHash(f *testing.F) {
	f.Add([]byte{0x30, 0x00})
	f.Add(rawName(f, []atv{{oidCN, tagBMP, []byte{0, 'A', 0}}}))
	f.Add(rawName(f, []atv{{oidCN, tagUTF8, []byte("  A  b ")}, {oidO, tagUniversal, []byte{0, 0, 0, 'x'}}}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = SubjectHash(raw)
	})
}

func FuzzSelectInConfig(f *testing.F) {
	f.Add("a\nb\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, conf string) {
		once := selectInConfig(conf, "x.crt")
		if twice := selectInConfig(once, "x.crt"); twice != once {
			t.Errorf("not idempotent: %q then %q", once, twice)
		}
	})
}
