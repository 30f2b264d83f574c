// Package system holds the cloud-config modules that set up the target's
// base system: resolv_conf, timezone, locale, ntp, seed_random and
// disable_ec2_metadata. They write files only through env.Root and reach
// the kernel only through env.Sys (and the optional capabilities below,
// which the caller's System may implement).
package system

import (
	"context"
	"net/netip"

	"github.com/seedinit/seedinit/apply"
)

// RandomPool is the capability to feed bytes into the running kernel's
// entropy pool (writing /dev/urandom). A System that implements it gets
// seed_random's data; one that does not leaves the pool alone.
type RandomPool interface {
	AddRandom(data []byte) error
}

// RouteRejecter is the capability to add a reject ("prohibit") route for
// one address on the running system, as disable_ec2_metadata wants.
type RouteRejecter interface {
	RejectRoute(ctx context.Context, dst netip.Addr) error
}

func init() {
	apply.Register(apply.Module{Name: "resolv_conf", Frequency: apply.PerInstance, Keys: []string{"manage_resolv_conf", "resolv_conf"}, Run: runResolvConf})
	apply.Register(apply.Module{Name: "timezone", Frequency: apply.PerInstance, Keys: []string{"timezone"}, Run: runTimezone})
	apply.Register(apply.Module{Name: "locale", Frequency: apply.PerInstance, Keys: []string{"locale", "locale_configfile"}, Run: runLocale})
	apply.Register(apply.Module{Name: "ntp", Frequency: apply.PerInstance, Keys: []string{"ntp"}, Run: runNTP})
	apply.Register(apply.Module{Name: "seed_random", Frequency: apply.PerInstance, Keys: []string{"random_seed"}, Run: runSeedRandom})
	apply.Register(apply.Module{Name: "disable_ec2_metadata", Frequency: apply.PerBoot, Keys: []string{"disable_ec2_metadata"}, Run: runDisableEC2Metadata})
}
