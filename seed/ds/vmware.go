package ds

import (
	"context"
	"errors"

	"github.com/seedinit/seedinit/seed"
)

func init() { Register(vmwareDatasource{}) }

// errVMwareGuestinfo says why the VMware datasource is not read.
var errVMwareGuestinfo = errors.New("VMware guestinfo is only reachable through the VMware backdoor (vmtoolsd or vmware-rpctool), which seedinit does not speak; use a NoCloud seed (guestinfo-free) or the config drive instead")

// vmwareDatasource is cloud-init's DataSourceVMware by name only: its
// guestinfo.metadata / userdata / vendordata keys live in the VMX and are
// read through the hypervisor's RPC channel, not through a file, a disk or
// the network, so it is never found and never fetched. It is registered so
// that detection reports why it was skipped.
type vmwareDatasource struct{}

func (vmwareDatasource) Name() string       { return "VMware" }
func (vmwareDatasource) NeedsNetwork() bool { return false }

func (vmwareDatasource) Probe(ctx context.Context, env *Env) (Evidence, error) {
	return Evidence{Verdict: NotFound, Reason: errVMwareGuestinfo.Error()}, nil
}

func (vmwareDatasource) Fetch(ctx context.Context, env *Env) (*seed.Seed, error) {
	return nil, errVMwareGuestinfo
}
