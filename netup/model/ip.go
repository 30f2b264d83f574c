package model

import (
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

func isIPv6Address(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// IsIPv6Address reports whether s is a plain IPv6 address (no prefix).
func IsIPv6Address(s string) bool { return isIPv6Address(s) }

// IsIPv4Address reports whether s is a plain IPv4 address (no prefix).
func IsIPv4Address(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// PrefixToIPv4Mask spells prefix as a dotted netmask: 24 is 255.255.255.0.
func PrefixToIPv4Mask(prefix int) string {
	if prefix < 0 || prefix > 32 {
		return ""
	}
	m := ^uint32(0)
	if prefix < 32 {
		m = ^(^uint32(0) >> prefix)
	}
	return fmt.Sprintf("%d.%d.%d.%d", byte(m>>24), byte(m>>16), byte(m>>8), byte(m))
}

// IPv4MaskToPrefix accepts a prefix length ("24") or a dotted netmask
// ("255.255.255.0") and returns the prefix length.
func IPv4MaskToPrefix(mask string) (int, error) {
	if n, err := strconv.Atoi(mask); err == nil {
		if n < 0 || n > 32 {
			return 0, fmt.Errorf("prefix %d out of range 0-32", n)
		}
		return n, nil
	}
	a, err := netip.ParseAddr(mask)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("invalid IPv4 netmask %q", mask)
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	ones := bits.LeadingZeros32(^v)
	if v<<ones != 0 {
		return 0, fmt.Errorf("invalid IPv4 netmask %q", mask)
	}
	return ones, nil
}

// IPv6MaskToPrefix accepts a prefix length ("64") or an IPv6 netmask
// ("ffff:ffff:ffff:ffff::") and returns the prefix length.
func IPv6MaskToPrefix(mask string) (int, error) {
	if n, err := strconv.Atoi(mask); err == nil {
		if n < 0 || n > 128 {
			return 0, fmt.Errorf("prefix %d out of range 0-128", n)
		}
		return n, nil
	}
	a, err := netip.ParseAddr(mask)
	if err != nil || !a.Is6() {
		return 0, fmt.Errorf("invalid IPv6 netmask %q", mask)
	}
	b := a.As16()
	ones, seenZero := 0, false
	for _, x := range b {
		for bit := 7; bit >= 0; bit-- {
			if x&(1<<bit) != 0 {
				if seenZero {
					return 0, fmt.Errorf("invalid IPv6 netmask %q", mask)
				}
				ones++
			} else {
				seenZero = true
			}
		}
	}
	return ones, nil
}

// ParseNetwork splits "addr" or "addr/prefix-or-mask" and reports the
// address family, accepting what Python's ipaddress.ip_network(strict=False)
// accepts.
func ParseNetwork(s string) (addr string, mask string, ipv6 bool, err error) {
	addr, mask, _ = strings.Cut(s, "/")
	a, perr := netip.ParseAddr(addr)
	if perr != nil || a.Zone() != "" {
		return "", "", false, fmt.Errorf("address %q is not a valid ip address", s)
	}
	ipv6 = a.Is6()
	if strings.Contains(s, "/") {
		if ipv6 {
			_, err = IPv6MaskToPrefix(mask)
		} else {
			_, err = IPv4MaskToPrefix(mask)
		}
		if err != nil {
			return "", "", false, fmt.Errorf("address %q is not a valid ip network: %w", s, err)
		}
	}
	return addr, mask, ipv6, nil
}
