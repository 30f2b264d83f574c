package stages

import (
	"path"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
)

// maxSweptHomes bounds the homes swept at the start of a run: an
// appliance has a few; a machine with thousands keeps its readdirs for
// the homes a run writes to.
const maxSweptHomes = 64

// sweepAtStart removes, before anything else runs, the writer's
// temporary files that a power cut in an earlier boot left where seedinit
// writes whatever the config (rootfs.Root.SweepDirs): the account files,
// host keys and sudo rules, the homes and their keys, the state and the
// log. The log is written last, after the final stage, and an init may
// stop the machine before a run after a cut gets there; elsewhere the
// first write of the run in a directory sweeps it anyway.
func sweepAtStart(root *rootfs.Root, st *apply.State) {
	dirs := []string{
		"/", "/etc", "/etc/ssh", "/etc/ssh/sshd_config.d", "/etc/sudoers.d",
		"/root", "/root/.ssh", "/home", "/var", "/var/lib", "/var/log", "/var/lib/seedinit",
		apply.CloudDir, apply.Path("data"), apply.Path("sem"), apply.Path("instances"),
		st.InstanceDir(), st.InstanceDir("sem"), st.InstanceDir("scripts"),
	}
	if homes, err := root.ReadDir("/home"); err == nil {
		for i, e := range homes {
			if i == maxSweptHomes {
				break
			}
			if e.IsDir() {
				home := path.Join("/home", e.Name())
				dirs = append(dirs, home, path.Join(home, ".ssh"))
			}
		}
	}
	root.SweepDirs(dirs...)
}
