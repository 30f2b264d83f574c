package inventory

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply/schema"
	"github.com/seedinit/seedinit/netup/parse"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// origin is where a merged value was written.
type origin struct {
	file string
	line int
}

// merged is an instance's settings, its groups' and its own merged, with
// where each value (by key path) was written.
type merged struct {
	doc    map[string]any
	origin map[string]origin
}

func (m *merged) merge(src map[string]any, file string, pos map[string]yaml11.Position) {
	for _, k := range bodyKeys {
		if v, ok := src[k]; ok {
			m.set(m.doc, k, v, k, file, pos)
		}
	}
}

// set puts v at key of dst (whose path is path): a mapping over a mapping
// is merged key by key, anything else replaces.
func (m *merged) set(dst map[string]any, key string, v any, path, file string, pos map[string]yaml11.Position) {
	if cur, ok := dst[key].(map[string]any); ok {
		if vm, ok := v.(map[string]any); ok {
			m.origin[path] = origin{file, pos[path].Line}
			for k, sub := range vm {
				m.set(cur, k, sub, path+"."+k, file, pos)
			}
			return
		}
	}
	for p := range m.origin {
		if strings.HasPrefix(p, path+".") {
			delete(m.origin, p)
		}
	}
	dst[key] = deepCopy(v)
	m.record(v, path, file, pos)
}

func (m *merged) record(v any, path, file string, pos map[string]yaml11.Position) {
	m.origin[path] = origin{file, pos[path].Line}
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			m.record(sub, path+"."+k, file, pos)
		}
	case []any:
		for i, sub := range x {
			m.record(sub, path+"."+strconv.Itoa(i), file, pos)
		}
	}
}

// where is the origin of path, or of the nearest key above it that has
// one.
func (m *merged) where(path string) origin {
	for {
		if o, ok := m.origin[path]; ok {
			return o
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return origin{}
		}
		path = path[:i]
	}
}

// deepCopy copies the mappings and lists of a decoded value: a group's
// document is shared by its instances, and yaml11 shares an alias's value
// with its anchor.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, sub := range x {
			out[k] = deepCopy(sub)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, sub := range x {
			out[i] = deepCopy(sub)
		}
		return out
	}
	return v
}

// resolver fills one instance.
type resolver struct {
	l    *loader
	inv  *Inventory
	inst *Instance
	m    *merged
	// unfilled counts the templates that could not be filled: a part
	// with one is not checked further, its problem said.
	unfilled int
}

// problem reports msg at the origin of path, naming the instance when the
// value was written elsewhere (in a group).
func (r *resolver) problem(path, format string, args ...any) {
	o := r.m.where(path)
	p := Problem{File: o.file, Line: o.line, Key: path, Msg: fmt.Sprintf(format, args...)}
	if p.File == "" {
		p.File = r.inst.File
	}
	if p.File != r.inst.File {
		p.Instance = r.inst.Name
	}
	r.l.problems = append(r.l.problems, p)
}

func (r *resolver) warn(path, format string, args ...any) {
	n := len(r.l.problems)
	r.problem(path, format, args...)
	r.l.warnings = append(r.l.warnings, r.l.problems[n])
	r.l.problems = r.l.problems[:n]
}

// resolve merges inst's groups and its own settings and fills them.
func (l *loader) resolve(inv *Inventory, f *file, inst *Instance) {
	m := &merged{doc: map[string]any{}, origin: map[string]origin{}}
	for _, g := range inst.Groups {
		grp := inv.Groups[g]
		m.merge(grp.doc, grp.File, grp.pos)
	}
	m.merge(f.doc, f.name, f.pos)
	r := &resolver{l: l, inv: inv, inst: inst, m: m}

	if h, ok := m.doc["hostname"].(string); ok {
		inst.Hostname = r.fillString(h, "hostname")
	}
	md := map[string]any{}
	if v, ok := m.doc["meta-data"].(map[string]any); ok {
		md = r.fill(v, "meta-data").(map[string]any)
	}
	switch id := md["instance-id"].(type) {
	case nil:
		md["instance-id"] = inst.Name
		inst.InstanceID = inst.Name
	case string:
		if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "\n\r/") {
			r.problem("meta-data.instance-id", "want an instance-id without spaces around it, new lines or /, got %q", clip(id))
		}
		inst.InstanceID = id
	default:
		r.problem("meta-data.instance-id", "want a string, got %s", yaml11.TypeName(id))
	}
	switch h := md["local-hostname"].(type) {
	case nil:
		if inst.Hostname != "" {
			md["local-hostname"] = inst.Hostname
		}
	case string:
		inst.Hostname = h
	default:
		r.problem("meta-data.local-hostname", "want a string, got %s", yaml11.TypeName(h))
	}
	inst.MetaData = md
	inst.UserData = r.part("user-data")
	inst.VendorData = r.part("vendor-data")
	if v, ok := m.doc["network-config"].(map[string]any); ok {
		before := r.unfilled
		doc := r.fill(v, "network-config").(map[string]any)
		inst.NetworkDoc = doc
		inst.NetworkConfig = MarshalYAML(doc)
		if _, err := parse.YAML(inst.NetworkConfig, parse.Options{}); r.unfilled == before && err != nil && !errors.Is(err, parse.ErrDisabled) {
			r.problem("network-config", "%v", err)
		}
	}
}

