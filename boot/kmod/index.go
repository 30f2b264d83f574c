// Package kmod loads kernel modules without modprobe: it builds depmod's
// index from the modules' own .modinfo sections (Debian's kernel packages
// ship no modules.dep), reads and writes depmod's text formats, resolves a
// module's dependencies and soft dependencies, and loads them in order with
// finit_module.
package kmod

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Module is one loadable module.
type Module struct {
	Name string
	// Path is relative to /lib/modules/<release>, as in modules.dep.
	Path     string
	Depends  []string // direct dependencies, by module name
	Aliases  []string
	SoftPre  []string
	SoftPost []string
}

// Index is what depmod knows about one kernel's modules.
type Index struct {
	Modules map[string]*Module
	Builtin map[string]bool
	// aliases in modules.alias order: pattern → module name.
	aliases []alias
}

type alias struct{ pattern, module string }

// Name normalises a module name as the kernel does: '-' and '_' are the
// same.
func Name(s string) string {
	s = path.Base(s)
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		s = strings.TrimSuffix(s, ext)
	}
	s = strings.TrimSuffix(s, ".ko")
	return strings.ReplaceAll(s, "-", "_")
}

// BuildIndex walks dir (/lib/modules/<release>) and reads each module's
// .modinfo for depends=, alias= and softdep=; modules.builtin is read when
// present. Compressed modules (.ko.xz, .ko.zst) are listed by name and path
// but their .modinfo is not read (no decompressor on the core path): their
// dependencies must come from a modules.dep beside them.
func BuildIndex(dir string) (*Index, error) {
	idx := &Index{Modules: map[string]*Module{}, Builtin: map[string]bool{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isModuleFile(d.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		m := &Module{Name: Name(d.Name()), Path: filepath.ToSlash(rel)}
		if strings.HasSuffix(d.Name(), ".ko") {
			info, err := readModinfo(p)
			if err != nil {
				return fmt.Errorf("read %s: %w", rel, err)
			}
			m.apply(info)
		}
		idx.Modules[m.Name] = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index modules in %s: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		idx.readBuiltin(b)
	}
	// Built-in modules keep their aliases in modules.builtin.modinfo: how
	// "fs-ext4" is known to be there already on a kernel with ext4 built in.
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin.modinfo")); err == nil {
		for _, kv := range ParseModinfo(b) {
			mod, rest, ok := strings.Cut(kv, ".")
			if a, isAlias := strings.CutPrefix(rest, "alias="); ok && isAlias {
				idx.Builtin[Name(mod)] = true
				idx.aliases = append(idx.aliases, alias{a, Name(mod)})
			}
		}
	}
	names := make([]string, 0, len(idx.Modules))
	for n := range idx.Modules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, a := range idx.Modules[n].Aliases {
			idx.aliases = append(idx.aliases, alias{a, n})
		}
	}
	return idx, nil
}

func isModuleFile(name string) bool {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// ParseModinfo splits a .modinfo section's NUL-separated strings.
func ParseModinfo(b []byte) []string {
	var out []string
	for _, s := range bytes.Split(b, []byte{0}) {
		if len(s) > 0 {
			out = append(out, string(s))
		}
	}
	return out
}

func (m *Module) apply(info []string) {
	for _, kv := range info {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch k {
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d = strings.TrimSpace(d); d != "" {
					m.Depends = append(m.Depends, Name(d))
				}
			}
		case "alias":
			m.Aliases = append(m.Aliases, v)
		case "softdep":
			pre, post := parseSoftdep(strings.Fields(v))
			m.SoftPre = append(m.SoftPre, pre...)
			m.SoftPost = append(m.SoftPost, post...)
		}
	}
}

// parseSoftdep reads "pre: a b post: c" word lists.
func parseSoftdep(words []string) (pre, post []string) {
	var cur *[]string
	for _, w := range words {
		switch w {
		case "pre:":
			cur = &pre
		case "post:":
			cur = &post
		default:
			if cur != nil {
				*cur = append(*cur, Name(w))
			}
		}
	}
	return pre, post
}

func (idx *Index) readBuiltin(b []byte) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			idx.Builtin[Name(line)] = true
		}
	}
}

// ReadDepmod reads depmod's files in dir: modules.dep (required),
// modules.alias, modules.softdep and modules.builtin (optional).
func ReadDepmod(dir string) (*Index, error) {
	idx := &Index{Modules: map[string]*Module{}, Builtin: map[string]bool{}}
	dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, fmt.Errorf("read module index: %w", err)
	}
	if err := idx.readDep(dep); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "modules.dep"), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.alias")); err == nil {
		idx.readAlias(b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.softdep")); err == nil {
		idx.readSoftdep(b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		idx.readBuiltin(b)
	}
	return idx, nil
}

func (idx *Index) readDep(b []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		p, deps, ok := strings.Cut(text, ":")
		if !ok {
			return fmt.Errorf("line %d: want \"path: deps\"", line)
		}
		m := &Module{Name: Name(p), Path: strings.TrimSpace(p)}
		// modules.dep lists every dependency, transitive ones included,
		// nearest first; modprobe loads them from the end. Kept here in
		// load order.
		fields := strings.Fields(deps)
		for i := len(fields) - 1; i >= 0; i-- {
			m.Depends = append(m.Depends, Name(fields[i]))
		}
		idx.Modules[m.Name] = m
	}
	return sc.Err()
}

func (idx *Index) readAlias(b []byte) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "alias" {
			idx.aliases = append(idx.aliases, alias{f[1], Name(f[2])})
			if m := idx.Modules[Name(f[2])]; m != nil {
				m.Aliases = append(m.Aliases, f[1])
			}
		}
	}
}

