package mounts

import (
	"fmt"
	"log/slog"

	"github.com/seedinit/seedinit/apply"
)

// Plan turns cloud-config's mounts list into the fstab entries the module
// owns, in cloud-init's order: the configured entries with defaults filled
// in, then ephemeral0 on /mnt and the metadata's swap unless configured. An
// entry whose mount point is null drops the earlier entries of its device
// and is not written itself. A bad item is reported and skipped.
func Plan(raw []any, defaults [6]*string, current Fstab, resolver Resolver, log *slog.Logger) ([]Entry, []error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	type field = *string
	var planned [][]field
	for i, item := range raw {
		list, ok := item.([]any)
		if !ok {
			errs = append(errs, fmt.Errorf("read mounts: item %d: want a list, got %s", i, apply.TypeName(item)))
			continue
		}
		if len(list) == 0 {
			errs = append(errs, fmt.Errorf("read mounts: item %d: empty list", i))
			continue
		}
		fields := make([]field, len(list))
		bad := false
		for j, v := range list {
			if v == nil {
				continue
			}
			s, err := apply.AsString(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("read mounts: item %d field %d: %w", i, j, err))
				bad = true
				break
			}
			fields[j] = &s
		}
		if bad {
			continue
		}
		start := "None"
		if fields[0] != nil {
			start = *fields[0]
		}
		sanitized := resolver.Sanitize(start)
		switch {
		case sanitized == "":
			// cloud-init 22.4 logs "Ignoring nonexistent named mount" and
			// then writes the entry with the name as given: that is what
			// lets LABEL=, UUID= and not-yet-present devices through.
			log.Debug("mounts: device not found, keeping the name as written", "device", start)
			fields[0] = &start
		case current.DeviceLines[sanitized] != "":
			log.Info("mounts: device already in fstab, leaving it to that line", "device", sanitized)
			continue
		default:
			fields[0] = &sanitized
		}
		planned = append(planned, fields)
	}
	for i, fields := range planned {
		for j := range defaults {
			if j >= len(fields) {
				fields = append(fields, defaults[j])
			} else if fields[j] == nil {
				fields[j] = defaults[j]
			}
		}
		planned[i] = fields
		if fields[1] == nil {
			for k := range i {
				if eq(planned[k][0], fields[0]) {
					planned[k][1] = nil
				}
			}
		}
	}
	opts := "defaults"
	if defaults[3] != nil {
		opts = *defaults[3]
	}
	for _, def := range []Entry{
		{"ephemeral0", "/mnt", "auto", opts, "0", "2"},
		{"swap", "none", "swap", "sw", "0", "0"},
	} {
		sanitized := resolver.Sanitize(def[0])
		if sanitized == "" || current.DeviceLines[sanitized] != "" {
			continue
		}
		has := false
		for _, f := range planned {
			if f[0] != nil && *f[0] == sanitized {
				has = true
				break
			}
		}
		if has {
			continue
		}
		def[0] = sanitized
		fields := make([]field, 6)
		for j := range def {
			fields[j] = &def[j]
		}
		planned = append(planned, fields)
	}
	var entries []Entry
	for i, fields := range planned {
		if fields[1] == nil {
			continue
		}
		var e Entry
		missing := -1
		for j := range e {
			if j < len(fields) && fields[j] != nil {
				e[j] = *fields[j]
			} else if missing < 0 {
				missing = j
			}
		}
		if missing >= 0 {
			// cloud-init fails the whole module here (it cannot join a
			// None); one entry is all we drop.
			errs = append(errs, fmt.Errorf("plan mounts: entry %d (%s): field %d is null and has no default", i, e[0], missing))
			continue
		}
		entries = append(entries, e)
	}
	return entries, errs
}

func eq(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
