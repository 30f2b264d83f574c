package boot

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seedinit/seedinit/internal/atomicfile"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
)

// Seed trust is decided once, over everything a run applies, the same way
// in every mode: PID 1 (initramfs or /sbin/init), `seedinit run` (an init
// system's service, u-root's uinit, the final stage) and `seedinit
// apply`. Each reads its anchor (trust.PolicyFile and trust.KeysFile)
// from the system it trusts, raises the policy by seedinit.trust= where
// it boots, decides with trust.Decide, logs each part's verdict and
// reports the decision in status.json.

// TrustAnchor is the anchor of a run whose trust lives in the system at
// dir (described by where), raised by cmdline's seedinit.trust=.
func TrustAnchor(dir, where, cmdline string) trust.Anchor {
	a := trust.ReadAnchor(dir, where)
	opts, _ := ParseOptions(ParseCmdline(cmdline))
	a.Raise(opts.Trust, "seedinit.trust= on the kernel command line")
	return a
}

// KernelCmdline is the running kernel's command line.
func KernelCmdline() string { return readCmdline() }

// CmdlineReportURL is the running kernel's seedinit.report=, for the
// stages a run on this system runs (they use it only as trust allows).
func CmdlineReportURL() string {
	opts, _ := ParseOptions(ParseCmdline(readCmdline()))
	return opts.Report
}

// decideSeedTrust is PID 1's decision: its anchor is in "/", the
// initramfs it runs from or the root it is /sbin/init of.
func (p *PID1) decideSeedTrust(sd *seed.Seed) (*seed.Seed, *trust.Decision) {
	where := "/etc/seedinit in the root"
	if p.Initramfs {
		where = "/etc/seedinit in the initramfs"
	}
	a := trust.ReadAnchor("/", where)
	a.Raise(p.Opts.Trust, "seedinit.trust= on the kernel command line")
	return trust.DecideHere(sd, a, p.Log)
}

// trustRecordFile keeps the decision beside the seed PID 1 (or a run's
// search) kept for the later stages, which apply it as it was decided.
const trustRecordFile = "seedinit-trust.json"

// saveTrustRecord writes d beside the kept seed in dir.
func saveTrustRecord(dir string, d *trust.Decision) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, trustRecordFile), append(b, '\n'), 0o600)
}

// KeptTrust is the decision kept with the seed in SeedCacheDir (nil when
// none is there), for the stages that run from that seed: the seed there
// is what the decision let through. Only that directory's record counts:
// a seed directory anyone else hands over is decided again.
func KeptTrust(seedDir string) (*trust.Decision, error) {
	same, err := sameDir(seedDir, SeedCacheDir)
	if err != nil || !same {
		return nil, nil
	}
	b, err := seed.ReadSeedFile(filepath.Join(SeedCacheDir, trustRecordFile), 1<<20)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d trust.Decision
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(SeedCacheDir, trustRecordFile), err)
	}
	return &d, nil
}

// sameDir says whether a and b are the same directory, by identity.
func sameDir(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
