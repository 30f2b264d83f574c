package vmware

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestGate(t *testing.T) {
	vm := CPU{Hypervisor: true, Vendor: "VMwareVMware"}
	for _, tc := range []struct {
		name string
		cpu  CPU
		dmi  DMI
		want string // "" opens
	}{
		{"ESXi", vm, DMI{SysVendor: "VMware, Inc.", ProductName: "VMware7,1"}, ""},
		{"Workstation", vm, DMI{ProductName: "VMware Virtual Platform"}, ""},
		{"bare metal", CPU{}, DMI{SysVendor: "Dell Inc."}, "no hypervisor"},
		{"KVM", CPU{Hypervisor: true, Vendor: "KVMKVMKVM\x00\x00\x00"}, DMI{SysVendor: "QEMU"}, `hypervisor "KVMKVMKVM", not VMware`},
		{"TCG", CPU{Hypervisor: true, Vendor: "TCGTCGTCGTCG"}, DMI{SysVendor: "QEMU"}, "not VMware"},
		{"KVM with VMware's DMI", CPU{Hypervisor: true, Vendor: "KVMKVMKVM\x00\x00\x00"}, DMI{SysVendor: "VMware, Inc."}, "not VMware"},
		{"VMware's CPUID, other DMI", vm, DMI{SysVendor: "QEMU", ProductName: "Standard PC"}, "DMI does not"},
		{"VMware's CPUID, no DMI", vm, DMI{}, "DMI does not"},
		{"hypervisor bit without a vendor", CPU{Hypervisor: true}, DMI{SysVendor: "VMware, Inc."}, "not VMware"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Gate(tc.cpu, tc.dmi)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Gate = %v, want %q", err, tc.want)
			}
			p, err := Open(tc.cpu, tc.dmi)
			if (p == nil) != (err != nil) || tc.want != "" && p != nil {
				t.Errorf("Open = %v, %v", p, err)
			}
		})
	}
}

// The gate on the machine the tests run on, which is not VMware (a KVM
// guest here, or bare metal, or a TCG guest in CI): its CPUID and DMI
// keep the port shut. Were the gate wrong, the port call would fault and
// end this test process, as it would end PID 1.
func TestGateShutsOnThisMachine(t *testing.T) {
	cpu := ReadCPU()
	dmi := DMI{SysVendor: readDMI("sys_vendor"), ProductName: readDMI("product_name")}
	t.Logf("this machine: CPUID hypervisor %v, vendor %q; DMI %q %q", cpu.Hypervisor, cpu.Vendor, dmi.SysVendor, dmi.ProductName)
	err := Gate(cpu, dmi)
	if err == nil {
		t.Skip("this machine is VMware: the gate opens, rightly")
	}
	t.Logf("the gate: %v", err)
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		if cpu.Vendor == vmwareVendor {
			t.Fatalf("CPUID says VMware here, yet the test machine is not: %v", err)
		}
	}
	p, err := Open(cpu, dmi)
	if p != nil || err == nil {
		t.Fatalf("Open gave a port on a machine that is not VMware: %v", err)
	}
}

func readDMI(name string) string {
	b, _ := os.ReadFile("/sys/class/dmi/id/" + name)
	return strings.TrimSpace(string(b))
}

// A fault in a guarded call is an error, not the end of the process: the
// same recovery a refused backdoor (a general-protection fault) goes
// through, proven here with a write to a read-only page rather than the
// port, which this machine must never touch.
func TestGuardedFaultIsAnError(t *testing.T) {
	page, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page)
	_, err = guarded(func() Regs {
		*(*byte)(unsafe.Pointer(&page[0])) = 1
		return Regs{AX: 1}
	})
	if err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("guarded = %v, want the fault as an error", err)
	}
	// And the runtime is as it was: a nil dereference elsewhere still
	// panics as usual (SetPanicOnFault was put back).
	out, err := guarded(func() Regs { return Regs{AX: 7} })
	if err != nil || out.AX != 7 {
		t.Errorf("a call that does not fault: %v %v", out, err)
	}
}
