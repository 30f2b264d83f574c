package boot

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// siginfoPid reads si_pid, which x/sys does not name. In the kernel's
// siginfo_t it starts the union that follows si_signo, si_errno and si_code
// (three int32); on 64-bit ABIs the union is 8-byte aligned, so it sits at
// offset 16, on 32-bit ones at 12.
func siginfoPid(info *unix.Siginfo) int32 {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), off))
}