// part is user-data or vendor-data as served: a mapping as a
// #cloud-config, a text as it is; each checked against cloud-init's
// schema when it is a cloud-config.
func (r *resolver) part(key string) []byte {
	switch v := r.m.doc[key].(type) {
	case map[string]any:
		before := r.unfilled
		filled := r.fill(v, key).(map[string]any)
		out := append([]byte(schema.Header+"\n"), MarshalYAML(filled)...)
		if r.unfilled > before {
			return out
		}
		r.checkSchema(key, out, func(p schema.Problem) string {
			if strings.HasPrefix(p.Path, "format-") {
				return key
			}
			return key + "." + p.Path
		}, 0)
		return out
	case string:
		// A jinja template is cloud-init's to render, on the instance,
		// with its own {{ }}.
		if strings.HasPrefix(v, jinjaHeader) {
			return []byte(v)
		}
		before := r.unfilled
		out := []byte(r.fillString(v, key))
		if strings.HasPrefix(v, schema.Header) && r.unfilled == before {
			r.checkSchema(key, out, func(schema.Problem) string { return key }, r.m.where(key).line)
		}
		return out
	}
	return nil
}

// jinjaHeader starts a user-data that cloud-init renders with jinja.
const jinjaHeader = "## template: jinja"

// checkSchema validates a cloud-config part and reports its problems
// where the inventory wrote them: keyOf maps a problem to the key path
// in the inventory; for a text part, textLine is the line of its key, and
// the problem's line in the text is counted from there.
func (r *resolver) checkSchema(key string, content []byte, keyOf func(schema.Problem) string, textLine int) {
	rep, err := r.l.validate(content, key)
	if err != nil {
		r.problem(key, "%v", err)
		return
	}
	if rep.NotMapping {
		r.problem(key, "a cloud-config is a mapping of keys")
	}
	report := func(p schema.Problem, warn bool) {
		msg := p.Message
		if textLine > 0 && p.Line > 0 {
			// The block scalar's text starts on the line after its key.
			msg = fmt.Sprintf("line %d of the text (about line %d of the file): %s: %s", p.Line, textLine+p.Line, p.Path, msg)
		}
		if warn {
			r.warn(keyOf(p), "%s", msg)
		} else {
			r.problem(keyOf(p), "%s", msg)
		}
	}
	for _, p := range rep.Errors {
		report(p, false)
	}
	for _, p := range rep.Deprecations {
		report(p, true)
	}
}

// validate checks a cloud-config once per content: a fleet's instances
// mostly share theirs.
func (l *loader) validate(content []byte, name string) (*schema.Report, error) {
	if l.schemaCache == nil {
		l.schemaCache = map[[sha256.Size]byte]*schema.Report{}
	}
	d := sha256.Sum256(content)
	if rep, ok := l.schemaCache[d]; ok {
		return rep, nil
	}
	rep, err := schema.Validate(content, name)
	if err == nil {
		l.schemaCache[d] = rep
	}
	return rep, err
}

