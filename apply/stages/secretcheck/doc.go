// Package secretcheck holds the check that a seed's secrets stay secret
// on their way through the stages: each channel's seed (a config drive,
// OVF, VMware guestinfo, a NoCloud bootstrap tree) is read by its
// datasource, run through every module into a target and kept as PID 1
// keeps it, and the log, the console and every file written are searched
// for the secrets. It links every module (apply/all), which the stages'
// own tests must not (the modules would run in their runs too), so it
// is a package of its own. It has no code of its own.
package secretcheck
