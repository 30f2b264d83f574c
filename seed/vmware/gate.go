// Package vmware speaks to VMware's hypervisor through its backdoor, as
// open-vm-tools' vmware-rpctool does: the RPCI channel over the
// low-bandwidth I/O port 0x5658, "info-get guestinfo.KEY" and "info-set".
// It lives below seed/ds, which reads the VMware and OVF datasources'
// guestinfo through it, and apart from it: it holds assembly, its own
// protocol, and the gate that keeps every other machine from it.
//
// The backdoor is an IN instruction on a port no device has. VMware
// answers it; anywhere else a process gets a general-protection fault,
// and a fault in PID 1 is a kernel panic. So the port is opened only when
// CPUID's hypervisor leaf says VMwareVMware and the firmware's DMI names
// VMware too (Gate), and every call runs with the runtime told to turn a
// fault into an error (Port).
package vmware

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// CPU is what CPUID says of the hypervisor the machine runs under.
type CPU struct {
	// Hypervisor is leaf 1's ECX bit 31, set by every hypervisor.
	Hypervisor bool
	// Vendor is leaf 0x40000000's signature (EBX, ECX, EDX):
	// "VMwareVMware", "KVMKVMKVM\x00\x00\x00", "TCGTCGTCGTCG", ...
	Vendor string
}

// ReadCPU asks CPUID; on a CPU without it (not x86) nothing is known.
func ReadCPU() CPU {
	if !haveCPUID {
		return CPU{}
	}
	_, _, ecx, _ := cpuid(1, 0)
	c := CPU{Hypervisor: ecx&(1<<31) != 0}
	if !c.Hypervisor {
		return c
	}
	_, b, cx, d := cpuid(0x40000000, 0)
	var sig [12]byte
	binary.LittleEndian.PutUint32(sig[0:], b)
	binary.LittleEndian.PutUint32(sig[4:], cx)
	binary.LittleEndian.PutUint32(sig[8:], d)
	c.Vendor = string(sig[:])
	return c
}

// vmwareVendor is VMware's CPUID hypervisor signature.
const vmwareVendor = "VMwareVMware"

// DMI is the firmware's word: /sys/class/dmi/id's sys_vendor and
// product_name ("VMware, Inc.", "VMware Virtual Platform", "VMware20,1").
type DMI struct{ SysVendor, ProductName string }

// Gate says whether the backdoor may be touched on a machine whose CPU
// and firmware say cpu and dmi: nil only when CPUID's hypervisor bit is
// set, its vendor is VMwareVMware, and DMI names VMware (cloud-init's
// test, system-product-name). Two witnesses: a hypervisor that passes
// another's CPUID signature through, or firmware copied from a VMware
// machine, does not open it alone. The error says why not, for detect.
func Gate(cpu CPU, dmi DMI) error {
	switch {
	case !haveCPUID:
		return fmt.Errorf("no VMware backdoor on this architecture")
	case !cpu.Hypervisor:
		return fmt.Errorf("CPUID says no hypervisor")
	case cpu.Vendor != vmwareVendor:
		return fmt.Errorf("CPUID hypervisor %q, not VMware", strings.TrimRight(cpu.Vendor, "\x00"))
	case !strings.Contains(strings.ToLower(dmi.ProductName), "vmware") && !strings.Contains(strings.ToLower(dmi.SysVendor), "vmware"):
		return fmt.Errorf("CPUID says VMware but DMI does not (sys_vendor %q, product_name %q)", dmi.SysVendor, dmi.ProductName)
	}
	return nil
}
