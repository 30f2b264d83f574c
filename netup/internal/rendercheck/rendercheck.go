// Package rendercheck is the property the parsers' fuzz targets hold the
// rendered files to: no value broke out of its line. It reads the files as
// their consumers do (udev, ifupdown, the shell that sources ifcfg files,
// systemd, netplan, the resolver) and wants every line to be one that the
// renderer writes, with no control character but the newline that ends
// it, and every path to stay inside the directory it is written under.
//
// It is code for tests only, shared by the parse and netup packages.
package rendercheck

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/netup/render"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// Files checks every file; the error names the first bad line of each
// file that has one.
func Files(files render.Files) error {
	var errs []error
	for p, data := range files {
		if err := File(p, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// File checks one rendered file by its path.
func File(p string, data []byte) error {
	if err := render.CheckPath(p); err != nil {
		return err
	}
	for i, c := range data {
		if (c < 0x20 && c != '\n') || c == 0x7f {
			return fmt.Errorf("%s: control character %q at byte %d", p, c, i)
		}
	}
	var line func(string) bool
	switch {
	case p == render.UdevRulesPath:
		line = udevLine
	case p == render.ENIPath:
		line = eniLine
	case strings.HasPrefix(p, render.NetworkdDir+"/"):
		line = networkdLine
	case strings.HasPrefix(p, render.SysconfigDir+"/network-scripts/route6-"):
		line = route6Line
	case strings.HasPrefix(p, render.SysconfigDir+"/network-scripts/"), p == render.SysconfigNetwork:
		line = shellLine
	case p == render.ResolvConfPath:
		line = resolvLine
	case p == render.NMConfPath:
		line = nmLine
	case p == render.NetplanPath:
		return netplanFile(p, data)
	case p == render.JSONPath:
		return nil
	default:
		return fmt.Errorf("%s: a file the checker does not know: teach it the file's lines", p)
	}
	seen := map[string]bool{}
	for i, l := range strings.Split(string(data), "\n") {
		if !line(l) {
			return fmt.Errorf("%s:%d: not a line the renderer writes: %q", p, i+1, l)
		}
		// A unit has each section once, but for the [Address] and
		// [Route] sections it repeats: a second [Match] came from a
		// value.
		if strings.HasPrefix(p, render.NetworkdDir+"/") && strings.HasPrefix(l, "[") && l != "[Address]" && l != "[Route]" {
			if seen[l] {
				return fmt.Errorf("%s:%d: a second %s section", p, i+1, l)
			}
			seen[l] = true
		}
	}
	return nil
}

// Model checks a parsed network itself: no string in it, the v2 document
// netplan gets included, holds a control character. A parser must refuse
// such a value rather than hand it to the renderers.
func Model(n *model.Network) error {
	var walk func(where string, v reflect.Value) error
	walk = func(where string, v reflect.Value) error {
		switch v.Kind() {
		case reflect.String:
			if strings.ContainsFunc(v.String(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return fmt.Errorf("%s: control character in %q", where, v.String())
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				return walk(where, v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				if err := walk(fmt.Sprintf("%s[%d]", where, i), v.Index(i)); err != nil {
					return err
				}
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				if err := walk(where+" key", iter.Key()); err != nil {
					return err
				}
				if err := walk(fmt.Sprintf("%s[%q]", where, fmt.Sprint(iter.Key().Interface())), iter.Value()); err != nil {
					return err
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					if err := walk(where+"."+v.Type().Field(i).Name, v.Field(i)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return walk("network", reflect.ValueOf(n))
}

// compiled regular expressions, made on first use.
var res = sync.OnceValue(func() map[string]*regexp.Regexp {
	const udevValue = `[^"\\$%]*`
	return map[string]*regexp.Regexp{
		"udev": regexp.MustCompile(`^SUBSYSTEM=="net", ACTION=="add", DRIVERS=="` + udevValue +
			`", ATTR\{address\}=="` + udevValue + `", NAME="` + udevValue + `"$`),
		"eniStanza": regexp.MustCompile(`^(auto|allow-hotplug) \S+$|^iface \S+ inet6? \S+$`),
		"eniOption": regexp.MustCompile(`^    ([A-Za-z0-9_.-]+)( .*)?$`),
		"eniRoute":  regexp.MustCompile(`^(    )?(post-up route add|pre-down route del)[A-Za-z0-9 .:/%@_+-]* \|\| true$`),
		"networkd":  regexp.MustCompile(`^\[(Match|Link|Network|Address|Route|DHCPv4|DHCPv6|Bridge|NetDev|Bond|VLAN)\]$|^[A-Za-z0-9]+=[^\\]*$`),
		"shell":     regexp.MustCompile(`^[A-Z][A-Z0-9_]*=("[^"'` + "`" + `$\\;&|<>()~]*"|[^\s"'` + "`" + `$\\;&|<>()~]*)$`),
		"route6":    regexp.MustCompile(`^[A-Za-z0-9 .:/%@_+-]*$`),
		"resolv":    regexp.MustCompile(`^nameserver \S+$|^search( \S+)+$`),
	}
})

func comment(l string) bool { return strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") }

func udevLine(l string) bool { return l == "" || res()["udev"].MatchString(l) }

// ifupdownCommands are the options ifupdown runs as commands: only the
// renderer's own route lines may use them.
var ifupdownCommands = map[string]bool{"up": true, "down": true, "pre-up": true, "post-up": true, "pre-down": true, "post-down": true}

func eniLine(l string) bool {
	switch {
	case l == "" || comment(l):
		return true
	case res()["eniRoute"].MatchString(l):
		return true
	case res()["eniStanza"].MatchString(l):
		return true
	}
	m := res()["eniOption"].FindStringSubmatch(l)
	return m != nil && !ifupdownCommands[strings.ReplaceAll(strings.ToLower(m[1]), "_", "-")]
}

func networkdLine(l string) bool { return l == "" || comment(l) || res()["networkd"].MatchString(l) }

func shellLine(l string) bool { return l == "" || comment(l) || res()["shell"].MatchString(l) }

func route6Line(l string) bool { return l == "" || comment(l) || res()["route6"].MatchString(l) }

func resolvLine(l string) bool { return l == "" || comment(l) || res()["resolv"].MatchString(l) }

func nmLine(l string) bool { return l == "" || comment(l) || l == "[main]" || l == "dns = none" }

// netplanFile wants YAML that a YAML 1.1 reader (netplan) decodes, with no
// control character in any key or value: netplan's generators write them
// into networkd units and NetworkManager keyfiles.
func netplanFile(p string, data []byte) error {
	doc, err := yaml11.Load(data)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	var walk func(where string, v any) error
	walk = func(where string, v any) error {
		switch x := v.(type) {
		case string:
			if strings.ContainsFunc(x, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return fmt.Errorf("%s: %s: control character in %q", p, where, x)
			}
		case map[string]any:
			for k, item := range x {
				if err := walk(where+" key", k); err != nil {
					return err
				}
				if err := walk(path.Join(where, k), item); err != nil {
					return err
				}
			}
		case []any:
			for i, item := range x {
				if err := walk(fmt.Sprintf("%s[%d]", where, i), item); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("", doc)
}
