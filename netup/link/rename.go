package link

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/seedinit/seedinit/netup/model"
)

// Rule asks for the NIC with MAC (and Driver, when set) to be called Name.
type Rule struct {
	MAC    string
	Name   string
	Driver string
}

// Renamed records one rename that was done.
type Renamed struct {
	MAC  string
	From string
	To   string
}

// tempNameFormat is cloud-init's: a NIC that sits on a name another NIC
// wants is moved aside to cirename0, cirename1, ... and one without a rule
// of its own keeps that name, as it would under cloud-init.
const tempNameFormat = "cirename%d"

// RulesFromNetwork returns a rule for each physical interface of n that
// names a MAC address: v1 physical mac_address+name, v2 match.macaddress +
// set-name, network_data.json ethernet_mac_address, as cloud-init's
// extract_physdevs does.
func RulesFromNetwork(n *model.Network) []Rule {
	if n == nil {
		return nil
	}
	var rules []Rule
	for _, iface := range n.Interfaces {
		if iface.Type != model.TypePhysical || iface.MACAddress == "" || iface.Name == "" {
			continue
		}
		rules = append(rules, Rule{MAC: iface.MACAddress, Name: iface.Name, Driver: iface.Driver})
	}
	return rules
}

// Rename renames the NICs the rules name, through netlink, with each link
// down while it is renamed and brought back up afterwards if it was up.
// Swaps (eth0<->eth1) and names held by other NICs go through temporary
// names. Rules that cannot be followed (no such MAC, two NICs with one
// MAC, an invalid name, a name another rule already claims) are reported
// in the error and the rest are done. If a netlink operation fails, every
// rename already done is undone, so the NICs are left as they were.
func Rename(rules []Rule) ([]Renamed, error) {
	return rename(netlinkOps{}, rules)
}

// device is one link as the planner tracks it.
type device struct {
	name   string
	mac    string
	driver string
	up     bool
	// renameable is false for bonds, bridges, VLANs and other links that
	// share a NIC's MAC but are never what a rule means.
	renameable bool
}

type ops interface {
	list() ([]*device, error)
	setUp(name string) error
	setDown(name string) error
	setName(from, to string) error
}

type opKind int

const (
	opDown opKind = iota
	opUp
	opRename
)

type op struct {
	kind     opKind
	name, to string
	mac      string
}

func (o op) String() string {
	switch o.kind {
	case opDown:
		return "set " + o.name + " down"
	case opUp:
		return "set " + o.name + " up"
	}
	return "rename " + o.name + " to " + o.to
}

func rename(sys ops, rules []Rule) ([]Renamed, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	devs, err := sys.list()
	if err != nil {
		return nil, fmt.Errorf("rename network devices: list links: %w", err)
	}
	plan, ups, errs := planRenames(devs, rules)

	var done []op
	fail := func(o op, err error) ([]Renamed, error) {
		errs = append(errs, fmt.Errorf("rename network devices: %s: %w", o, err))
		for i := len(done) - 1; i >= 0; i-- {
			if err := undo(sys, done[i]); err != nil {
				errs = append(errs, fmt.Errorf("roll back %s: %w", done[i], err))
			}
		}
		return nil, errors.Join(errs...)
	}
	for _, o := range plan {
		if err := apply(sys, o); err != nil {
			return fail(o, err)
		}
		done = append(done, o)
	}
	for _, o := range ups {
		// A link that will not come back up keeps its new name: the
		// rename itself worked and undoing it would not bring it up either.
		if err := apply(sys, o); err != nil {
			errs = append(errs, fmt.Errorf("rename network devices: %s: %w", o, err))
		}
	}
	var renamed []Renamed
	for _, o := range plan {
		if o.kind == opRename {
			renamed = append(renamed, Renamed{MAC: o.mac, From: o.name, To: o.to})
		}
	}
	return renamed, errors.Join(errs...)
}

func apply(sys ops, o op) error {
	switch o.kind {
	case opDown:
		return sys.setDown(o.name)
	case opUp:
		return sys.setUp(o.name)
	}
	return sys.setName(o.name, o.to)
}

func undo(sys ops, o op) error {
	switch o.kind {
	case opDown:
		return sys.setUp(o.name)
	case opUp:
		return sys.setDown(o.name)
	}
	return sys.setName(o.to, o.name)
}

