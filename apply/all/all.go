// Package all links every module into the binary: importing it registers
// them with apply.Register.
package all

import (
	_ "github.com/seedinit/seedinit/apply/certs"
	_ "github.com/seedinit/seedinit/apply/console"
	_ "github.com/seedinit/seedinit/apply/disk"
	_ "github.com/seedinit/seedinit/apply/disksetup"
	_ "github.com/seedinit/seedinit/apply/files"
	_ "github.com/seedinit/seedinit/apply/hostname"
	_ "github.com/seedinit/seedinit/apply/mounts"
	_ "github.com/seedinit/seedinit/apply/network"
	_ "github.com/seedinit/seedinit/apply/packages"
	_ "github.com/seedinit/seedinit/apply/rsyslog"
	_ "github.com/seedinit/seedinit/apply/scripts"
	_ "github.com/seedinit/seedinit/apply/seedfiles"
	_ "github.com/seedinit/seedinit/apply/ssh"
	_ "github.com/seedinit/seedinit/apply/system"
	_ "github.com/seedinit/seedinit/apply/users"
)
