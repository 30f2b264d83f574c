// Package schema checks cloud-config against cloud-init's JSON schema with
// cloud-init's rules, for `seedinit schema`: the same accept/reject and
// the same messages as `cloud-init schema` of cloud-init 22.4.2, each
// problem placed on its line.
//
// The schema itself is cloud-init 22.4.2's schema-cloud-config-v1.json,
// embedded unchanged (cloud-init is dual licensed GPL-3 or Apache-2.0; we
// use it under Apache-2.0, see SCHEMA-LICENSE). Re-typing it would copy it
// all the same and drift from it; the validator that applies it is ours.
package schema

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/apply"
	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

//go:embed cloud-config-v1.json
var cloudConfigSchema []byte

var (
	schemaOnce sync.Once
	schemaRoot any
	schemaErr  error
)

func loadSchema() (any, error) {
	schemaOnce.Do(func() {
		schemaRoot, schemaErr = decodeOrdered(cloudConfigSchema)
	})
	return schemaRoot, schemaErr
}

// Header is the first line a cloud-config file must start with.
const Header = "#cloud-config"

// Problem is one error or deprecation in a cloud-config file.
type Problem struct {
	// Path is the key path cloud-init names ("users.0.name"); for a file
	// that is not YAML or lacks the header it is cloud-init's
	// "format-l<line>.c<column>".
	Path    string
	Line    int // 1-based; 0 if unknown
	Message string
}

// Report is the outcome of checking one file.
type Report struct {
	Name         string // the file as the user named it
	Content      []byte
	Errors       []Problem
	Deprecations []Problem
	// NotMapping is set when the file is YAML but not a mapping, which
	// cloud-init reports apart from the schema errors.
	NotMapping bool
}

// Valid reports whether the file has no errors; deprecations are allowed,
// as with cloud-init.
func (r *Report) Valid() bool {
	return len(r.Errors) == 0 && !r.NotMapping
}

// ExitCode is what `cloud-init schema` 22.4.2 exits with: 1 for an invalid
// file, 0 otherwise. With --annotate it exits 0 even for an invalid file
// (newer cloud-init exits 1 there); we follow 22.4.2.
func (r *Report) ExitCode(annotate bool) int {
	if r.Valid() || annotate {
		return 0
	}
	return 1
}

// Validate checks one cloud-config file. The error is for failures of
// seedinit itself; everything wrong with the file is in the report.
func Validate(data []byte, name string) (*Report, error) {
	return validate(data, name, true)
}

func validate(data []byte, name string, requireHeader bool) (*Report, error) {
	rep := &Report{Name: name, Content: data}
	if requireHeader && !strings.HasPrefix(string(data), Header) {
		rep.Errors = append(rep.Errors, Problem{
			Path:    "format-l1.c1",
			Line:    1,
			Message: fmt.Sprintf("File %s needs to begin with %q", name, Header),
		})
		return rep, nil
	}
	loaded, err := yaml11.Load(data)
	if err != nil {
		line := 1
		var ye *yaml11.Error
		if errors.As(err, &ye) && ye.Line > 0 {
			line = ye.Line
			err = errors.New(ye.Msg)
		}
		rep.Errors = append(rep.Errors, Problem{
			Path:    fmt.Sprintf("format-l%d.c1", line),
			Line:    line,
			Message: fmt.Sprintf("File %s is not valid yaml. %v", name, err),
		})
		return rep, nil
	}
	cfg, ok := loaded.(map[string]any)
	if !ok {
		rep.NotMapping = true
		return rep, nil
	}
	root, err := loadSchema()
	if err != nil {
		return nil, fmt.Errorf("validate %s: %w", name, err)
	}
	markTimestamps(data, cfg)
	r := &reprer{data: data}
	v := &validator{root: root, r: r}
	found := v.validate(cfg, root, nil, 0)
	// cloud-init sorts the errors by path; the sort is stable.
	sort.SliceStable(found, func(i, j int) bool { return pathLess(found[i].path, found[j].path) })
	for _, p := range found {
		dotted := p.dotted()
		out := Problem{Path: dotted, Line: lineOf(r.place(), dotted), Message: p.msg}
		if p.deprecated {
			rep.Deprecations = append(rep.Deprecations, out)
		} else {
			rep.Errors = append(rep.Errors, out)
		}
	}
	return rep, nil
}

// pathLess orders paths as Python compares deques: element by element,
// a prefix first.
func pathLess(a, b []any) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch x := a[i].(type) {
		case int:
			if y, ok := b[i].(int); ok && x != y {
				return x < y
			}
		case string:
			if y, ok := b[i].(string); ok && x != y {
				return x < y
			}
		}
	}
	return len(a) < len(b)
}

