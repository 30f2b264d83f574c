package boot

import (
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
