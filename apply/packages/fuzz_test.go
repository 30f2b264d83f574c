package packages

import (
	"strings"
	"testing"
	"time"

	"github.com/seedinit/seedinit/apply"
)

func FuzzDearmor(f *testing.F) {
	f.Add(testKeyArmored)
	f.Add("-----BEGIN PGP X-----\n\n-----END PGP X-----\n")
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = Dearmor(text)
	})
}

func FuzzFormatYumRepo(f *testing.F) {
	f.Add("baseurl", "http://x\ny", "Name-X", "v")
	f.Add("baseurl", "http://x", "a\n[evil]\nb", "v")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		text, err := FormatYumRepo("id", apply.Config{k1: v1, k2: []any{v2, true}}, time.Unix(0, 0))
		if err != nil {
			return
		}
		// Whatever the keys and values, the file has the one section.
		headers := 0
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "[") {
				headers++
			}
		}
		if headers != 1 {
			t.Errorf("%d section headers in:\n%s", headers, text)
		}
	})
}

func FuzzExpandVars(f *testing.F) {
	f.Add("deb $MIRROR ${RELEASE} main $UNKNOWN")
	f.Fuzz(func(t *testing.T, s string) {
		_ = expandVars(s, map[string]string{"MIRROR": "m", "RELEASE": "r"})
	})
}
