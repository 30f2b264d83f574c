// Package apply is the frame every cloud-config module plugs into: the
// stages and frequencies, the module registry (Register, Registered), the
// System interface through which modules ask the machine for what is not
// a file (hostname, commands, power), what the target has (LookPath, the
// interpreters of scripts) and the /var/lib/cloud state. The modules are
// its sub-packages, one per subject; apply/stages runs them.
package apply