// planRenames works out the operations in cloud-init's order: for each
// rule, down the NIC, move whoever holds the wanted name aside to a
// temporary name, rename; the links that were up are brought up at the end.
func planRenames(devs []*device, rules []Rule) (plan, ups []op, errs []error) {
	byName := map[string]*device{}
	for _, d := range devs {
		byName[d.name] = d
	}
	claimedName := map[string]string{} // wanted name -> MAC that claims it
	claimedMAC := map[string]string{}  // MAC -> wanted name
	tmp := -1
	for i, r := range rules {
		mac := strings.ToLower(r.MAC)
		where := fmt.Sprintf("rename rule %d (%s to %q)", i, mac, r.Name)
		if hw, err := net.ParseMAC(mac); err != nil || len(hw) == 0 {
			errs = append(errs, fmt.Errorf("%s: invalid MAC address", where))
			continue
		}
		if err := validName(r.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if other, ok := claimedName[r.Name]; ok && other != mac {
			errs = append(errs, fmt.Errorf("%s: name already given to %s by an earlier rule", where, other))
			continue
		}
		if other, ok := claimedMAC[mac]; ok {
			if other != r.Name {
				errs = append(errs, fmt.Errorf("%s: MAC already named %q by an earlier rule", where, other))
			}
			continue
		}
		var matches []*device
		for _, d := range devs {
			if d.renameable && d.mac == mac && (r.Driver == "" || r.Driver == d.driver) {
				matches = append(matches, d)
			}
		}
		switch len(matches) {
		case 0:
			errs = append(errs, fmt.Errorf("%s: no such network device", where))
			continue
		case 1:
		default:
			var names []string
			for _, d := range matches {
				names = append(names, d.name)
			}
			errs = append(errs, fmt.Errorf("%s: MAC matches several devices (%s)", where, strings.Join(names, ", ")))
			continue
		}
		claimedName[r.Name] = mac
		claimedMAC[mac] = r.Name
		cur := matches[0]
		if cur.name == r.Name {
			continue
		}
		if cur.up {
			plan = append(plan, op{kind: opDown, name: cur.name, mac: mac})
			cur.up = false
			ups = append(ups, op{kind: opUp, name: r.Name, mac: mac})
		}
		if holder := byName[r.Name]; holder != nil {
			holderWasUp := holder.up
			if holder.up {
				plan = append(plan, op{kind: opDown, name: holder.name, mac: holder.mac})
				holder.up = false
			}
			var tmpName string
			for tmpName == "" || byName[tmpName] != nil {
				tmp++
				tmpName = fmt.Sprintf(tempNameFormat, tmp)
			}
			plan = append(plan, op{kind: opRename, name: holder.name, to: tmpName, mac: holder.mac})
			delete(byName, holder.name)
			holder.name = tmpName
			byName[tmpName] = holder
			if holderWasUp {
				ups = append(ups, op{kind: opUp, name: tmpName, mac: holder.mac})
			}
		}
		plan = append(plan, op{kind: opRename, name: cur.name, to: r.Name, mac: mac})
		delete(byName, cur.name)
		cur.name = r.Name
		byName[r.Name] = cur
	}
	// An up recorded under a name the link no longer has (it was moved
	// again by a later rule) is re-pointed at the link's final name.
	final := map[string]string{}
	for _, d := range byName {
		if d.renameable {
			final[d.mac] = d.name
		}
	}
	for n := range ups {
		if name, ok := final[ups[n].mac]; ok {
			ups[n].name = name
		}
	}
	return plan, dedupe(ups), errs
}

func dedupe(list []op) []op {
	seen := map[string]bool{}
	var out []op
	for _, o := range list {
		if !seen[o.name] {
			seen[o.name] = true
			out = append(out, o)
		}
	}
	return out
}

// validName applies the kernel's rules for interface names.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("empty interface name")
	case len(name) > 15:
		return fmt.Errorf("interface name longer than 15 bytes")
	case name == "." || name == "..":
		return fmt.Errorf("invalid interface name")
	case strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("interface name contains '/', ':' or white space")
	}
	return nil
}

// netlinkOps changes the links of the caller's network namespace.
type netlinkOps struct{}

func (netlinkOps) list() ([]*device, error) {
	links, err := RetryDump(netlink.LinkList)
	if err != nil {
		return nil, err
	}
	var devs []*device
	for _, l := range links {
		a := l.Attrs()
		d := &device{
			name: a.Name,
			mac:  normalizeMAC(a.HardwareAddr.String()),
			up:   a.Flags&net.FlagUp != 0,
		}
		switch l.Type() {
		case "bond", "bridge", "vlan", "macvlan", "macvtap", "ipvlan", "vxlan", "openvswitch":
		default:
			// A bond member shows its bond's MAC; the permanent address
			// is the one the config names.
			d.renameable = d.mac != "" && a.Name != "lo"
			if perm := normalizeMAC(a.PermHWAddr.String()); perm != "" && a.MasterIndex != 0 {
				d.mac = perm
			}
		}
		d.driver = driverOf(a.Name)
		devs = append(devs, d)
	}
	return devs, nil
}

func driverOf(name string) string {
	nic, err := readNIC(SysClassNet + "/" + name)
	if err != nil {
		return ""
	}
	return nic.Driver
}

func (netlinkOps) setUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

func (netlinkOps) setDown(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetDown(l)
}

func (netlinkOps) setName(from, to string) error {
	l, err := netlink.LinkByName(from)
	if err != nil {
		return err
	}
	return netlink.LinkSetName(l, to)
}
