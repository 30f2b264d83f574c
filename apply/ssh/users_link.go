package ssh

import "github.com/seedinit/seedinit/apply/users"

// setupUserKeys installs authorized keys; tests replace it to see exactly
// which keys each account gets.
var setupUserKeys = users.SetupUserKeys
