//go:build linux && !(amd64 || arm || arm64 || loong64 || ppc || ppc64 || ppc64le || riscv64 || s390x)

package boot

import (
	"fmt"
	"runtime"
)

// kexecFileLoad: the kernel has no kexec_file_load(2) on this
// architecture (i386, MIPS), and seedinit.kexec= reports it.
func kexecFileLoad(kernelFd, initrdFd int, cmdline string, flags int) error {
	return fmt.Errorf("kexec_file_load is not available on %s", runtime.GOARCH)
}
