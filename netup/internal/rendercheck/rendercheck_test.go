package rendercheck

import (
	"testing"

	"github.com/seedinit/seedinit/netup/render"
)

// TestFile checks the checker: the lines renderers write pass, and the
// lines cloud-init 22.4.2 writes for hostile configs (a MAC, gateway or
// search domain with a newline; a name with "../") do not, so a fuzz
// target that holds parsers to it would catch the same flaw in seedinit.
func TestFile(t *testing.T) {
	tests := []struct {
		name, path, data string
		ok               bool
	}{
		{"udev rule", render.UdevRulesPath,
			"SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:56\", NAME=\"eth0\"\n", true},
		{"udev rule split by a MAC's newline", render.UdevRulesPath,
			"SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:56\n  up touch /tmp/PWNED\", NAME=\"eth0\"\n", false},
		{"udev rule with a RUN+= after a closed quote", render.UdevRulesPath,
			"SUBSYSTEM==\"net\", ACTION==\"add\", DRIVERS==\"?*\", ATTR{address}==\"52:54:00:12:34:56\", RUN+=\"/bin/sh\", NAME=\"eth0\"\n", false},
		{"ENI stanza", render.ENIPath,
			"# comment\nauto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet static\n    address 10.0.0.2/24\n    dns-search a.example b.example\n    gateway 10.0.0.1\n    post-up route add -net 10.1.0.0/16 gw 10.0.0.1 metric 5 || true\n    pre-down route del -net 10.1.0.0/16 gw 10.0.0.1 metric 5 || true\n", true},
		{"ENI with an up command from a search domain", render.ENIPath,
			"iface eth0 inet static\n    dns-search a.example\n    up touch /tmp/PWNED\n", false},
		{"ENI with a line out of any stanza", render.ENIPath,
			"iface eth0 inet static\n    gateway 10.0.0.1\nDNS1=x\n", false},
		{"ENI route with a command after it", render.ENIPath,
			"    post-up route add default gw 10.0.0.1; touch /tmp/PWNED || true\n", false},
		{"ifcfg", render.SysconfigDir + "/network-scripts/ifcfg-eth0",
			"# Created by cloud-init\n#\nBOOTPROTO=none\nDOMAIN=\"a.example b.example\"\nHWADDR=52:54:00:12:34:56\nIPV6ADDR=fd00::2/64\n", true},
		{"ifcfg with a value split by a newline", render.SysconfigDir + "/network-scripts/ifcfg-eth0",
			"DOMAIN=\"a.example\nnameserver 6.6.6.6\"\n", false},
		{"ifcfg with a command substitution", render.SysconfigDir + "/network-scripts/ifcfg-eth0",
			"GATEWAY=$(touch /tmp/PWNED)\n", false},
		{"networkd unit", render.NetworkdDir + "/10-cloud-init-eth0.network",
			"[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\nDomains=a.example b.example\n", true},
		{"networkd unit with a section from a value", render.NetworkdDir + "/10-cloud-init-eth0.network",
			"[Match]\nName=eth0\n\n[DHCPv4]\nHostname=h\n[Match]\nName=*\n", false},
		{"networkd unit with a continued line", render.NetworkdDir + "/10-cloud-init-eth0.network",
			"[Match]\nName=eth0\\\n", false},
		{"networkd unit from a name with ../", render.NetworkdDir + "/10-cloud-init-../../../../tmp/X.network",
			"[Match]\nName=x\n", false},
		{"resolv.conf", render.ResolvConfPath, "; generated\nnameserver 10.0.0.53\nsearch a.example b.example\n", true},
		{"resolv.conf with a nameserver from a search domain", render.ResolvConfPath, "search a.example\nnameserver 6.6.6.6 x\n", false},
		{"netplan", render.NetplanPath, "network:\n    version: 2\n    ethernets:\n        eth0:\n            match:\n                macaddress: '52:54:00:12:34:56'\n", true},
		{"netplan with an escaped newline", render.NetplanPath, "network:\n    version: 2\n    ethernets:\n        eth0:\n            match:\n                macaddress: \"52:54:00:12:34:56\\n  up\"\n", false},
		{"a control character", render.ENIPath, "iface eth0 inet dhcp\x01\n", false},
		{"a file the checker does not know", "etc/rc.local", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := File(tc.path, []byte(tc.data))
			if (err == nil) != tc.ok {
				t.Errorf("File = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