// fill returns v with every template in its strings filled; path is its
// key path.
func (r *resolver) fill(v any, path string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, sub := range x {
			out[k] = r.fill(sub, path+"."+k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, sub := range x {
			out[i] = r.fill(sub, path+"."+strconv.Itoa(i))
		}
		return out
	case string:
		return r.fillString(x, path)
	}
	return v
}

func (r *resolver) fillString(s, path string) string {
	if !hasTemplate(s) {
		return s
	}
	t, err := parseTemplate(s)
	if err != nil {
		r.unfilled++
		r.problem(path, "%v", err)
		return s
	}
	out, err := t.fill(r.fact)
	if err != nil {
		r.unfilled++
		r.problem(path, "%v", err)
		return s
	}
	return out
}

// fact is one of the instance's facts, for its templates.
func (r *resolver) fact(name string) (string, error) {
	inst := r.inst
	first := func(values []string, what string) (string, error) {
		if len(values) == 0 {
			return "", fmt.Errorf("{{ %s }}: the instance has no %s selector", name, what)
		}
		return values[0], nil
	}
	switch name {
	case "name":
		return inst.Name, nil
	case "index":
		if !inst.HasIndex {
			return "", errors.New("{{ index }}: the instance has none: give it index: N, or end its name in digits")
		}
		return strconv.Itoa(inst.Index), nil
	case "mac":
		return first(inst.MACs, "mac")
	case "system-uuid":
		return first(inst.SystemUUIDs, "system-uuid")
	case "serial":
		return first(inst.Serials, "serial")
	case "group":
		return first(inst.Groups, "group (groups:)")
	case "address":
		for _, p := range inst.Addresses {
			if p.IsSingleIP() {
				return p.Addr().String(), nil
			}
		}
		return "", errors.New("{{ address }}: the instance has no address selector of one address")
	}
	rest, _ := strings.CutPrefix(name, "pool.")
	poolName, field, _ := strings.Cut(rest, ".")
	p, err := r.pool(poolName)
	if err != nil {
		return "", fmt.Errorf("{{ %s }}: %w", name, err)
	}
	addr, err := p.addressOf(inst)
	if err != nil {
		return "", fmt.Errorf("{{ %s }}: %w", name, err)
	}
	r.l.claimPoolAddress(addr, inst, poolName)
	switch field {
	case "":
		return addr.String(), nil
	case "cidr":
		if p.prefix == 0 {
			return "", fmt.Errorf("{{ %s }}: pool %s has no prefix: give it prefix: 24", name, poolName)
		}
		return netip.PrefixFrom(addr, p.prefix).String(), nil
	case "prefix":
		if p.prefix == 0 {
			return "", fmt.Errorf("{{ %s }}: pool %s has no prefix: give it prefix: 24", name, poolName)
		}
		return strconv.Itoa(p.prefix), nil
	case "gateway":
		if !p.gateway.IsValid() {
			return "", fmt.Errorf("{{ %s }}: pool %s has no gateway", name, poolName)
		}
		return p.gateway.String(), nil
	}
	return "", fmt.Errorf("{{ %s }}: unknown pool field", name)
}

// addressPool is pools.NAME: the addresses from first to last, given to
// instances by their index (index 1 is first).
type addressPool struct {
	name        string
	first, last netip.Addr
	prefix      int
	gateway     netip.Addr
}

// pool reads pools.NAME of the merged settings; a problem in it is the
// pool's, reported once at the pool.
func (r *resolver) pool(name string) (*addressPool, error) {
	path := "pools." + name
	pools, _ := r.m.doc["pools"].(map[string]any)
	v, ok := pools[name]
	if !ok {
		return nil, fmt.Errorf("no pool %s in the instance's or its groups' pools", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("pool %s (%s): want a mapping of first, last, prefix, gateway", name, r.at(path))
	}
	p := &addressPool{name: name}
	addr := func(key string, required bool) (netip.Addr, error) {
		s, ok := m[key].(string)
		if !ok {
			if m[key] == nil && !required {
				return netip.Addr{}, nil
			}
			return netip.Addr{}, fmt.Errorf("pool %s: %s (%s): want an address, got %s", name, key, r.at(path+"."+key), describe(m[key]))
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Addr{}, fmt.Errorf("pool %s: %s %q (%s): want an address", name, key, s, r.at(path+"."+key))
		}
		return a.Unmap(), nil
	}
	var err error
	if p.first, err = addr("first", true); err != nil {
		return nil, err
	}
	if p.last, err = addr("last", false); err != nil {
		return nil, err
	}
	if p.gateway, err = addr("gateway", false); err != nil {
		return nil, err
	}
	switch n := m["prefix"].(type) {
	case nil:
	case int64:
		if n < 1 || int(n) > p.first.BitLen() {
			return nil, fmt.Errorf("pool %s: prefix %d (%s): want 1 to %d", name, n, r.at(path+".prefix"), p.first.BitLen())
		}
		p.prefix = int(n)
	default:
		return nil, fmt.Errorf("pool %s: prefix (%s): want a number of bits, got %s", name, r.at(path+".prefix"), describe(n))
	}
	for k := range m {
		switch k {
		case "first", "last", "prefix", "gateway":
		default:
			return nil, fmt.Errorf("pool %s: unknown key %s (%s): want first, last, prefix, gateway", name, k, r.at(path+"."+k))
		}
	}
	if p.last.IsValid() && (p.last.BitLen() != p.first.BitLen() || p.last.Less(p.first)) {
		return nil, fmt.Errorf("pool %s: last %s (%s) is before first %s", name, p.last, r.at(path+".last"), p.first)
	}
	if p.prefix > 0 {
		net := netip.PrefixFrom(p.first, p.prefix).Masked()
		if p.last.IsValid() && !net.Contains(p.last) {
			return nil, fmt.Errorf("pool %s: last %s is outside %s", name, p.last, net)
		}
		if p.gateway.IsValid() && !net.Contains(p.gateway) {
			return nil, fmt.Errorf("pool %s: gateway %s is outside %s", name, p.gateway, net)
		}
	}
	return p, nil
}

// at names where the key path was written, "groups/waf.yaml:7".
func (r *resolver) at(path string) string {
	o := r.m.where(path)
	if o.line > 0 {
		return fmt.Sprintf("%s:%d", o.file, o.line)
	}
	return o.file
}

// addressOf is the pool's address for inst: first, plus its index less
// one.
func (p *addressPool) addressOf(inst *Instance) (netip.Addr, error) {
	if !inst.HasIndex || inst.Index < 1 {
		return netip.Addr{}, fmt.Errorf("pool %s gives addresses by index from 1: give the instance index: N, or end its name in digits", p.name)
	}
	a, ok := addrAdd(p.first, uint64(inst.Index-1))
	if !ok {
		return netip.Addr{}, fmt.Errorf("pool %s runs out of addresses before index %d", p.name, inst.Index)
	}
	if p.last.IsValid() && p.last.Less(a) {
		return netip.Addr{}, fmt.Errorf("pool %s (%s to %s) has no address for index %d", p.name, p.first, p.last, inst.Index)
	}
	if p.gateway.IsValid() && a == p.gateway {
		return netip.Addr{}, fmt.Errorf("pool %s gives index %d its gateway %s", p.name, inst.Index, a)
	}
	return a, nil
}

// addrAdd is a + n, false past the end of its family.
func addrAdd(a netip.Addr, n uint64) (netip.Addr, bool) {
	b := a.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	lo2, carry := bits.Add64(lo, n, 0)
	hi2, over := bits.Add64(hi, 0, carry)
	if over != 0 {
		return netip.Addr{}, false
	}
	binary.BigEndian.PutUint64(b[:8], hi2)
	binary.BigEndian.PutUint64(b[8:], lo2)
	out := netip.AddrFrom16(b)
	if a.Is4() {
		if hi2 != hi || lo2>>32 != lo>>32 {
			return netip.Addr{}, false
		}
		out = out.Unmap()
	}
	return out, true
}

// poolUse is an address a pool gave an instance.
type poolUse struct {
	inst *Instance
	pool string
}

// claimPoolAddress notes that inst was given addr; one given to two
// instances is a problem.
func (l *loader) claimPoolAddress(addr netip.Addr, inst *Instance, pool string) {
	if l.poolAddrs == nil {
		l.poolAddrs = map[netip.Addr]poolUse{}
	}
	if u, ok := l.poolAddrs[addr]; ok {
		if u.inst != inst {
			l.errorf(inst.File, 0, "", "pool %s gives %s to both %s and %s (indexes %d and %d)", pool, addr, u.inst.Name, inst.Name, u.inst.Index, inst.Index)
		}
		return
	}
	l.poolAddrs[addr] = poolUse{inst: inst, pool: pool}
}
