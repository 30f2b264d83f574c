//go:build !amd64 && !386

package vmware

// Other architectures have no I/O-port backdoor (VMware's arm64 guests
// use another call, which seedinit does not speak): the gate never opens.
const haveCPUID = false

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32) { return 0, 0, 0, 0 }

func portIn(r Regs) Regs { panic("vmware: no backdoor on this architecture") }
