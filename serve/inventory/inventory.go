// Package inventory reads the fleet `seedinit serve` serves: a folder of
// YAML files, one per instance or group, that an operator keeps in git.
//
//	# groups/waf.yaml
//	group: waf
//	hostname: waf-{{ index | pad 3 }}
//	pools:
//	  mgmt: {first: 10.20.0.10, last: 10.20.0.250, prefix: 24, gateway: 10.20.0.1}
//	meta-data:
//	  public-keys: [ssh-ed25519 AAAA... ops]
//	user-data:                      # a mapping is a #cloud-config
//	  users: [{name: admin, groups: [sudo]}]
//	network-config:
//	  version: 2
//	  ethernets:
//	    mgmt:
//	      match: {macaddress: "{{ mac }}"}
//	      addresses: ["{{ pool.mgmt.cidr }}"]
//
//	# instances/waf-007.yaml
//	instance: waf-007
//	groups: [waf]
//	selectors:
//	  mac: 52:54:00:00:00:07
//	  system-uuid: 4c4c4544-0042-3510-8052-b3c04f4d4e32
//	  serial: CZ1234567
//	  address: 10.99.0.7            # or a subnet, 10.99.7.0/24
//
// An instance is its groups' settings, in the order it names them, then
// its own, merged by one rule: mappings are merged key by key, at every
// depth; anything else (a scalar, a list, a text user-data) replaces what
// was there; the later wins, so the instance wins over its groups and a
// group over the groups named before it. Templates ({{ ... }}, see
// template.go) are then filled from the instance's own facts. Everything
// that can be wrong is found when the folder is loaded (`seedinit serve
// check`), each problem naming the file, line and key that caused it.
package inventory

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply/schema"
	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/trust"
	"github.com/seedinit/seedinit/seed/yaml11"
	"go.yaml.in/yaml/v3"
)

// The keys an instance's and a group's settings may have, merged by the
// rule above. hostname is meta-data's local-hostname unless meta-data
// names one.
var bodyKeys = []string{"hostname", "pools", "meta-data", "user-data", "vendor-data", "network-config"}

// The keys of an instance file beside its settings, and of a group file.
var (
	instanceKeys = append([]string{"instance", "description", "groups", "index", "selectors"}, bodyKeys...)
	groupKeys    = append([]string{"group", "description"}, bodyKeys...)
)

// maxFile caps one inventory file: settings, not software.
const maxFile = 4 << 20

// Inventory is a loaded folder.
type Inventory struct {
	Dir       string
	Groups    map[string]*Group
	Instances []*Instance // by name
	// Warnings are what check reports without failing: a schema
	// deprecation, a layout that cannot carry a part.
	Warnings Problems

	byName  map[string]*Instance
	byKey   map[string]selected
	byAddrs []addressSelector // longest prefix first
}

// Group is a group file: settings that instances naming it start from.
type Group struct {
	Name string
	File string
	doc  map[string]any
	pos  map[string]yaml11.Position
}

// Instance is one machine as served: its selectors and its parts, merged
// and filled.
type Instance struct {
	Name   string
	File   string
	Groups []string
	// Index is the instance's number (index: N, else the digits its name
	// ends in); HasIndex is false when it has neither.
	Index    int
	HasIndex bool
	Selectors

	InstanceID string
	Hostname   string
	// MetaData is NoCloud's meta-data as a mapping (instance-id and
	// local-hostname filled in); the layouts derive theirs from it.
	MetaData map[string]any
	// UserData and VendorData are the parts as served (a mapping becomes
	// a #cloud-config); nil when the inventory gives none.
	UserData, VendorData []byte
	// NetworkConfig is cloud-init's network config (v1 or v2) as served,
	// nil when none; NetworkDoc is the same document decoded.
	NetworkConfig []byte
	NetworkDoc    map[string]any
}

