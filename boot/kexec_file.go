//go:build linux && (amd64 || arm || arm64 || loong64 || ppc || ppc64 || ppc64le || riscv64 || s390x)

package boot

import "golang.org/x/sys/unix"

// kexecFileLoad is kexec_file_load(2), which the kernel has on these
// architectures.
func kexecFileLoad(kernelFd, initrdFd int, cmdline string, flags int) error {
	return unix.KexecFileLoad(kernelFd, initrdFd, cmdline, flags)
}
