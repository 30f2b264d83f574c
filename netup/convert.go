// Package netup brings the network up and describes it for the target OS:
// the network model and its parsers and renderers live in netup/model,
// netup/parse and netup/render; this package ties them together.
package netup

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/netup/render"
)

// Input kinds, as `cloud-init devel net-convert --kind` names them.
const (
	KindENI             = "eni"
	KindYAML            = "yaml"
	KindNetworkDataJSON = "network_data.json"
	// The kinds below are seedinit's own: a cloud's network metadata in
	// JSON, as its datasource keeps it (the datasource's NetworkFormat).
	//
	// KindEC2: the "network" tree of EC2's instance metadata.
	KindEC2 = "ec2"
	// KindDigitalOcean: {"interfaces": ..., "dns": ...} of v1.json.
	KindDigitalOcean = "digitalocean"
	// KindVultr: {"interfaces": [...]} of Vultr's v1.json.
	KindVultr = "vultr"
	// KindAzureIMDS: the "network" object of Azure's IMDS document.
	KindAzureIMDS = "azure-imds"
	// KindOracleVNICs: Oracle Cloud's VNIC list (/opc/v2/vnics/).
	KindOracleVNICs = "oracle-vnics"
)

// Output kinds, as `cloud-init devel net-convert --output-kind` names
// them, plus seedinit's JSON dump of the model.
const (
	OutputENI       = "eni"
	OutputNetplan   = "netplan"
	OutputNetworkd  = "networkd"
	OutputSysconfig = "sysconfig"
	OutputJSON      = "json"
)

// KindForFormat is the input kind of a datasource's network config by its
// format (seed.Seed's NetworkFormat); false for formats no parser reads.
func KindForFormat(format string) (string, bool) {
	switch strings.ToLower(format) {
	case "eni":
		return KindENI, true
	case "network_data.json", "network_data", "openstack":
		return KindNetworkDataJSON, true
	case "v1", "v2", "yaml", "":
		return KindYAML, true
	case KindEC2, KindDigitalOcean, KindVultr, KindAzureIMDS, KindOracleVNICs:
		return strings.ToLower(format), true
	}
	return "", false
}

// InputKinds and OutputKinds list the accepted kinds, for flag help.
var (
	InputKinds  = []string{KindENI, KindYAML, KindNetworkDataJSON, KindEC2, KindDigitalOcean, KindVultr, KindAzureIMDS, KindOracleVNICs}
	OutputKinds = []string{OutputENI, OutputNetplan, OutputNetworkd, OutputSysconfig, OutputJSON}
)

// ErrDisabled is returned when the input is "network: {config: disabled}".
var ErrDisabled = parse.ErrDisabled

// ErrInvalidValue is returned, with no network and no files, when the
// input holds a value that is not what its key says (a MAC that is not
// a MAC, a name the kernel would refuse): see parse.ErrInvalidValue.
var ErrInvalidValue = parse.ErrInvalidValue

// MAC names one of the machine's NICs by its MAC address (net-convert's
// --mac name,mac[,driver]).
type MAC struct {
	Name    string
	Address string
	// Driver is the kernel driver bound to the NIC, when known.
	Driver string
}

// ParseMAC reads a --mac value "name,mac" or "name,mac,driver" (the
// driver matters to Azure's metadata only).
func ParseMAC(s string) (MAC, error) {
	fields := strings.Split(s, ",")
	if len(fields) < 2 || len(fields) > 3 || slices.Contains(fields, "") {
		return MAC{}, fmt.Errorf("parse --mac %s: want name,mac or name,mac,driver", strconv.Quote(s))
	}
	m := MAC{Name: fields[0], Address: fields[1]}
	if len(fields) == 3 {
		m.Driver = fields[2]
	}
	// The name becomes an interface name in the rendered files, as the
	// config's own names do, and is held to the same rules.
	if !parse.IsInterfaceName(m.Name) {
		return MAC{}, fmt.Errorf("parse --mac %s: name %s: not an interface name (1 to 15 of A-Z a-z 0-9 and - _ . @ +)", strconv.Quote(s), strconv.Quote(m.Name))
	}
	if !parse.IsMAC(m.Address) {
		return MAC{}, fmt.Errorf("parse --mac %s: %s: not a MAC address", strconv.Quote(s), strconv.Quote(m.Address))
	}
	return m, nil
}