// Selectors are how a request is known to come from an instance.
type Selectors struct {
	// MACs and SystemUUIDs are normalized as seed/trust compares them
	// (lower case, colons), so that a manifest's bindings are these.
	MACs        []string
	SystemUUIDs []string
	Serials     []string
	// Addresses are source addresses or subnets the instance asks from.
	Addresses []netip.Prefix
}

// selected is what a URL's selector names: the instance and by which of
// its identifiers.
type selected struct {
	inst *Instance
	kind string
}

type addressSelector struct {
	prefix netip.Prefix
	inst   *Instance
}

// Problem is one thing wrong with the inventory, where it was written.
type Problem struct {
	File string // relative to the inventory's folder
	Line int    // 0 when not known
	// Key is the key path in the file ("user-data.users.0.name").
	Key string
	// Instance is the instance the problem is found for, when it comes
	// from a group's setting as filled for that instance.
	Instance string
	Msg      string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Msg)
	if p.Instance != "" {
		fmt.Fprintf(&b, " (instance %s)", p.Instance)
	}
	return b.String()
}

// Problems is the error of an inventory that does not load: every
// problem found, not only the first.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// file is one inventory file as read.
type file struct {
	name string
	doc  map[string]any
	pos  map[string]yaml11.Position
	// raw are the scalars below selectors as written, by key path: YAML
	// 1.1 reads an unquoted 52:54:00:00:00:01 as a number (base 60) and
	// a serial 0123 as 83, and a selector means the text.
	raw map[string]string
}

func (f *file) line(key string) int { return f.pos[key].Line }

// loader gathers the problems of one Load.
type loader struct {
	problems Problems
	warnings []Problem
	// schemaCache holds the schema's report of each cloud-config by
	// digest; poolAddrs the pool addresses given so far.
	schemaCache map[[sha256.Size]byte]*schema.Report
	poolAddrs   map[netip.Addr]poolUse
}

