package network

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/apply/applytest"
	"github.com/seedinit/seedinit/netup"
	"github.com/seedinit/seedinit/netup/link"
)

// fakeSysClassNet makes a /sys/class/net with the given NICs (name to MAC
// and driver) and points the module at it.
func fakeSysClassNet(t *testing.T, nics map[string][2]string) {
	t.Helper()
	sys := t.TempDir()
	for name, nic := range nics {
		dir := filepath.Join(sys, name)
		os.MkdirAll(filepath.Join(dir, "device"), 0o755)
		os.WriteFile(filepath.Join(dir, "address"), []byte(nic[0]+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "carrier"), []byte("1\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "type"), []byte("1\n"), 0o644)
		drivers := filepath.Join(sys, "drivers", nic[1])
		os.MkdirAll(drivers, 0o755)
		os.Symlink(drivers, filepath.Join(dir, "device", "driver"))
	}
	old := sysClassNet
	sysClassNet = sys
	t.Cleanup(func() { sysClassNet = old })
}

const digitalOceanNetwork = `{"interfaces": {
  "public": [{"mac": "04:01:58:27:7f:01", "type": "public",
    "ipv4": {"ip_address": "45.55.50.93", "netmask": "255.255.224.0", "gateway": "45.55.32.1"},
    "anchor_ipv4": {"ip_address": "10.17.0.9", "netmask": "255.255.0.0", "gateway": "10.17.0.1"}}],
  "private": [{"mac": "04:01:58:27:7f:02", "type": "private",
    "ipv4": {"ip_address": "10.132.75.35", "netmask": "255.255.0.0", "gateway": "10.132.0.1"}}]},
 "dns": {"nameservers": ["67.207.67.2", "67.207.67.3"]}}`

const azureNetwork = `{"interface": [
  {"macAddress": "000D3A047598", "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4"}, {"privateIpAddress": "10.0.0.5"}],
    "subnet": [{"address": "10.0.0.0", "prefix": "24"}]}, "ipv6": {"ipAddress": []}}]}`

// TestCloudNetworkMetadata checks that the network module converts the
// network metadata of DigitalOcean, Vultr and Azure through netup (the
// parsers are compared with cloud-init in netup/parse), that Oracle's
// VNICs and Vultr's cloud_interfaces give the fallback, and that
// MAC-named metadata is skipped offline. (Azure's apply_network_config is the datasource's: see
// seed/ds.)
func TestCloudNetworkMetadata(t *testing.T) {
	nics := map[string][2]string{
		"ens3": {"04:01:58:27:7f:01", "virtio_net"},
		"ens4": {"04:01:58:27:7f:02", "virtio_net"},
	}
	macs := []netup.MAC{{Name: "ens3", Address: "04:01:58:27:7f:01", Driver: "virtio_net"}, {Name: "ens4", Address: "04:01:58:27:7f:02", Driver: "virtio_net"}}
	oracleVNICs := `[{"macAddr": "04:01:58:27:7F:01", "privateIp": "10.0.0.2", "subnetCidrBlock": "10.0.0.0/24"},
  {"macAddr": "04:01:58:27:7f:02", "privateIp": "10.0.4.5", "subnetCidrBlock": "10.0.4.0/24"}]`
	vultr := `{"interfaces": [{"mac": "04:01:58:27:7f:01", "ipv4": {"address": "192.0.2.5", "netmask": "255.255.255.0", "additional": []}, "ipv6": {"additional": []}}]}`
	fallback := fallbackConfig([]link.NIC{{Name: "ens3", MAC: "04:01:58:27:7f:01", Carrier: true, Type: 1}, {Name: "ens4", MAC: "04:01:58:27:7f:02", Carrier: true, Type: 1}})

	tests := []struct {
		name, format, input string
		// wantFrom is converted from wantKind with the machine's NICs
		// for the expected ENI.
		wantFrom, wantKind string
		live               bool
		wantSkip           bool
		// wantLine is one line the ENI must have; wantWarn a part of the
		// one warning the module must give, "" for none.
		wantLine, wantWarn string
	}{
		{name: "digitalocean", format: "digitalocean", input: digitalOceanNetwork, wantFrom: digitalOceanNetwork, wantKind: netup.KindDigitalOcean, live: true,
			wantLine: "    address 45.55.50.93/19"},
		{name: "vultr", format: "vultr", input: vultr, wantFrom: vultr, wantKind: netup.KindVultr, live: true,
			wantLine: "iface ens3 inet dhcp"},
		{name: "azure", format: "azure-imds", input: azureNetwork, wantFrom: azureNetwork, wantKind: netup.KindAzureIMDS, live: true,
			wantLine: "    address 10.0.0.5/24"},
		{name: "azure offline", format: "azure-imds", input: azureNetwork, wantFrom: azureNetwork, wantKind: netup.KindAzureIMDS,
			wantLine: "iface eth0 inet dhcp"},
		{name: "oracle", format: "oracle-vnics", input: oracleVNICs, wantFrom: oracleVNICs, wantKind: netup.KindOracleVNICs, live: true,
			wantLine: "    address 10.0.4.5/24"},
		{name: "oracle offline", format: "oracle-vnics", input: oracleVNICs, wantSkip: true},
		{name: "vultr cloud_interfaces", format: "vultr-cloud-interfaces", input: `{"cloud_interfaces": [{"mac": "04:01:58:27:7f:01"}]}`,
			wantFrom: string(fallback), wantKind: netup.KindYAML, live: true, wantLine: "iface ens3 inet dhcp", wantWarn: "using the fallback"},
		{name: "digitalocean offline", format: "digitalocean", input: digitalOceanNetwork, wantSkip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeSysClassNet(t, nics)
			dir := t.TempDir()
			mkdirs(t, dir, "etc/network/interfaces")
			env := applytest.NewEnvAt(t, dir, nil)
			env.Sys.IsLive = tt.live
			env.Seed.NetworkConfig, env.Seed.NetworkFormat = []byte(tt.input), tt.format
			err := run(context.Background(), env.Env)
			if tt.wantSkip {
				if !errors.Is(err, apply.ErrSkipped) {
					t.Fatalf("run = %v, want a skip", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w := env.Warnings(); (tt.wantWarn == "" && len(w) > 0) || (tt.wantWarn != "" && (len(w) != 1 || !strings.Contains(w[0], tt.wantWarn))) {
				t.Errorf("warnings: %q, want one with %q", w, tt.wantWarn)
			}
			var known []netup.MAC
			if tt.live {
				known = macs
			}
			want, err := netup.Convert([]byte(tt.wantFrom), tt.wantKind, netup.OutputENI, known)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "etc/network/interfaces.d/50-cloud-init"))
			if !strings.Contains(string(got), "\n"+tt.wantLine+"\n") {
				t.Errorf("ENI lacks %q:\n%s", tt.wantLine, got)
			}
			if diff := cmp.Diff(string(want["etc/network/interfaces.d/50-cloud-init"]), string(got)); diff != "" {
				t.Errorf("ENI (-want +got):\n%s", diff)
			}
		})
	}
}
