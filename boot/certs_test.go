package boot

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestCertDirsPutTheTargetsAfterTheInitramfs(t *testing.T) {
	got := strings.Split(certDirs("/sysroot"), ":")
	want := []string{
		"/etc/ssl/certs", "/etc/pki/ca-trust/extracted/pem", "/etc/pki/tls/certs",
		"/sysroot/etc/ssl/certs", "/sysroot/etc/pki/ca-trust/extracted/pem", "/sysroot/etc/pki/tls/certs",
	}
	if !slices.Equal(got, want) {
		t.Errorf("certDirs = %q, want %q", got, want)
	}
}

func TestTrustTargetCertsLeavesAChosenDirAndTheRealInitsEnv(t *testing.T) {
	t.Setenv(certDirEnv, "/chosen")
	if set := trustTargetCerts("/sysroot"); set != "" {
		t.Errorf("trustTargetCerts replaced the command line's %s with %q", certDirEnv, set)
	}
	if !slices.Contains(handoffEnv(""), certDirEnv+"=/chosen") {
		t.Errorf("a %s the command line chose is not handed on", certDirEnv)
	}
	t.Setenv(certDirEnv, "")
	if err := os.Unsetenv(certDirEnv); err != nil {
		t.Fatal(err)
	}
	set := trustTargetCerts("/sysroot")
	if set == "" {
		t.Fatal("trustTargetCerts set nothing")
	}
	for _, kv := range handoffEnv(set) {
		if strings.HasPrefix(kv, certDirEnv+"=") {
			t.Errorf("the real init would inherit seedinit's %s", kv)
		}
	}
}
