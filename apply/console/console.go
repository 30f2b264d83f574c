// Package console holds the final-stage modules that talk to the outside
// when the instance is up: keys_to_console and ssh_authkey_fingerprints
// (on the console, in cloud-init's format), phone_home (an HTTP POST) and
// power_state_change (handed to the caller's System, which owns the
// machine's power).
package console

import (
	"github.com/seedinit/seedinit/apply"
)

func init() {
	apply.Register(apply.Module{Name: "keys_to_console", Frequency: apply.PerInstance,
		Keys: []string{"ssh_fp_console_blacklist", "ssh_key_console_blacklist"}, Run: runKeysToConsole})
	apply.Register(apply.Module{Name: "ssh_authkey_fingerprints", Frequency: apply.PerInstance,
		Keys: []string{"no_ssh_fingerprints", "authkey_hash"}, Run: runAuthkeyFingerprints})
	apply.Register(apply.Module{Name: "phone_home", Frequency: apply.PerInstance, Keys: []string{"phone_home"}, Run: runPhoneHome})
	apply.Register(apply.Module{Name: "power_state_change", Frequency: apply.PerInstance, Keys: []string{"power_state"}, Run: runPowerStateChange})
}