func (l *loader) errorf(file string, line int, key, format string, args ...any) {
	l.problems = append(l.problems, Problem{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Load reads every *.yaml and *.yml file below dir (names starting with
// a dot are passed over: .git, the state folder). The error is Problems
// when the inventory has any; the Inventory is then nil.
func Load(dir string) (*Inventory, error) {
	return LoadFS(os.DirFS(dir), dir)
}

// IsInventoryFile says whether Load reads the file at path (slash
// separated, relative to the inventory's folder): what a copy of an
// inventory (a database's) must keep.
func IsInventoryFile(path string) bool {
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

// LoadFS is Load of an inventory that is not a folder on this machine
// (one kept in a database for replicas), with the same checks; dir names
// it in the Inventory and in errors.
func LoadFS(fsys fs.FS, dir string) (*Inventory, error) {
	l := &loader{}
	var files []*file
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !IsInventoryFile(p) {
			return nil
		}
		if f := l.readFile(fsys, p); f != nil {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read inventory %s: %w", dir, err)
	}
	inv := &Inventory{Dir: dir, Groups: map[string]*Group{}, byName: map[string]*Instance{}, byKey: map[string]selected{}}
	var instFiles []*file
	for _, f := range files {
		_, isGroup := f.doc["group"]
		_, isInstance := f.doc["instance"]
		switch {
		case isGroup && isInstance:
			l.errorf(f.name, f.line("instance"), "", "a file is a group or an instance, not both")
		case isGroup:
			l.group(inv, f)
		case isInstance:
			instFiles = append(instFiles, f)
		default:
			l.errorf(f.name, 1, "", "neither group: NAME nor instance: NAME: every inventory file is one of them")
		}
	}
	for _, f := range instFiles {
		l.instance(inv, f)
	}
	sort.Slice(inv.Instances, func(i, j int) bool { return inv.Instances[i].Name < inv.Instances[j].Name })
	l.index(inv)
	if len(l.problems) > 0 {
		return nil, collapse(l.problems)
	}
	inv.Warnings = collapse(l.warnings)
	return inv, nil
}

// collapse sorts problems by file and line and makes one of those a
// group's setting caused for many instances alike: a typo in a group of
// a thousand instances is one problem, not a thousand.
func collapse(ps []Problem) Problems {
	type key struct {
		file string
		line int
		key  string
		msg  string
	}
	var out Problems
	seen := map[key]int{}
	more := map[int]int{}
	for _, p := range ps {
		k := key{p.File, p.Line, p.Key, p.Msg}
		if p.Instance != "" {
			// A group's setting: the first instance's message stands
			// for the others' (the same pool, short of other indexes).
			k.msg = ""
		}
		if i, dup := seen[k]; dup {
			more[i]++
			continue
		}
		seen[k] = len(out)
		out = append(out, p)
	}
	for i, n := range more {
		if out[i].Instance != "" {
			out[i].Instance += fmt.Sprintf(" and %d more", n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// readFile reads and decodes one file; nil when it cannot be used.
func (l *loader) readFile(fsys fs.FS, rel string) *file {
	data, err := readLimited(fsys, rel)
	if err != nil {
		l.errorf(rel, 0, "", "%v", err)
		return nil
	}
	v, err := yaml11.Load(data)
	if err != nil {
		line := 0
		var ye *yaml11.Error
		if errors.As(err, &ye) {
			line, err = ye.Line, errors.New(ye.Msg)
		}
		l.errorf(rel, line, "", "not YAML: %v", err)
		return nil
	}
	doc, ok := v.(map[string]any)
	if !ok {
		l.errorf(rel, 1, "", "want a mapping (group: or instance: and settings), got %s", yaml11.TypeName(v))
		return nil
	}
	pos, err := yaml11.Positions(data)
	if err != nil {
		pos = map[string]yaml11.Position{}
	}
	return &file{name: rel, doc: doc, pos: pos, raw: rawScalars(data, "selectors")}
}

// rawScalars maps the key path of each scalar below the top-level key
// under to its text as written.
func rawScalars(data []byte, under string) map[string]string {
	out := map[string]string{}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	var walk func(n *yaml.Node, path string, depth int)
	walk = func(n *yaml.Node, path string, depth int) {
		if depth > 4 {
			return
		}
		switch n.Kind {
		case yaml.ScalarNode:
			out[path] = n.Value
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, path+"."+strconv.Itoa(i), depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"."+n.Content[i].Value, depth+1)
			}
		}
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == under {
			walk(top.Content[i+1], under, 0)
		}
	}
	return out
}

func readLimited(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("more than %d MiB: an inventory file holds settings", maxFile>>20)
	}
	return b, nil
}

// checkKeys reports the keys of f that its kind does not have.
func (l *loader) checkKeys(f *file, allowed []string) {
	for k := range f.doc {
		if !slices.Contains(allowed, k) {
			l.errorf(f.name, f.line(k), k, "unknown key: want one of %s", strings.Join(allowed, ", "))
		}
	}
}

// name reads the group: or instance: key.
func (l *loader) name(f *file, key string) (string, bool) {
	s, ok := f.doc[key].(string)
	if !ok || !validName(s) {
		l.errorf(f.name, f.line(key), key, "want a name of letters, digits, '-', '_' and '.', got %s", describe(f.doc[key]))
		return "", false
	}
	return s, true
}

func (l *loader) group(inv *Inventory, f *file) {
	l.checkKeys(f, groupKeys)
	name, ok := l.name(f, "group")
	if !ok {
		return
	}
	if g, dup := inv.Groups[name]; dup {
		l.errorf(f.name, f.line("group"), "group", "group %s is also defined in %s", name, g.File)
		return
	}
	l.checkBody(f)
	l.checkTemplates(f)
	inv.Groups[name] = &Group{Name: name, File: f.name, doc: f.doc, pos: f.pos}
}

// checkTemplates parses a group's templates, so that one that cannot
// parse is reported even when no instance names the group.
func (l *loader) checkTemplates(f *file) {
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				walk(sub, path+"."+k)
			}
		case []any:
			for i, sub := range x {
				walk(sub, path+"."+strconv.Itoa(i))
			}
		case string:
			if hasTemplate(x) && !strings.HasPrefix(x, jinjaHeader) {
				if _, err := parseTemplate(x); err != nil {
					l.errorf(f.name, f.line(path), path, "%v", err)
				}
			}
		}
	}
	for _, k := range bodyKeys {
		if v, ok := f.doc[k]; ok && k != "pools" {
			walk(v, k)
		}
	}
}

// checkBody checks the types of the settings' keys where a file gives
// them, so that a wrong type is reported once, at its file.
func (l *loader) checkBody(f *file) {
	for _, k := range []string{"pools", "meta-data", "network-config"} {
		if v, ok := f.doc[k]; ok && v != nil {
			if _, isMap := v.(map[string]any); !isMap {
				l.errorf(f.name, f.line(k), k, "want a mapping, got %s", yaml11.TypeName(v))
			}
		}
	}
	for _, k := range []string{"user-data", "vendor-data"} {
		switch v := f.doc[k].(type) {
		case nil, string, map[string]any:
		default:
			l.errorf(f.name, f.line(k), k, "want a mapping (a cloud-config) or a text, got %s", yaml11.TypeName(v))
		}
	}
	if v, ok := f.doc["hostname"]; ok {
		if _, isString := v.(string); !isString {
			l.errorf(f.name, f.line("hostname"), "hostname", "want a string, got %s", yaml11.TypeName(v))
		}
	}
}

func (l *loader) instance(inv *Inventory, f *file) {
	l.checkKeys(f, instanceKeys)
	name, ok := l.name(f, "instance")
	if !ok {
		return
	}
	if other, dup := inv.byName[name]; dup {
		l.errorf(f.name, f.line("instance"), "instance", "instance %s is also defined in %s", name, other.File)
		return
	}
	inst := &Instance{Name: name, File: f.name}
	l.checkBody(f)
	switch v := f.doc["groups"].(type) {
	case nil:
	case []any:
		for i, g := range v {
			key := "groups." + strconv.Itoa(i)
			s, _ := g.(string)
			if _, known := inv.Groups[s]; !known {
				l.errorf(f.name, f.line(key), key, "no group %s in the inventory", describe(g))
				continue
			}
			inst.Groups = append(inst.Groups, s)
		}
	default:
		l.errorf(f.name, f.line("groups"), "groups", "want a list of group names, got %s", yaml11.TypeName(v))
	}
	switch v := f.doc["index"].(type) {
	case nil:
		inst.Index, inst.HasIndex = trailingNumber(name)
	case int64:
		if v < 0 || v > 1<<31 {
			l.errorf(f.name, f.line("index"), "index", "want a number from 0, got %d", v)
		}
		inst.Index, inst.HasIndex = int(v), true
	default:
		l.errorf(f.name, f.line("index"), "index", "want a whole number, got %s", describe(v))
	}
	l.selectors(f, inst)
	inv.byName[name] = inst
	inv.Instances = append(inv.Instances, inst)
	l.resolve(inv, f, inst)
}

// trailingNumber is the number a name ends in: waf-007 is 7.
func trailingNumber(name string) (int, bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || len(name)-i > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(name[i:])
	return n, err == nil
}

// selectors reads the instance's selectors, each a value or a list.
func (l *loader) selectors(f *file, inst *Instance) {
	v, ok := f.doc["selectors"]
	if !ok || v == nil {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		l.errorf(f.name, f.line("selectors"), "selectors", "want a mapping of mac, system-uuid, serial, address; got %s", yaml11.TypeName(v))
		return
	}
	for kind, val := range m {
		key := "selectors." + kind
		var items []any
		if list, isList := val.([]any); isList {
			items = list
		} else {
			items = []any{val}
		}
		for i, item := range items {
			itemKey := key
			if _, isList := val.([]any); isList {
				itemKey = key + "." + strconv.Itoa(i)
			}
			s, isString := item.(string)
			if raw, ok := f.raw[itemKey]; ok && item != nil && !isString {
				s, isString = raw, true
			}
			if !isString || s == "" {
				l.errorf(f.name, f.line(itemKey), itemKey, "want a string, got %s", describe(item))
				continue
			}
			switch kind {
			case "mac":
				mac, err := trust.NormalizeMAC(s)
				if err != nil {
					l.errorf(f.name, f.line(itemKey), itemKey, "%v", err)
					continue
				}
				inst.MACs = append(inst.MACs, mac)
			case "system-uuid":
				u, err := trust.NormalizeSystemUUID(s)
				if err != nil {
					l.errorf(f.name, f.line(itemKey), itemKey, "%v", err)
					continue
				}
				inst.SystemUUIDs = append(inst.SystemUUIDs, u)
			case "serial":
				inst.Serials = append(inst.Serials, s)
			case "address":
				p, err := parseAddressSelector(s)
				if err != nil {
					l.errorf(f.name, f.line(itemKey), itemKey, "%v", err)
					continue
				}
				inst.Addresses = append(inst.Addresses, p)
			default:
				l.errorf(f.name, f.line(key), key, "unknown selector: want mac, system-uuid, serial or address")
			}
		}
	}
}

// parseAddressSelector reads an address (a /32 or /128) or a subnet, its
// host bits zero.
func parseAddressSelector(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q: want an address or a subnet (10.99.0.7, 10.99.7.0/24)", s)
		}
		if p.Masked() != p {
			return netip.Prefix{}, fmt.Errorf("%q: a subnet's host bits are zero: %s", s, p.Masked())
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q: want an address or a subnet (10.99.0.7, 10.99.7.0/24)", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// describe names a value in a message without printing much of it.
func describe(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(clip(s))
	}
	return yaml11.TypeName(v)
}

// Lookup finds the instance a URL's selector names: its name, its
// instance-id, a system UUID, a MAC or a serial (cloud-init's
// __dmi.system-uuid__ and the like fill them in). kind says which.
func (inv *Inventory) Lookup(selector string) (inst *Instance, kind string, ok bool) {
	for _, key := range selectorKeys(selector) {
		if s, found := inv.byKey[key]; found {
			return s.inst, s.kind, true
		}
	}
	return nil, "", false
}

// selectorKeys are the index keys a URL selector may stand for.
func selectorKeys(s string) []string {
	keys := []string{"name:" + s, "instance-id:" + s}
	if u, err := trust.NormalizeSystemUUID(s); err == nil {
		keys = append(keys, "system-uuid:"+u)
	}
	if m, err := trust.NormalizeMAC(s); err == nil {
		keys = append(keys, "mac:"+m)
	}
	return append(keys, "serial:"+s)
}

// ByAddress finds the instance whose address selector holds a: the
// longest prefix that does.
func (inv *Inventory) ByAddress(a netip.Addr) (*Instance, bool) {
	a = a.Unmap()
	for _, s := range inv.byAddrs {
		if s.prefix.Contains(a) {
			return s.inst, true
		}
	}
	return nil, false
}

// Instance finds an instance by name.
func (inv *Inventory) Instance(name string) (*Instance, bool) {
	i, ok := inv.byName[name]
	return i, ok
}

// AddReportURL gives each instance whose meta-data names no report URL
// (seed.ReportURLKey) BASE/report/NAME, where `seedinit serve` takes
// seedinit's report after its final stage. It is meta-data like the rest,
// so a manifest signed after it covers it. base must be an http or https
// URL the instances can reach.
func (inv *Inventory) AddReportURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("report URL %q: want http://HOST[:PORT][/PATH] that instances reach this server at", base)
	}
	base = strings.TrimSuffix(u.String(), "/")
	for _, inst := range inv.Instances {
		if v, ok := inst.MetaData[seed.ReportURLKey]; ok && v != nil && v != "" {
			continue
		}
		// A copy: an instance's meta-data may share its map with no
		// other, but nothing here promises it.
		md := maps.Clone(inst.MetaData)
		if md == nil {
			md = map[string]any{}
		}
		md[seed.ReportURLKey] = base + "/report/" + url.PathEscape(inst.Name)
		inst.MetaData = md
	}
	return nil
}

// HasAddress says whether a is one an address selector of inst holds.
func (inst *Instance) HasAddress(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range inst.Addresses {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// index builds the lookups and finds what two instances share: an
// identifier that selects both would serve one's seed to the other.
func (l *loader) index(inv *Inventory) {
	seen := map[string]*Instance{}
	add := func(inst *Instance, kind, value string, what string) {
		key := kind + ":" + value
		if other, dup := seen[key]; dup && other != inst {
			l.errorf(inst.File, 0, "", "%s %s is also %s's: a request could not tell them apart", what, value, other.Name)
			return
		}
		seen[key] = inst
		inv.byKey[key] = selected{inst: inst, kind: kind}
	}
	for _, inst := range inv.Instances {
		add(inst, "name", inst.Name, "name")
		if inst.InstanceID != "" {
			add(inst, "instance-id", inst.InstanceID, "instance-id")
		}
		for _, u := range inst.SystemUUIDs {
			add(inst, "system-uuid", u, "system-uuid")
		}
		for _, m := range inst.MACs {
			add(inst, "mac", m, "mac")
		}
		for _, s := range inst.Serials {
			add(inst, "serial", s, "serial")
		}
	}
	// A value that selects one instance by one kind and another by
	// another (a serial that is another's name) is ambiguous in a URL.
	owners := map[string]*Instance{}
	for key, s := range inv.byKey {
		_, value, _ := strings.Cut(key, ":")
		for _, k := range selectorKeys(value) {
			if o, ok := inv.byKey[k]; ok && o.inst != s.inst {
				if prev, done := owners[value]; !done || prev != o.inst {
					owners[value] = o.inst
					a, b := s.inst, o.inst
					if a.Name > b.Name {
						a, b = b, a
					}
					l.errorf(a.File, 0, "", "%q selects %s and %s in a URL (as %s and %s)", value, a.Name, b.Name, kindOf(inv, a, value), kindOf(inv, b, value))
				}
			}
		}
	}
	hosts := map[string]*Instance{}
	for _, inst := range inv.Instances {
		for _, p := range inst.Addresses {
			inv.byAddrs = append(inv.byAddrs, addressSelector{prefix: p, inst: inst})
		}
		if inst.Hostname == "" {
			continue
		}
		if other, dup := hosts[inst.Hostname]; dup {
			l.errorf(inst.File, 0, "hostname", "hostname %s is also %s's", inst.Hostname, other.Name)
			continue
		}
		hosts[inst.Hostname] = inst
	}
	sort.SliceStable(inv.byAddrs, func(i, j int) bool { return inv.byAddrs[i].prefix.Bits() > inv.byAddrs[j].prefix.Bits() })
	for i := 1; i < len(inv.byAddrs); i++ {
		a, b := inv.byAddrs[i-1], inv.byAddrs[i]
		if a.prefix == b.prefix && a.inst != b.inst {
			l.errorf(b.inst.File, 0, "selectors.address", "%s is also %s's: a request from there could not be told apart", b.prefix, a.inst.Name)
		}
	}
}

func kindOf(inv *Inventory, inst *Instance, value string) string {
	for _, k := range selectorKeys(value) {
		if s, ok := inv.byKey[k]; ok && s.inst == inst {
			return s.kind
		}
	}
	return "?"
}
