//go:build amd64 || 386

package vmware

// Implemented in cpuid_$GOARCH.s.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func backdoorIn(ax, bx, cx, dx, si, di uint32) (oax, obx, ocx, odx, osi, odi uint32)

// haveCPUID: every x86 CPU Linux runs on has the instruction.
const haveCPUID = true

// portIn is one call through the real port.
func portIn(r Regs) Regs {
	ax, bx, cx, dx, si, di := backdoorIn(r.AX, r.BX, r.CX, r.DX, r.SI, r.DI)
	return Regs{AX: ax, BX: bx, CX: cx, DX: dx, SI: si, DI: di}
}
