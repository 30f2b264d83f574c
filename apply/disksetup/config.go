package disksetup

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply"
)

// DiskSpec is one disk_setup entry.
type DiskSpec struct {
	Device    string
	TableType string
	Layout    Layout
	Overwrite bool
}

// FSSpec is one fs_setup item.
type FSSpec struct {
	Label      string
	Filesystem string
	Device     string
	// Partition is "any" (the default), "auto", "none" or a number.
	Partition string
	Overwrite bool
	ReplaceFS string
	ExtraOpts []string
	Cmd       string
}

// ParseDiskSetup reads disk_setup, sorted by device name so runs are
// repeatable. Entries that are not maps are errors for that entry only.
func ParseDiskSetup(cfg apply.Config) ([]DiskSpec, error) {
	m, ok, err := cfg.Map("disk_setup")
	if err != nil || !ok || m == nil {
		return nil, err
	}
	var specs []DiskSpec
	var errs []error
	for _, dev := range m.Keys() {
		sub, _, err := m.Map(dev)
		if err != nil || sub == nil {
			errs = append(errs, fmt.Errorf("disk_setup: %s: invalid disk definition (want a map): %v", dev, err))
			continue
		}
		spec, err := parseDisk(dev, sub)
		if err != nil {
			errs = append(errs, fmt.Errorf("disk_setup: %s: %w", dev, err))
			continue
		}
		specs = append(specs, spec)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Device < specs[j].Device })
	return specs, errors.Join(errs...)
}

func parseDisk(dev string, m apply.Config) (DiskSpec, error) {
	spec := DiskSpec{Device: dev, TableType: MBR}
	var err error
	if spec.Overwrite, err = m.Bool("overwrite", false); err != nil {
		return spec, err
	}
	if t, ok, err := m.String("table_type"); err != nil {
		return spec, err
	} else if ok {
		spec.TableType = strings.ToLower(t)
		if spec.TableType != MBR && spec.TableType != GPT {
			return spec, fmt.Errorf("table_type %q: want mbr or gpt", t)
		}
	}
	spec.Layout, err = parseLayout(m["layout"])
	return spec, err
}

func parseLayout(v any) (Layout, error) {
	switch l := v.(type) {
	case nil:
		return Layout{}, nil
	case bool:
		return Layout{Whole: l}, nil
	case string:
		if b, err := apply.AsBool(l); err == nil {
			return Layout{Whole: b}, nil
		}
		if strings.EqualFold(l, "remove") {
			return Layout{}, errors.New("layout: remove (wiping the table and filesystems) is not supported by seedinit")
		}
		return Layout{}, fmt.Errorf("layout: %q is not true, false or a list", l)
	case []any:
		var out Layout
		for i, item := range l {
			p, err := parsePart(item)
			if err != nil {
				return Layout{}, fmt.Errorf("layout item %d: %w", i, err)
			}
			out.Parts = append(out.Parts, p)
		}
		return out, nil
	default:
		return Layout{}, fmt.Errorf("layout: %s is not true, false or a list", apply.TypeName(v))
	}
}

func parsePart(item any) (PartSpec, error) {
	if l, ok := item.([]any); ok {
		if len(l) != 2 {
			return PartSpec{}, fmt.Errorf("want [percent, type], got %d values", len(l))
		}
		pct, err := percent(l[0])
		if err != nil {
			return PartSpec{}, err
		}
		typ, err := apply.AsString(l[1])
		if err != nil {
			return PartSpec{}, fmt.Errorf("type: %w", err)
		}
		return PartSpec{Percent: pct, Type: typ}, nil
	}
	pct, err := percent(item)
	return PartSpec{Percent: pct}, err
}

func percent(v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case float64:
		f = n
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return 0, fmt.Errorf("percentage %q is not a number", n)
		}
		f = p
	default:
		return 0, fmt.Errorf("percentage: %s is not a number", apply.TypeName(v))
	}
	if f <= 0 || f > 100 {
		return 0, fmt.Errorf("percentage %v is not in (0, 100]", f)
	}
	return f, nil
}

// ParseFSSetup reads fs_setup; a bad item is reported and skipped.
func ParseFSSetup(cfg apply.Config) ([]FSSpec, error) {
	items, ok, err := cfg.List("fs_setup")
	if err != nil || !ok {
		return nil, err
	}
	var specs []FSSpec
	var errs []error
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Errorf("fs_setup item %d: invalid filesystem definition (%s, want a map)", i, apply.TypeName(item)))
			continue
		}
		spec, err := parseFS(apply.Config(m))
		if err != nil {
			errs = append(errs, fmt.Errorf("fs_setup item %d: %w", i, err))
			continue
		}
		specs = append(specs, spec)
	}
	return specs, errors.Join(errs...)
}

func parseFS(m apply.Config) (FSSpec, error) {
	var s FSSpec
	var err error
	str := func(key string) string {
		if err != nil || m[key] == nil {
			return ""
		}
		var v string
		v, err = apply.AsString(m[key])
		if err != nil {
			err = fmt.Errorf("%s: %w", key, err)
		}
		return v
	}
	s.Label, s.Filesystem, s.Device, s.Cmd = str("label"), str("filesystem"), str("device"), str("cmd")
	s.Partition = "any"
	if m.Has("partition") {
		s.Partition = str("partition")
	}
	// replace_fs names the filesystem type that may be replaced.
	s.ReplaceFS = str("replace_fs")
	if err != nil {
		return s, err
	}
	if s.Overwrite, err = m.Bool("overwrite", false); err != nil {
		return s, err
	}
	if m["extra_opts"] != nil {
		if s.ExtraOpts, err = apply.AsStringList(m["extra_opts"], false); err != nil {
			return s, fmt.Errorf("extra_opts: %w", err)
		}
	}
	if s.Device == "" {
		return s, errors.New("device: missing")
	}
	// <dev>.N names partition N and overrides the partition key.
	if i := strings.LastIndexByte(s.Device, '.'); i > 0 {
		if _, e := strconv.Atoi(s.Device[i+1:]); e == nil {
			s.Device, s.Partition = s.Device[:i], s.Device[i+1:]
		}
	}
	p := strings.ToLower(s.Partition)
	if _, e := strconv.Atoi(p); e != nil && p != "any" && p != "auto" && p != "none" && p != "" {
		return s, fmt.Errorf("partition %q: want auto, any, none or a number", s.Partition)
	}
	s.Partition = p
	if s.Filesystem == "" && s.Cmd == "" {
		return s, fmt.Errorf("no way to create filesystem %q: filesystem or cmd must be set", s.Label)
	}
	return s, nil
}
