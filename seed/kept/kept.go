// Package kept is the seed kept for the stages that run after the search,
// in other processes: PID 1's final stage after the handoff, and `seedinit
// run`'s later stages after its own search. The seed is kept in NoCloud
// layout with the name of its datasource and the trust decision that let
// it through; a later stage applies it as it was decided.
package kept

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/internal/samefile"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/ds"
	"github.com/seedinit/seedinit/seed/trust"
)

// Dir is where the seed is kept: under /run/seedinit, which is everyone's
// (the timeline, seedinit itself), in a folder for root only, since the
// seed may hold secrets.
const Dir = "/run/seedinit/seed"

// decisionFile keeps the decision beside the seed.
const decisionFile = "seedinit-trust.json"

// Save keeps s in Dir with the decision d that let it through.
func Save(s *seed.Seed, d *trust.Decision) error { return save(Dir, s, d) }

// save keeps s in dir. The decision goes last and the old one first: a
// seed found without its decision is decided again, never applied under
// another seed's.
func save(dir string, s *seed.Seed, d *trust.Decision) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, decisionFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := ds.FetchToDir(s, dir); err != nil {
		return err
	}
	for name, v := range map[string]string{"datasource": s.Datasource, "subplatform": s.Subplatform} {
		if err := atomicfile.Write(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			return err
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, decisionFile), append(b, '\n'), 0o600)
}

// Decision is the decision kept with the seed in seedDir, nil when there
// is none. Only Dir's record counts: a seed directory anyone else hands
// over is decided again.
func Decision(seedDir string) (*trust.Decision, error) { return decisionIn(seedDir, Dir) }

func decisionIn(seedDir, dir string) (*trust.Decision, error) {
	// By identity, whatever the path names it by; a folder not there
	// holds no record.
	given, _, errGiven := samefile.Identify(seedDir)
	keeping, _, errKeeping := samefile.Identify(dir)
	if errGiven != nil || errKeeping != nil || given != keeping {
		return nil, nil
	}
	name := filepath.Join(dir, decisionFile)
	b, err := seed.ReadSeedFile(name, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d trust.Decision
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &d, nil
}
