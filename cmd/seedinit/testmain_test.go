package main

import (
	"os"
	"testing"
	"time"
)

// asCommandEnv makes this test binary seedinit itself, for a test that
// runs a command as its own process (the lease keeper, which execs a
// copy of itself): dispatch on its arguments, as main does.
const asCommandEnv = "SEEDINIT_TEST_AS_COMMAND"

// waitGoneEnv names a file the command waits to be removed before it
// starts: the test deletes the copy it started, as the switch deletes the
// initramfs's, and the keeper looks at that when it starts.
const waitGoneEnv = "SEEDINIT_TEST_WAIT_GONE"

func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" {
		if p := os.Getenv(waitGoneEnv); p != "" {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(p); err != nil {
					break
				}
			}
		}
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
