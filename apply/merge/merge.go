// Package merge combines cloud-configs the way cloud-init does: its mergers
// (dict, list and str, chosen by a merge_how key or a Merge-Type header),
// the per-part merging that builds cloud_config.txt from user-data, the
// #cloud-config-jsonp patches, and mergemanydict, which layers user-data
// over vendor-data over system config.
//
// cloud-init's mergers have quirks that users rely on without knowing it
// (a merge spec without a dict merger drops the whole part, list(append)
// with a string appends its characters, merge_type is kept when merge_how
// is set); this package reproduces them, and the differential tests hold it
// to cloud-init 22.4.2's own Python.
package merge

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/seedinit/seedinit/seed"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// MergerSpec is one merger of a spec: "dict", "list" or "str", with the
// options cloud-init's merger of that name looks for.
type MergerSpec struct {
	Name    string
	Options []string
}

// Spec is an ordered list of mergers. When two mergers handle the same type
// the first one wins, as in cloud-init's LookupMerger.
type Spec []MergerSpec

// String spells the spec the way ParseSpec reads it.
func (s Spec) String() string {
	var b strings.Builder
	for i, m := range s {
		if i > 0 {
			b.WriteByte('+')
		}
		b.WriteString(m.Name)
		b.WriteByte('(')
		b.WriteString(strings.Join(m.Options, ","))
		b.WriteByte(')')
	}
	return b.String()
}

// DefaultPartSpec is what cloud-init's cloud-config part handler uses when
// a part names no mergers: later parts replace earlier keys, as when the
// parts were once concatenated into one YAML file.
// It is ParseSpec("dict(replace)+list()+str()"), written out so that no
// start of the binary parses it (a test keeps the two equal).
var DefaultPartSpec = Spec{{Name: "dict", Options: []string{"replace"}}, {Name: "list", Options: []string{}}, {Name: "str", Options: []string{}}}

// DefaultSpec is what mergemanydict uses for a source without merge_how:
// keys already present (from an earlier, stronger source) are kept. It is
// ParseSpec("list()+dict()+str()").
var DefaultSpec = Spec{{Name: "list", Options: []string{}}, {Name: "dict", Options: []string{}}, {Name: "str", Options: []string{}}}

// The option names the mergers look for. A settings value given as a
// string is tested by cloud-init with Python's `in`, which is a substring
// test, so it is turned into the known options it contains.
var knownOptions = []string{
	"replace", "no_replace", "append", "prepend",
	"recurse_dict", "recurse_list", "recurse_array", "recurse_str",
	"allow_delete",
}

var mergerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-zA-Z_][A-Za-z0-9_]*)\((.*?)\)$`) })

// ParseSpec reads a merge spec string such as
// "dict(recurse_array,no_replace)+list(append)+str()", as a Merge-Type
// header or a string merge_how carries it. Names and options are
// case-insensitive and '-' counts as '_'; empty items are skipped.
func ParseSpec(s string) (Spec, error) {
	var spec Spec
	for i, item := range strings.Split(s, "+") {
		item = strings.ReplaceAll(strings.TrimSpace(strings.ToLower(item)), "-", "_")
		if item == "" {
			continue
		}
		m := mergerNameRE().FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("parse merge spec item %d %q: want name(options)", i+1, item)
		}
		name, err := canonicalName(m[1])
		if err != nil {
			return nil, fmt.Errorf("parse merge spec item %d: %w", i+1, err)
		}
		opts := []string{}
		for _, o := range strings.Split(strings.TrimSpace(m[2]), ",") {
			if o = strings.ToLower(strings.TrimSpace(o)); o != "" {
				opts = append(opts, o)
			}
		}
		spec = append(spec, MergerSpec{Name: name, Options: opts})
	}
	return spec, nil
}

// canonicalName maps a merger name to dict, list or str; cloud-init looks
// for a module m_<name> (the m_ prefix may be given) and fails on others.
func canonicalName(name string) (string, error) {
	switch strings.TrimPrefix(name, "m_") {
	case "dict", "list", "str":
		return strings.TrimPrefix(name, "m_"), nil
	}
	return "", fmt.Errorf("find merger %q: cloud-init has only dict, list and str", name)
}

// SpecFromConfig reads the merge spec a cloud-config carries in merge_how
// (or, when merge_how is absent or null, merge_type): a string like
// ParseSpec's, or a list of {name, settings} mappings (or [name, option...]
// lists). An empty Spec means the config names no mergers. The config is
// not changed; StripSpec gives it without the key that was read.
func SpecFromConfig(cfg map[string]any) (Spec, error) {
	key, raw := specKey(cfg)
	if raw == nil {
		return nil, nil
	}
	if s, ok := raw.(string); ok {
		spec, err := ParseSpec(s)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
		return spec, nil
	}
	items, ok := raw.([]any)
	if !ok {
		// cloud-init iterates whatever it got: a mapping yields its keys,
		// which fail as merger items below; anything else is not iterable.
		m, isMap := raw.(map[string]any)
		if !isMap {
			return nil, fmt.Errorf("read %s: want a string or a list, got %s", key, typeName(raw))
		}
		if len(m) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: want a string or a list, got a mapping", key)
	}
	var spec Spec
	for i, item := range items {
		ms, ok, err := specItem(item)
		if err != nil {
			return nil, fmt.Errorf("read %s item %d: %w", key, i, err)
		}
		if ok {
			spec = append(spec, ms)
		}
	}
	return spec, nil
}

// specKey says which key cloud-init takes the spec from, and its value.
func specKey(cfg map[string]any) (string, any) {
	if v := cfg["merge_how"]; v != nil {
		return "merge_how", v
	}
	return "merge_type", cfg["merge_type"]
}

// StripSpec returns cfg without the merge keys cloud-init pops from it:
// merge_how always, and merge_type only when merge_how was absent or null
// (so merge_type survives into the merged config next to a merge_how).
func StripSpec(cfg map[string]any) map[string]any {
	_, hasHow := cfg["merge_how"]
	_, hasType := cfg["merge_type"]
	if !hasHow && !hasType {
		return cfg
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		out[k] = v
	}
	delete(out, "merge_how")
	if cfg["merge_how"] == nil {
		delete(out, "merge_type")
	}
	return out
}

// specItem reads one item of a merge_how list. ok is false for an item
// cloud-init skips (an empty name).
func specItem(item any) (MergerSpec, bool, error) {
	var name any
	var settings any
	switch v := item.(type) {
	case map[string]any:
		n, ok := v["name"]
		if !ok {
			return MergerSpec{}, false, errors.New("want a name")
		}
		s, ok := v["settings"]
		if !ok {
			return MergerSpec{}, false, errors.New("want settings")
		}
		ns, isString := n.(string)
		if !isString {
			return MergerSpec{}, false, fmt.Errorf("want a string name, got %s", typeName(n))
		}
		name, settings = strings.TrimSpace(strings.ReplaceAll(ns, "-", "_")), s
	case []any:
		if len(v) == 0 {
			return MergerSpec{}, false, errors.New("want a name, got an empty list")
		}
		name, settings = v[0], v[1:]
	case string:
		// cloud-init takes the first character as the name: never a merger.
		if v == "" {
			return MergerSpec{}, false, errors.New("want a name, got an empty string")
		}
		r, _ := utf8.DecodeRuneInString(v)
		return MergerSpec{}, false, fmt.Errorf("find merger %q: write {name: ..., settings: [...]} or a list", string(r))
	default:
		return MergerSpec{}, false, fmt.Errorf("want a mapping or a list, got %s", typeName(item))
	}
	if isFalsy(name) {
		return MergerSpec{}, false, nil
	}
	ns, ok := name.(string)
	if !ok {
		return MergerSpec{}, false, fmt.Errorf("want a string name, got %s", typeName(name))
	}
	cn, err := canonicalName(ns)
	if err != nil {
		return MergerSpec{}, false, err
	}
	opts, err := settingsOptions(settings)
	if err != nil {
		return MergerSpec{}, false, fmt.Errorf("read settings of %s: %w", cn, err)
	}
	return MergerSpec{Name: cn, Options: opts}, true, nil
}

// settingsOptions turns settings into the options that cloud-init's `in`
// tests would find: list items are compared whole, a mapping's keys too,
// and a string is searched for each known option as a substring.
func settingsOptions(settings any) ([]string, error) {
	opts := []string{}
	switch v := settings.(type) {
	case []any:
		for _, o := range v {
			if s, ok := o.(string); ok {
				opts = append(opts, s)
			}
		}
	case map[string]any:
		for k := range v {
			opts = append(opts, k)
		}
		slices.Sort(opts)
	case string:
		for _, o := range knownOptions {
			if strings.Contains(v, o) {
				opts = append(opts, o)
			}
		}
	default:
		return nil, fmt.Errorf("want a list of options, got %s", typeName(settings))
	}
	return opts, nil
}

func isFalsy(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// Merger is a constructed merge strategy: for each type of the value merged
// into, the first merger of the spec that handles it.
type Merger struct {
	dict *dictMerger
	list *listMerger
	str  *strMerger
	// acc, when set, is the accumulator of a MergeParts run: what it owns
	// is changed in place, and copies are charged to its budget.
	acc *accumulator
}

// accumulator lets MergeParts merge part after part in time linear in
// what the parts hold. cloud-init's mergers copy the config merged so far
// at every level they touch, for every part: 20,000 parts each adding a
// key took 28 s. The mappings and lists that merging made itself appear
// once in the result and nowhere else, so they can change in place with
// the same outcome; a value that came from a part may be shared (YAML
// aliases) and is copied, once, the first time a merge changes it.
type accumulator struct {
	maps  map[uintptr]ownedMap
	lists map[*any][]any
	// work counts the values and bytes copied; merging that copies more
	// than maxMergeWork stops (string appends and list prepends still
	// copy what they extend, and each JSON patch copies the config).
	work int
	// undo records the changes made in place by the part being merged: a
	// part whose merge fails is left out whole, as in cloud-init, whose
	// mergers never change the config they merge into.
	undo []undoEntry
	// part counts the parts begun: a mapping made while merging the
	// current part needs no undo, the part's failure drops it whole.
	part int
}

type ownedMap struct {
	m    map[string]any
	part int
}

// undoEntry puts back one key of a mapping or one item of a list.
type undoEntry struct {
	m    map[string]any
	key  string
	had  bool
	list []any
	i    int
	old  any
}

func (a *accumulator) set(m map[string]any, k string, v any) {
	old, had := m[k]
	a.undo = append(a.undo, undoEntry{m: m, key: k, had: had, old: old})
	m[k] = v
}

func (a *accumulator) del(m map[string]any, k string) {
	old, had := m[k]
	a.undo = append(a.undo, undoEntry{m: m, key: k, had: had, old: old})
	delete(m, k)
}

func (a *accumulator) setItem(l []any, i int, v any) {
	a.undo = append(a.undo, undoEntry{list: l, i: i, old: l[i]})
	l[i] = v
}

// begin starts a part; rollback undoes what it changed in place.
func (a *accumulator) begin() {
	a.undo = a.undo[:0]
	a.part++
}

func (a *accumulator) rollback() {
	for i := len(a.undo) - 1; i >= 0; i-- {
		u := a.undo[i]
		switch {
		case u.m == nil:
			u.list[u.i] = u.old
		case u.had:
			u.m[u.key] = u.old
		default:
			delete(u.m, u.key)
		}
	}
	a.undo = a.undo[:0]
}

// maxMergeWork bounds what merging one user-data's parts may copy: about
// a second of work at most, a hundred times what merging a real seed
// with a few large parts copies.
const maxMergeWork = 1 << 24

// errMergeWork is the error of a merge that reached maxMergeWork.
var errMergeWork = fmt.Errorf("merging the parts copies more than %d values and bytes", maxMergeWork)

func newAccumulator() *accumulator {
	return &accumulator{maps: map[uintptr]ownedMap{}, lists: map[*any][]any{}}
}

func (a *accumulator) charge(n int) error {
	if a == nil {
		return nil
	}
	a.work += n
	if a.work > maxMergeWork {
		return errMergeWork
	}
	return nil
}

func mapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

func (a *accumulator) ownsMap(m map[string]any) bool {
	if a == nil || m == nil {
		return false
	}
	_, ok := a.maps[mapID(m)]
	return ok
}

// ownMap records m as made by merging. The record holds m, so that its
// address cannot be reused by a part's map while it is recorded.
func (a *accumulator) ownMap(m map[string]any) map[string]any {
	if a != nil && a.maps != nil {
		a.maps[mapID(m)] = ownedMap{m: m, part: a.part}
	}
	return m
}

// madeInThisPart reports whether m was made while merging the current part.
func (a *accumulator) madeInThisPart(m map[string]any) bool {
	o, ok := a.maps[mapID(m)]
	return ok && o.part == a.part
}

func (a *accumulator) ownsList(l []any) bool {
	if a == nil || cap(l) == 0 {
		return false
	}
	_, ok := a.lists[&l[:1][0]]
	return ok
}

func (a *accumulator) ownList(l []any) []any {
	if a != nil && a.lists != nil && cap(l) > 0 {
		a.lists[&l[:1][0]] = l
	}
	return l
}

type dictMerger struct {
	replace      bool
	recurseStr   bool
	recurseArray bool
	allowDelete  bool
}

type listMethod int

const (
	listReplace listMethod = iota
	listAppend
	listPrepend
	listNoReplace
)

type listMerger struct {
	method       listMethod
	recurseStr   bool
	recurseDict  bool
	recurseArray bool
}

type strMerger struct {
	append bool
}

// New builds the merger a spec describes.
func New(spec Spec) (*Merger, error) {
	m := &Merger{}
	for i, ms := range spec {
		name, err := canonicalName(ms.Name)
		if err != nil {
			return nil, fmt.Errorf("build merger %d: %w", i+1, err)
		}
		has := func(opts ...string) bool {
			for _, o := range opts {
				if slices.Contains(ms.Options, o) {
					return true
				}
			}
			return false
		}
		switch name {
		case "dict":
			if m.dict == nil {
				// "replace" is looked for before "no_replace", the default.
				m.dict = &dictMerger{
					replace:      has("replace"),
					recurseStr:   has("recurse_str"),
					recurseArray: has("recurse_array", "recurse_list"),
					allowDelete:  has("allow_delete"),
				}
			}
		case "list":
			if m.list == nil {
				lm := &listMerger{
					recurseStr:   has("recurse_str"),
					recurseDict:  has("recurse_dict"),
					recurseArray: has("recurse_array", "recurse_list"),
				}
				// cloud-init looks for the methods in this order.
				switch {
				case has("append"):
					lm.method = listAppend
				case has("prepend"):
					lm.method = listPrepend
				case has("replace"):
					lm.method = listReplace
				case has("no_replace"):
					lm.method = listNoReplace
				}
				m.list = lm
			}
		case "str":
			if m.str == nil {
				m.str = &strMerger{append: has("append")}
			}
		}
	}
	return m, nil
}

// Merge merges add into base with the spec's mergers and returns the
// result; base and add are not changed (the result may share unchanged
// parts with them). An error means cloud-init's merge raised (for example
// list(append) with a number), and cloud-init then drops the whole part.
func Merge(spec Spec, base, add any) (any, error) {
	m, err := New(spec)
	if err != nil {
		return nil, err
	}
	return m.Merge(base, add)
}

// Merge merges add into base; see the package function Merge.
func (m *Merger) Merge(base, add any) (any, error) {
	return m.merge(base, add, "")
}

// merge dispatches on the type of the value merged into, as cloud-init's
// LookupMerger does; types no merger handles (numbers, booleans, null)
// keep the base value.
func (m *Merger) merge(base, add any, path string) (any, error) {
	switch b := base.(type) {
	case map[string]any:
		if m.dict == nil {
			return base, nil
		}
		return m.mergeDict(b, add, path)
	case []any:
		if m.list == nil {
			return base, nil
		}
		return m.mergeList(b, add, path)
	case string:
		if m.str == nil {
			return base, nil
		}
		return m.mergeStr(b, add, path)
	}
	return base, nil
}

func (m *Merger) mergeDict(base map[string]any, add any, path string) (any, error) {
	am, ok := add.(map[string]any)
	if !ok {
		return base, nil
	}
	d := m.dict
	out := base
	// Changes to a mapping made by merging are recorded, to be undone if
	// the part fails; a fresh copy is simply dropped then.
	set, del := m.acc.set, m.acc.del
	if !m.acc.ownsMap(base) || m.acc.madeInThisPart(base) {
		set = func(m map[string]any, k string, v any) { m[k] = v }
		del = func(m map[string]any, k string) { delete(m, k) }
	}
	if !m.acc.ownsMap(base) {
		if err := m.acc.charge(len(base)); err != nil {
			return nil, err
		}
		out = make(map[string]any, len(base)+len(am))
		for k, v := range base {
			out[k] = v
		}
		m.acc.ownMap(out)
	}
	var errs []error
	for _, k := range sortedKeys(am) {
		v := am[k]
		old, exists := out[k]
		if !exists {
			set(out, k, v)
			continue
		}
		if v == nil && d.allowDelete {
			del(out, k)
			continue
		}
		if d.replace {
			set(out, k, v)
			continue
		}
		recurse := false
		switch v.(type) {
		case []any:
			recurse = d.recurseArray
		case string:
			recurse = d.recurseStr
		case map[string]any:
			recurse = true
		}
		if !recurse {
			continue
		}
		merged, err := m.merge(old, v, joinPath(path, k))
		if err != nil {
			if errors.Is(err, errMergeWork) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		set(out, k, merged)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (m *Merger) mergeList(base []any, add any, path string) (any, error) {
	l := m.list
	addList, isList := add.([]any)
	if l.method == listReplace && !isList {
		return add, nil
	}
	switch l.method {
	case listAppend, listPrepend:
		items, err := pyIterate(add, path)
		if err != nil {
			return nil, err
		}
		if l.method == listAppend && m.acc.ownsList(base) {
			// Appending to a list only merging holds: in place, as
			// Python's list.extend would, in amortised constant time.
			return m.acc.ownList(append(base, items...)), nil
		}
		if err := m.acc.charge(len(base) + len(items)); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(base)+len(items))
		if l.method == listAppend {
			out = append(append(out, base...), items...)
		} else {
			out = append(append(out, items...), base...)
		}
		return m.acc.ownList(out), nil
	}
	out := base
	setItem := m.acc.setItem
	if !m.acc.ownsList(base) {
		if err := m.acc.charge(len(base)); err != nil {
			return nil, err
		}
		out = m.acc.ownList(slices.Clone(base))
		setItem = func(l []any, i int, v any) { l[i] = v }
	}
	if out == nil {
		out = []any{}
	}
	if !isList {
		// Only no_replace gets here with a non-list: cloud-init takes its
		// len() and indexes it, which a string survives (the characters
		// are then ignored) and a non-empty mapping does not.
		switch a := add.(type) {
		case string:
			return out, nil
		case map[string]any:
			if len(a) > 0 && len(out) > 0 {
				return nil, fmt.Errorf("merge list %s: cannot index a mapping by position", pathName(path))
			}
			return out, nil
		}
		return nil, fmt.Errorf("merge list %s: cannot merge a %s into a list", pathName(path), typeName(add))
	}
	if l.method == listNoReplace {
		return out, nil
	}
	var errs []error
	for i := 0; i < min(len(out), len(addList)); i++ {
		v := addList[i]
		recurse := false
		switch v.(type) {
		case []any:
			recurse = l.recurseArray
		case string:
			recurse = l.recurseStr
		case map[string]any:
			recurse = l.recurseDict
		}
		if !recurse {
			setItem(out, i, v)
			continue
		}
		merged, err := m.merge(out[i], v, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			if errors.Is(err, errMergeWork) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		setItem(out, i, merged)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// pyIterate lists what Python's list.extend(v) would add: a list's items,
// a string's characters, a mapping's keys (in sorted order: ours are not
// ordered, Python's are in document order).
func pyIterate(v any, path string) ([]any, error) {
	switch a := v.(type) {
	case []any:
		return a, nil
	case string:
		out := make([]any, 0, utf8.RuneCountInString(a))
		for _, r := range a {
			out = append(out, string(r))
		}
		return out, nil
	case map[string]any:
		out := make([]any, 0, len(a))
		for _, k := range sortedKeys(a) {
			out = append(out, k)
		}
		return out, nil
	}
	return nil, fmt.Errorf("merge list %s: cannot append a %s to a list", pathName(path), typeName(v))
}

func (m *Merger) mergeStr(base string, add any, path string) (any, error) {
	if !m.str.append {
		return add, nil
	}
	s, ok := add.(string)
	if !ok {
		return nil, fmt.Errorf("merge string %s: cannot append a %s to a string", pathName(path), typeName(add))
	}
	if err := m.acc.charge(len(base) + len(s)); err != nil {
		return nil, err
	}
	return base + s, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathName(path string) string {
	if path == "" {
		return "at the top"
	}
	return "at " + path
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int:
		return "integer"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	}
	return fmt.Sprintf("%T", v)
}

// MergeMany is cloud-init's util.mergemanydict: sources are merged in
// order into an empty config, each with its own merge_how (default
// DefaultSpec, where keys already present win), so earlier sources win:
// pass user-data, then vendor-data, then system config. merge_how keys are
// taken out as cloud-init pops them. Sources whose spec is invalid, or
// whose merge fails, are skipped (cloud-init would raise); use
// MergeManyReport to see why.
func MergeMany(sources ...map[string]any) map[string]any {
	out, _ := MergeManyReport(sources...)
	return out
}

// MergeManyReport is MergeMany that also returns one error per source it
// had to skip, naming the source by its position (0-based).
func MergeManyReport(sources ...map[string]any) (map[string]any, []error) {
	var merged any = map[string]any{}
	var errs []error
	for i, src := range sources {
		if len(src) == 0 {
			continue
		}
		spec, err := SpecFromConfig(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("merge config source %d: %w", i, err))
			continue
		}
		if len(spec) == 0 {
			spec = DefaultSpec
		}
		m, err := New(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("merge config source %d: %w", i, err))
			continue
		}
		next, err := m.Merge(merged, StripSpec(src))
		if err != nil {
			errs = append(errs, fmt.Errorf("merge config source %d: %w", i, err))
			continue
		}
		merged = next
	}
	// The dict merger only ever returns a mapping for a mapping base.
	return merged.(map[string]any), errs
}

// MergeParts merges user-data's (or vendor-data's) cloud-config and
// #cloud-config-jsonp parts in order, the way cloud-init's cloud-config
// part handler builds cloud_config.txt: each part with its own merge_how
// (or merge_type) and Merge-Type header, else DefaultPartSpec, so later
// parts replace earlier keys; a jsonp part patches what was merged so far.
// Other parts (scripts, boothooks) are ignored. A part that cannot be read
// or merged is left out with an error naming it (and the YAML line where
// there is one); the other parts still merge. The result is never nil.
//
// The parts share one budget: yaml11's node limit counts the nodes of all
// of them together, and merging may copy at most maxMergeWork values and
// bytes. A part past either is left out, and so are the ones after it, with
// an error that names the limit.
func MergeParts(parts []seed.Part) (map[string]any, []error) {
	return mergeParts(parts, newAccumulator())
}

// mergeParts is MergeParts with its accumulator; one without maps owns
// nothing and copies as cloud-init does, which the tests compare with.
func mergeParts(parts []seed.Part, acc *accumulator) (map[string]any, []error) {
	var merged any
	var errs []error
	accepted := 0
	nodesLeft := yaml11.DefaultLimits.Nodes
	for i, p := range parts {
		if p.Kind != seed.KindCloudConfig && p.Kind != seed.KindJSONPatch {
			continue
		}
		acc.begin()
		// cloud-init starts from an empty config until a part succeeds.
		if merged == nil || accepted == 0 {
			merged = acc.ownMap(map[string]any{})
		}
		next, nodes, err := mergePart(merged, p, acc, nodesLeft)
		nodesLeft -= nodes
		if err != nil {
			acc.rollback()
			errs = append(errs, fmt.Errorf("merge %s: %w", partName(p, i), err))
			if errors.Is(err, errMergeWork) {
				errs = append(errs, fmt.Errorf("merge cloud-config parts: the %d parts after %s are left out", len(parts)-i-1, partName(p, i)))
				break
			}
			continue
		}
		merged = next
		accepted++
	}
	// cloud-init writes the result to cloud_config.txt and reads it back as
	// a config, which must be a mapping: a jsonp patch that replaced the
	// root with something else leaves an empty config.
	out, ok := merged.(map[string]any)
	if !ok {
		if merged != nil {
			errs = append(errs, fmt.Errorf("merge cloud-config parts: the patched config is a %s, not a mapping: using an empty config", typeName(merged)))
		}
		out = map[string]any{}
	}
	return out, errs
}

func partName(p seed.Part, i int) string {
	if p.Source != "" {
		return p.Source
	}
	if p.Filename != "" {
		return fmt.Sprintf("part %d (%s)", i+1, p.Filename)
	}
	return fmt.Sprintf("part %d", i+1)
}

const jsonpPrefix = "#cloud-config-jsonp"

// mergePart merges one part into merged, loading its YAML within nodesLeft
// nodes; it returns how many nodes the part's YAML held.
func mergePart(merged any, p seed.Part, acc *accumulator, nodesLeft int) (any, int, error) {
	if p.Kind == seed.KindJSONPatch {
		text := strings.TrimLeftFunc(string(p.Content), isPySpace)
		text = strings.TrimPrefix(text, jsonpPrefix)
		out, err := applyPatch(merged, []byte(text), acc)
		return out, 0, err
	}
	if nodesLeft <= 0 {
		return nil, 0, fmt.Errorf("parse YAML: %w in the parts before it", yaml11.LimitReached())
	}
	doc, nodes, err := yaml11.LoadLimited(p.Content, yaml11.Limits{Nodes: nodesLeft})
	if err != nil {
		if used := yaml11.DefaultLimits.Nodes - nodesLeft; used > 0 && errors.Is(err, yaml11.ErrLimit) && strings.Contains(err.Error(), "YAML nodes") {
			// The budget is for all parts: say so, and name it whole.
			return nil, 0, fmt.Errorf("parse YAML: %w with the %d of the parts before it", yaml11.LimitReached(), used)
		}
		return nil, 0, fmt.Errorf("parse YAML: %w", err)
	}
	cfg, ok := doc.(map[string]any)
	if !ok {
		if doc == nil {
			return nil, nodes, errors.New("empty cloud config")
		}
		return nil, nodes, fmt.Errorf("want a mapping at the top, got a %s", typeName(doc))
	}
	spec, err := SpecFromConfig(cfg)
	if err != nil {
		return nil, nodes, err
	}
	header, err := ParseSpec(p.MergeHow)
	if err != nil {
		return nil, nodes, fmt.Errorf("read Merge-Type header: %w", err)
	}
	// The document's mergers come first, so they win over the header's for
	// the same type; the header still supplies the types it leaves out.
	spec = append(slices.Clone(spec), header...)
	if len(spec) == 0 {
		spec = DefaultPartSpec
	}
	m, err := New(spec)
	if err != nil {
		return nil, nodes, err
	}
	m.acc = acc
	out, err := m.Merge(merged, StripSpec(cfg))
	return out, nodes, err
}

// isPySpace is Python's str.isspace for one character, which also counts
// the ASCII file, group, record and unit separators.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
