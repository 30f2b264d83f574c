package model

import "testing"

func TestMasks(t *testing.T) {
	for prefix, mask := range map[int]string{0: "0.0.0.0", 8: "255.0.0.0", 20: "255.255.240.0", 32: "255.255.255.255"} {
		if got := PrefixToIPv4Mask(prefix); got != mask {
			t.Errorf("PrefixToIPv4Mask(%d) = %q, want %q", prefix, got, mask)
		}
		if got, err := IPv4MaskToPrefix(mask); err != nil || got != prefix {
			t.Errorf("IPv4MaskToPrefix(%q) = %d, %v, want %d", mask, got, err, prefix)
		}
	}
	tests := []struct {
		mask    string
		want    int
		wantErr bool
	}{
		{"64", 64, false},
		{"ffff:ffff:ffff:ffff::", 64, false},
		{"ffff:ff00::", 24, false},
		{"::", 0, false},
		{"ffff:0:ffff::", 0, true},
		{"129", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.mask, func(t *testing.T) {
			got, err := IPv6MaskToPrefix(tt.mask)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("IPv6MaskToPrefix(%q) = %d, %v; want %d, error %v", tt.mask, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSubnetIsIPv6(t *testing.T) {
	tests := []struct {
		s    Subnet
		want bool
	}{
		{Subnet{Type: SubnetStatic, Address: "10.0.0.1"}, false},
		{Subnet{Type: SubnetStatic, Address: "2001:db8::1"}, true},
		{Subnet{Type: SubnetDHCP6}, true},
		{Subnet{Type: SubnetSLAAC}, true},
		{Subnet{Type: SubnetDHCP}, false},
	}
	for _, tt := range tests {
		t.Run(tt.s.Type+" "+tt.s.Address, func(t *testing.T) {
			if got := tt.s.IsIPv6(); got != tt.want {
				t.Errorf("IsIPv6() = %v, want %v", got, tt.want)
			}
		})
	}
}