// lineOf places a key path on a line: its own, or its nearest placed
// parent's; 1 when nothing is placed (a missing top-level key).
func lineOf(positions map[string]yaml11.Position, dotted string) int {
	for p := dotted; p != ""; {
		if pos, ok := positions[p]; ok {
			return pos.Line
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 1
}

func formatProblems(ps []Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Path + ": " + p.Message
	}
	return strings.Join(parts, ", ")
}

// Format is what `cloud-init schema --config-file` prints. Without
// annotate, cloud-init's summary lines come first, unchanged, then one
// line per problem as "FILE:LINE: PATH: MESSAGE" so that each can be
// found in the file. With annotate, the file itself with "# E1"/"# D1"
// marks at the end of the offending lines and the messages below it, as
// cloud-init prints it.
func (r *Report) Format(annotate bool) string {
	if annotate {
		return r.annotated()
	}
	var b strings.Builder
	switch {
	case r.NotMapping:
		b.WriteString("Error:\nCloud-config is not a YAML dict.\n")
	case len(r.Errors) > 0 && strings.HasPrefix(r.Errors[0].Path, "format-l"):
		b.WriteString("Error:\nCloud config schema errors: " + formatProblems(r.Errors) + "\n")
	case len(r.Errors) > 0:
		b.WriteString("Cloud config schema deprecations: " + formatProblems(r.Deprecations) + "\n")
		b.WriteString("Error:\nCloud config schema errors: " + formatProblems(r.Errors))
		if len(r.Deprecations) > 0 {
			b.WriteString("\n\nCloud config schema deprecations: " + formatProblems(r.Deprecations))
		}
		b.WriteString("\n")
	case len(r.Deprecations) > 0:
		b.WriteString("Cloud config schema deprecations: " + formatProblems(r.Deprecations) + "\n")
		b.WriteString("Valid cloud-config: " + r.Name + "\n")
	default:
		b.WriteString("Valid cloud-config: " + r.Name + "\n")
	}
	for _, p := range r.Errors {
		fmt.Fprintf(&b, "%s:%d: error: %s: %s\n", r.Name, p.Line, p.Path, p.Message)
	}
	for _, p := range r.Deprecations {
		fmt.Fprintf(&b, "%s:%d: deprecated: %s: %s\n", r.Name, p.Line, p.Path, p.Message)
	}
	return b.String()
}

func (r *Report) annotated() string {
	if r.Valid() && len(r.Deprecations) == 0 {
		return "Valid cloud-config: " + r.Name + "\n"
	}
	lines := strings.Split(string(r.Content), "\n")
	footer := func(title string, body []string) string {
		return "# " + title + ": -------------\n" + strings.Join(body, "\n") + "\n\n"
	}
	var out []string
	if r.NotMapping {
		out = append(lines, footer("Errors", []string{"# E1: Cloud-config is not a YAML dict."}))
		return strings.Join(out, "\n") + "\n"
	}
	byLine := func(ps []Problem) map[int][]string {
		m := map[int][]string{}
		for _, p := range ps {
			m[p.Line] = append(m[p.Line], p.Message)
		}
		return m
	}
	errs, deps := byLine(r.Errors), byLine(r.Deprecations)
	var errFooter, depFooter []string
	nextErr, nextDep := 1, 1
	for i, line := range lines {
		var labels []string
		for _, msg := range errs[i+1] {
			label := fmt.Sprintf("E%d", nextErr)
			nextErr++
			labels = append(labels, label)
			errFooter = append(errFooter, "# "+label+": "+msg)
		}
		for _, msg := range deps[i+1] {
			label := fmt.Sprintf("D%d", nextDep)
			nextDep++
			labels = append(labels, label)
			depFooter = append(depFooter, "# "+label+": "+msg)
		}
		if len(labels) > 0 {
			line += "\t\t# " + strings.Join(labels, ",")
		}
		out = append(out, line)
	}
	if len(errFooter) > 0 {
		out = append(out, footer("Errors", errFooter))
	}
	if len(depFooter) > 0 {
		out = append(out, footer("Deprecations", depFooter))
	}
	text := strings.Join(out, "\n") + "\n"
	if r.Valid() {
		text += "Valid cloud-config: " + r.Name + "\n"
	}
	return text
}

// UserDataPath is where the current instance's cloud-config is kept, the
// file `cloud-init schema --system` checks.
var UserDataPath = apply.Path("instance", "cloud-config.txt")

// ValidateSystem is `schema --system`: the current instance's
// cloud-config (as cloud-init 22.4.2 checks), then, beyond cloud-init,
// the target's /etc/cloud/cloud.cfg and cloud.cfg.d/*.cfg, which carry no
// "#cloud-config" header. A file that cannot be read is an error in the
// joined error; the others are still checked.
func ValidateSystem(root *rootfs.Root) ([]*Report, error) {
	var reports []*Report
	var errs []error
	check := func(name string, requireHeader bool, optional bool) {
		data, err := readTargetConfig(root, name)
		if err != nil {
			if optional && isNotExist(err) {
				return
			}
			errs = append(errs, fmt.Errorf("read %s: %w", name, err))
			return
		}
		rep, err := validate(data, name, requireHeader)
		if err != nil {
			errs = append(errs, err)
			return
		}
		reports = append(reports, rep)
	}
	check(UserDataPath, true, false)
	check("/etc/cloud/cloud.cfg", false, true)
	if entries, err := root.ReadDir("/etc/cloud/cloud.cfg.d"); err == nil {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".cfg") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			check(path.Join("/etc/cloud/cloud.cfg.d", n), false, true)
		}
	} else if !isNotExist(err) {
		errs = append(errs, fmt.Errorf("list /etc/cloud/cloud.cfg.d: %w", err))
	}
	return reports, errors.Join(errs...)
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist)
}
