package trust

import (
	"log/slog"

	"github.com/seedinit/seedinit/seed"
)

// DecideHere makes the one trust decision over sd under a on this
// machine (its facts read from /sys), logs it (never a part's content)
// and returns the seed to apply.
func DecideHere(sd *seed.Seed, a Anchor, log *slog.Logger) (*seed.Seed, *Decision) {
	applied, d := Decide(sd, a, ReadFacts("/sys"))
	Log(d, log)
	return applied, d
}

// Log logs a decision: each part's verdict and each problem.
func Log(d *Decision, log *slog.Logger) {
	if d == nil || d.Policy == Off.String() {
		return
	}
	for _, p := range d.Problems {
		log.Warn("seed trust", "policy", d.Policy, "problem", p)
	}
	for _, f := range d.Parts {
		switch f.Verdict {
		case Trusted:
			log.Info("seed part trusted", "part", f.Part, "detail", f.Detail, "manifest", d.Manifest)
		case NotApplied:
			log.Error("seed part not applied", "part", f.Part, "policy", d.Policy, "why", f.Detail)
		default:
			log.Warn("seed part applied unverified", "part", f.Part, "policy", d.Policy, "why", f.Detail)
		}
	}
}
