// Package citemplate renders text the way cloud-init's templater does for
// final_message and /etc/cloud/templates: a first line "## template: jinja"
// selects Jinja (through seed/jinja), "## template: basic" or no header
// selects the basic renderer, which replaces $name and ${name}.
package citemplate

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/seed/jinja"
)

var (
	headerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^##\s*template:(.*)`) })
	// A dotted name walks into nested maps, as cloud-init's basic renderer
	// does ($a.b is params["a"]["b"]).
	basicRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z0-9_.]+)\}|\$([A-Za-z0-9_.]+)`) })
)

// Render renders text with vars, choosing the renderer from its header line.
func Render(text string, vars map[string]any) (string, error) {
	ident, rest, hasNewline := strings.Cut(text, "\n")
	m := headerRE().FindStringSubmatch(ident)
	if m == nil {
		return RenderBasic(text, vars)
	}
	if !hasNewline {
		rest = ""
	}
	switch kind := strings.ToLower(strings.TrimSpace(m[1])); kind {
	case "basic":
		return RenderBasic(rest, vars)
	case "jinja":
		return renderJinja(rest, vars)
	default:
		return "", fmt.Errorf("render template: unknown template type %q (want jinja or basic)", kind)
	}
}

// RenderBasic replaces $name and ${name} with vars' values. A name that is
// not there is an error, as it is for cloud-init.
func RenderBasic(text string, vars map[string]any) (string, error) {
	var firstErr error
	out := basicRE().ReplaceAllStringFunc(text, func(match string) string {
		sub := basicRE().FindStringSubmatch(match)
		name := sub[1]
		if name == "" {
			name = sub[2]
		}
		v, err := lookup(vars, name)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return match
		}
		return v
	})
	if firstErr != nil {
		return "", fmt.Errorf("render template: %w", firstErr)
	}
	return out, nil
}

func lookup(vars map[string]any, name string) (string, error) {
	keys := strings.Split(name, ".")
	var cur any = vars
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", fmt.Errorf("variable %q: %q is not a mapping", name, strings.Join(keys[:i], "."))
		}
		v, ok := m[k]
		if !ok {
			return "", fmt.Errorf("variable %q is not defined", name)
		}
		cur = v
	}
	if cur == nil {
		return "None", nil
	}
	return fmt.Sprint(cur), nil
}

// jinjaDropsFinalNewline reports whether seed/jinja behaves like Jinja2 by
// default and drops a template's last newline. cloud-init adds it back, so
// the result must end like the template whichever way seed/jinja does it.
var jinjaDropsFinalNewline = sync.OnceValue(func() bool {
	out, err := jinja.Render([]byte("x\n"), nil)
	return err == nil && string(out) == "x"
})

func renderJinja(text string, vars map[string]any) (string, error) {
	out, err := jinja.Render([]byte(text), vars)
	if err != nil {
		return "", fmt.Errorf("render jinja template: %w", err)
	}
	s := string(out)
	if strings.HasSuffix(text, "\n") && jinjaDropsFinalNewline() {
		s += "\n"
	}
	return s, nil
}