func (idx *Index) readSoftdep(b []byte) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "softdep" {
			continue
		}
		if m := idx.Modules[Name(f[1])]; m != nil {
			pre, post := parseSoftdep(f[2:])
			m.SoftPre = append(m.SoftPre, pre...)
			m.SoftPost = append(m.SoftPost, post...)
		}
	}
}

// WriteDepmod writes modules.dep, modules.alias, modules.softdep and
// modules.builtin into dir for the modules in keep (all when nil), in
// depmod's formats, so busybox modprobe can use them too.
func (idx *Index) WriteDepmod(write func(name string, data []byte) error, keep map[string]bool) error {
	names := idx.names(keep)
	var dep, als, soft, builtin bytes.Buffer
	for _, n := range names {
		m := idx.Modules[n]
		closure, err := idx.depClosure(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(&dep, "%s:", m.Path)
		// depmod's order: nearest dependency first; a loader loads the list
		// from the end.
		for i := len(closure) - 1; i >= 0; i-- {
			if d := idx.Modules[closure[i]]; d != nil && d.Name != n {
				fmt.Fprintf(&dep, " %s", d.Path)
			}
		}
		dep.WriteByte('\n')
		for _, a := range m.Aliases {
			fmt.Fprintf(&als, "alias %s %s\n", a, n)
		}
		if len(m.SoftPre) > 0 || len(m.SoftPost) > 0 {
			fmt.Fprintf(&soft, "softdep %s", n)
			if len(m.SoftPre) > 0 {
				fmt.Fprintf(&soft, " pre: %s", strings.Join(m.SoftPre, " "))
			}
			if len(m.SoftPost) > 0 {
				fmt.Fprintf(&soft, " post: %s", strings.Join(m.SoftPost, " "))
			}
			soft.WriteByte('\n')
		}
	}
	for _, a := range idx.aliases {
		if idx.Builtin[a.module] {
			fmt.Fprintf(&als, "alias %s %s\n", a.pattern, a.module)
		}
	}
	var bnames []string
	for n := range idx.Builtin {
		bnames = append(bnames, n)
	}
	sort.Strings(bnames)
	for _, n := range bnames {
		fmt.Fprintf(&builtin, "%s.ko\n", n)
	}
	for name, buf := range map[string]*bytes.Buffer{"modules.dep": &dep, "modules.alias": &als, "modules.softdep": &soft, "modules.builtin": &builtin} {
		if err := write(name, buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func (idx *Index) names(keep map[string]bool) []string {
	var names []string
	for n := range idx.Modules {
		if keep == nil || keep[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Lookup finds modules by name or by modalias (fnmatch patterns from
// modules.alias). A built-in name yields (nil, true).
func (idx *Index) Lookup(nameOrAlias string) (mods []string, builtin bool) {
	n := Name(nameOrAlias)
	if idx.Builtin[n] {
		return nil, true
	}
	if _, ok := idx.Modules[n]; ok {
		return []string{n}, false
	}
	seen := map[string]bool{}
	for _, a := range idx.aliases {
		if seen[a.module] {
			continue
		}
		if ok, _ := path.Match(a.pattern, nameOrAlias); ok {
			seen[a.module] = true
			if idx.Builtin[a.module] {
				builtin = true
				continue
			}
			mods = append(mods, a.module)
		}
	}
	// Every match is loaded; sorting keeps the order independent of how
	// modules.alias happened to be written.
	sort.Strings(mods)
	return mods, builtin
}

// LoadOrder returns the modules to load for name, dependencies and soft
// pre-dependencies first, name itself, then soft post-dependencies. Soft
// dependencies that are missing or built in are left out, as modprobe does.
func (idx *Index) LoadOrder(name string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(n string, soft bool, depth int) error
	visit = func(n string, soft bool, depth int) error {
		n = Name(n)
		if seen[n] || idx.Builtin[n] {
			return nil
		}
		if depth > 64 {
			return fmt.Errorf("module %s: dependency chain too deep (a cycle?)", name)
		}
		m, ok := idx.Modules[n]
		if !ok {
			// A dependency may be named by alias, as ext4's "softdep=pre:
			// crc32c" is: every module offering it is a candidate.
			seen[n] = true
			mods, builtin := idx.Lookup(n)
			for _, a := range mods {
				if err := visit(a, soft, depth+1); err != nil {
					return err
				}
			}
			if len(mods) > 0 || builtin || soft {
				return nil
			}
			return fmt.Errorf("module %s: not found (needed by %s)", n, name)
		}
		seen[n] = true
		for _, p := range m.SoftPre {
			if err := visit(p, true, depth+1); err != nil {
				return err
			}
		}
		for _, d := range m.Depends {
			if err := visit(d, false, depth+1); err != nil {
				return err
			}
		}
		order = append(order, n)
		for _, p := range m.SoftPost {
			if err := visit(p, true, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(name, false, 0); err != nil {
		return nil, err
	}
	return order, nil
}

// depClosure is the hard dependencies of n, loaded first, n last.
func (idx *Index) depClosure(n string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(n string, depth int) error
	visit = func(n string, depth int) error {
		if seen[n] || idx.Builtin[n] {
			return nil
		}
		if depth > 64 {
			return fmt.Errorf("module %s: dependency chain too deep (a cycle?)", n)
		}
		seen[n] = true
		m, ok := idx.Modules[n]
		if !ok {
			return nil
		}
		for _, d := range m.Depends {
			if err := visit(d, depth+1); err != nil {
				return err
			}
		}
		out = append(out, n)
		return nil
	}
	return out, visit(n, 0)
}

var _ io.Reader = (*bytes.Buffer)(nil)
