package packages

import (
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
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		_, _ = FormatYumRepo("id", apply.Config{k1: v1, k2: []any{v2, true}}, time.Unix(0, 0))
	})
}

func FuzzExpandVars(f *testing.F) {
	f.Add("deb $MIRROR ${RELEASE} main $UNKNOWN")
	f.Fuzz(func(t *testing.T, s string) {
		_ = expandVars(s, map[string]string{"MIRROR": "m", "RELEASE": "r"})
	})
}
