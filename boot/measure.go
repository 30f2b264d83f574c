package boot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seedinit/seedinit/apply/target"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/measure"
)

// The seed parts PID 1 applies are measured into the TPM's PCR 12 when
// the machine has a TPM 2.0 (seed/measure says how), and the events are
// kept in the target at measureLogPath for a verifier to replay.
const measureLogPath = "/var/lib/seedinit/tpm-seed-events.jsonl"

// tpmDevices are tried in order: the kernel's resource manager first.
var tpmDevices = []string{"/dev/tpmrm0", "/dev/tpm0"}

// measureSeed extends each part of sd (as applied: after the signature
// check) into the TPM before anything of it is used. No TPM: nothing to
// do. A failed extension is returned for status.json: the part is used
// all the same, and an attestation will not match.
func (p *PID1) measureSeed(root *target.Root, sd *seed.Seed) error {
	var tpm *os.File
	for _, dev := range tpmDevices {
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err == nil {
			tpm = f
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			p.Log.Warn("open the TPM", "device", dev, "error", err.Error())
		}
	}
	if tpm == nil {
		p.Log.Debug("no TPM: the seed is not measured")
		return nil
	}
	defer tpm.Close()
	var events []measure.Event
	for _, part := range seed.PartNames {
		content := sd.PartContent(part)
		if content == nil {
			continue
		}
		ev, digest := measure.EventFor(part, content)
		if err := measure.Extend(tpm, measure.PCR, digest); err != nil {
			return fmt.Errorf("measure the seed's %s into PCR %d: %w", part, measure.PCR, err)
		}
		events = append(events, ev)
		p.Log.Info("seed part measured", "part", part, "pcr", measure.PCR, "digest", ev.Digest)
	}
	if err := root.MkdirAll(filepath.Dir(measureLogPath), 0o755, target.KeepOwner); err != nil {
		return fmt.Errorf("keep the measurements: %w", err)
	}
	// This boot's: the PCRs start afresh at each boot, and each boot
	// measures the seed it applies.
	if err := root.WriteFile(measureLogPath, measure.MarshalLog(events), 0o644, target.KeepOwner); err != nil {
		return fmt.Errorf("keep the measurements: %w", err)
	}
	return nil
}
