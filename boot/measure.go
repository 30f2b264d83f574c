package boot

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/measure"
)

// The seed parts PID 1 applies are measured into the TPM's PCR 12 when
// the machine has a TPM 2.0 (seed/measure says how), and the events are
// kept in the target at measureLogPath for a verifier to replay.
const measureLogPath = "/var/lib/seedinit/tpm-seed-events.jsonl"

// tpmDevices are tried in order: the kernel's resource manager first.
var tpmDevices = []string{"/dev/tpmrm0", "/dev/tpm0"}

// measureSeed extends each part of sd (as applied: after the trust
// decision) into the TPM before anything of it is used. No TPM: nothing
// to do. Every extend waits for its answer (measure.Device), the event
// log is written for every extend that reached the TPM whatever fails
// after it, and a failure says what was and was not measured: the first
// failure ends the measuring, a TPM that did not answer one command
// being unlikely to answer the next.
func (p *PID1) measureSeed(root *rootfs.Root, sd *seed.Seed) error {
	var tpm *measure.Device
	for _, dev := range tpmDevices {
		d, err := measure.OpenDevice(dev, 0)
		if err == nil {
			tpm = d
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
	events, err := measureParts(tpm, sd, p.Log.Info)
	if len(events) > 0 {
		if lerr := keepMeasureLog(root, events); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}
	return err
}

// measureParts extends sd's parts through tpm in seed.PartNames' order
// and returns the events of the extends that reached it; on a failure,
// the error names what was measured, what may have been and what was
// not.
func measureParts(tpm measure.TPM, sd *seed.Seed, logf func(msg string, args ...any)) ([]measure.Event, error) {
	var events []measure.Event
	var parts []string
	for _, part := range seed.PartNames {
		if sd.PartContent(part) != nil {
			parts = append(parts, part)
		}
	}
	for i, part := range parts {
		ev, digest := measure.EventFor(part, sd.PartContent(part))
		err := measure.Extend(tpm, measure.PCR, digest)
		if err == nil {
			events = append(events, ev)
			logf("seed part measured", "part", part, "pcr", measure.PCR, "digest", ev.Digest)
			continue
		}
		var measured []string
		for _, e := range events {
			measured = append(measured, e.Part)
		}
		unconfirmed := ""
		rest := parts[i+1:]
		if measure.Reached(err) {
			ev.Unconfirmed = true
			events = append(events, ev)
			unconfirmed = fmt.Sprintf("; %s unconfirmed (its command reached the TPM, its answer did not come: logged as unconfirmed)", part)
		} else {
			rest = parts[i:]
		}
		return events, fmt.Errorf("measure the seed into PCR %d: %s: %w; measured: %s%s; not measured: %s",
			measure.PCR, part, err, orNone(measured), unconfirmed, orNone(rest))
	}
	return events, nil
}

func orNone(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// keepMeasureLog writes this boot's events: the PCRs start afresh at
// each boot, and each boot measures the seed it applies.
func keepMeasureLog(root *rootfs.Root, events []measure.Event) error {
	if err := root.MkdirAll(filepath.Dir(measureLogPath), 0o755, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("keep the measurements: %w", err)
	}
	if err := root.WriteFile(measureLogPath, measure.MarshalLog(events), 0o644, rootfs.KeepOwner); err != nil {
		return fmt.Errorf("keep the measurements: %w", err)
	}
	return nil
}
