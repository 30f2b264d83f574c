// Package boot is seedinit's PID-1 side: early mounts, the kernel command
// line, kernel modules, the root device, stage sequencing, switch_root and
// the handoff to the real init.
package boot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seedinit/seedinit/seed/trust"
)

// Cmdline is the kernel command line, split the way the kernel splits it:
// on spaces outside double quotes, with the quotes removed. Arguments
// after "--" belong to init.
type Cmdline struct {
	Params   []Param
	InitArgs []string
}

// Param is one name[=value] word.
type Param struct {
	Name     string
	Value    string
	HasValue bool
}

// ParseCmdline splits s like the kernel's next_arg.
func ParseCmdline(s string) Cmdline {
	var c Cmdline
	words := splitKernelWords(s)
	for i, w := range words {
		if w == "--" {
			c.InitArgs = append([]string{}, words[i+1:]...)
			break
		}
		name, value, has := strings.Cut(w, "=")
		c.Params = append(c.Params, Param{Name: name, Value: value, HasValue: has})
	}
	return c
}

func splitKernelWords(s string) []string {
	var words []string
	var b strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			inWord = true
		case (r == ' ' || r == '\t' || r == '\n') && !inQuote:
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// Get returns the last value given for name (the kernel's rule: the last
// one wins) and whether it was present at all.
func (c Cmdline) Get(name string) (string, bool) {
	val, found := "", false
	for _, p := range c.Params {
		if p.Name == name {
			val, found = p.Value, true
		}
	}
	return val, found
}

// Has reports whether name appears, with or without a value.
func (c Cmdline) Has(name string) bool {
	_, ok := c.Get(name)
	return ok
}

// Options are the command-line settings PID 1 acts on.
type Options struct {
	Root      string // root=
	RootFS    string // rootfstype=
	RootFlags string // rootflags=
	ReadOnly  bool   // ro (default) / rw
	RootWait  bool
	RootDelay time.Duration

	// Init is the real init to exec: seedinit.init= over init=, else the
	// first of the usual places that exists.
	Init     string
	InitArgs []string

	Datasource string        // seedinit.ds=, ci.ds=, ci.datasource=, ds= (its first word)
	DSArgs     string        // ds=nocloud;s=...;i=... after the name
	Debug      bool          // seedinit.debug
	Budget     time.Duration // seedinit.budget=: the datasource search's time limit
	Modules    []string      // seedinit.modules=a,b
	Rescue     string        // seedinit.rescue=shell|reboot
	Disable    bool          // seedinit.disable: hand off at once
	Kexec      string        // seedinit.kexec=
	// Strict: hand off only when provisioning ran cleanly
	// (seedinit.strict, seedinit.strict=1|0); StrictDatasource also when
	// a root never provisioned found no datasource
	// (seedinit.strict=datasource).
	Strict           bool
	StrictDatasource bool
	// Trust is seedinit.trust=off|warn|require, the seed signatures'
	// policy (at least the one baked into the image).
	Trust string
	// DHCP is seedinit.dhcp=keep|off: whether the leases PID 1 took are
	// kept after the handoff; "" decides by the root (kept when it has no
	// DHCP client of its own).
	DHCP string
	// Report is seedinit.report=URL, where the instance reports after its
	// stages when neither its config nor its meta-data names a place
	// (apply/stages' report.go); never under seedinit.trust=require.
	Report string
}

// DefaultBudget is how long the datasource search may take when nothing
// answers.
const DefaultBudget = 2 * time.Second

// ParseOptions reads Options from a command line. Bad values are reported
// and the default kept: a typo on the command line must not stop a boot.
func ParseOptions(c Cmdline) (Options, []error) {
	o := Options{ReadOnly: true, Budget: DefaultBudget, InitArgs: c.InitArgs}
	var errs []error
	o.Root, _ = c.Get("root")
	o.RootFS, _ = c.Get("rootfstype")
	o.RootFlags, _ = c.Get("rootflags")
	for _, p := range c.Params {
		switch p.Name {
		case "ro":
			o.ReadOnly = true
		case "rw":
			o.ReadOnly = false
		}
	}
	o.RootWait = c.Has("rootwait")
	if v, ok := c.Get("rootdelay"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("rootdelay=%q: want whole seconds", v))
		} else {
			o.RootDelay = time.Duration(n) * time.Second
		}
	}
	o.Init, _ = c.Get("init")
	if v, ok := c.Get("seedinit.init"); ok {
		o.Init = v
	}
	for _, k := range []string{"ds", "ci.ds", "ci.datasource", "seedinit.ds"} {
		if v, ok := c.Get(k); ok && v != "" {
			name, rest, _ := strings.Cut(v, ";")
			o.Datasource, o.DSArgs = name, rest
		}
	}
	o.Debug = c.Has("seedinit.debug")
	if v, ok := c.Get("seedinit.budget"); ok {
		d, err := parseSeconds(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("seedinit.budget=%q: %w", v, err))
		} else {
			o.Budget = d
		}
	}
	if v, ok := c.Get("seedinit.modules"); ok {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				o.Modules = append(o.Modules, m)
			}
		}
	}
	o.Rescue, _ = c.Get("seedinit.rescue")
	o.Disable = c.Has("seedinit.disable")
	o.Kexec, _ = c.Get("seedinit.kexec")
	if v, ok := c.Get("seedinit.report"); ok {
		o.Report = strings.TrimSpace(v)
	}
	if v, ok := c.Get("seedinit.trust"); ok {
		o.Trust = strings.TrimSpace(v)
		if _, err := trust.ParsePolicy(v); err != nil {
			errs = append(errs, fmt.Errorf("seedinit.trust=%q: %w; taken as require", v, err))
		}
	}
	if v, ok := c.Get("seedinit.strict"); ok {
		switch strings.ToLower(v) {
		case "", "1", "yes", "on", "true":
			o.Strict = true
		case "0", "no", "off", "false":
		case "datasource":
			o.Strict, o.StrictDatasource = true, true
		default:
			// A typo must not silently turn an appliance's safety off.
			o.Strict = true
			errs = append(errs, fmt.Errorf("seedinit.strict=%q: want 1, 0 or datasource; taken as 1", v))
		}
	}
	if v, ok := c.Get("seedinit.dhcp"); ok {
		switch v = strings.ToLower(strings.TrimSpace(v)); v {
		case DHCPKeep, DHCPOff:
			o.DHCP = v
		default:
			errs = append(errs, fmt.Errorf("seedinit.dhcp=%q: want keep or off; decided by the root", v))
		}
	}
	return o, errs
}

// seedinit.dhcp= values.
const (
	DHCPKeep = "keep"
	DHCPOff  = "off"
)

// parseSeconds accepts a Go duration ("1500ms") or plain seconds ("2.5").
func parseSeconds(v string) (time.Duration, error) {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want seconds or a duration such as 1500ms")
	}
	return time.Duration(f * float64(time.Second)), nil
}