// Parse reads input of the given kind into the network model. macs are
// the machine's NICs, for inputs that name NICs by MAC only.
func Parse(input []byte, kind string, macs []MAC) (*model.Network, error) {
	opts := parse.Options{MACs: map[string]string{}, Drivers: map[string]string{}}
	for _, m := range macs {
		opts.MACs[strings.ToLower(m.Address)] = m.Name
		if m.Driver != "" {
			opts.Drivers[m.Name] = m.Driver
		}
	}
	switch kind {
	case KindENI:
		return parse.ENI(input, opts)
	case KindYAML:
		return parse.YAML(input, opts)
	case KindNetworkDataJSON:
		return parse.NetworkDataJSON(input, opts)
	case KindEC2:
		return parse.EC2(input, opts)
	case KindDigitalOcean:
		return parse.DigitalOcean(input, opts)
	case KindVultr:
		return parse.Vultr(input, opts)
	case KindAzureIMDS:
		return parse.AzureIMDS(input, opts)
	case KindOracleVNICs:
		return parse.OracleVNICs(input, opts)
	}
	return nil, fmt.Errorf("parse network config: unknown input kind %q (want %s)", kind, strings.Join(InputKinds, ", "))
}

// Render writes the model in the given output kind. Files whose path is
// not a plain relative path (see CheckOutputPath) are refused whole.
func Render(n *model.Network, outputKind string) (render.Files, error) {
	var files render.Files
	var err error
	switch outputKind {
	case OutputENI:
		files, err = render.ENI(n)
	case OutputNetplan:
		files, err = render.Netplan(n)
	case OutputNetworkd:
		files, err = render.Networkd(n)
	case OutputSysconfig:
		files, err = render.Sysconfig(n)
	case OutputJSON:
		files, err = render.JSON(n)
	default:
		return nil, fmt.Errorf("render network config: unknown output kind %q (want %s)", outputKind, strings.Join(OutputKinds, ", "))
	}
	for p := range files {
		if perr := CheckOutputPath(p); perr != nil {
			return nil, fmt.Errorf("render network config as %s: %w", outputKind, perr)
		}
	}
	return files, err
}

// ErrOutputPath is returned for a rendered file whose path would not stay
// under the directory it is written to.
var ErrOutputPath = render.ErrOutputPath

// CheckOutputPath is render.CheckPath: it accepts the path of a rendered
// file when it is relative, clean and has no "..".
func CheckOutputPath(p string) error { return render.CheckPath(p) }

// Convert does what `cloud-init devel net-convert` does: it reads input of
// kind (eni, yaml, network_data.json) and returns the files the output
// kind (eni, netplan, networkd, sysconfig, json) consists of, keyed by the
// path cloud-init writes under its -d OUTDIR (for example
// "etc/network/interfaces.d/50-cloud-init"); eni output uses Debian's
// paths and sysconfig RHEL's, as net-convert does with -D debian and -D
// centos.
//
// Items of the input that cannot be used are reported in the returned
// error, each naming its key or index, while the files hold everything
// else: a caller may write them and report the error. When nothing could
// be parsed at all, or a value was invalid (ErrInvalidValue: the whole
// input is refused), the files are nil. ErrDisabled means the input
// asked for no network configuration.
func Convert(input []byte, kind, outputKind string, macs []MAC) (map[string][]byte, error) {
	if !contains(OutputKinds, outputKind) {
		return nil, fmt.Errorf("convert network config: unknown output kind %q (want %s)", outputKind, strings.Join(OutputKinds, ", "))
	}
	n, parseErr := Parse(input, kind, macs)
	if n == nil {
		return nil, parseErr
	}
	files, renderErr := Render(n, outputKind)
	return files, errors.Join(parseErr, renderErr)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
