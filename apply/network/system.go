package network

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/seedinit/seedinit/internal/rootfs"
	"github.com/seedinit/seedinit/seed/yaml11"
)

// readSystemNetwork returns the "network" value of the target's
// /etc/cloud/cloud.cfg and cloud.cfg.d/*.cfg, later files winning key by
// key as cloud-init's merged system config does, so that a
// 99-disable-network-config.cfg disables a config given earlier.
func readSystemNetwork(root *rootfs.Root) (any, error) {
	names := []string{"/etc/cloud/cloud.cfg"}
	var errs []error
	if entries, err := root.ReadDir("/etc/cloud/cloud.cfg.d"); err == nil {
		var confd []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".cfg") {
				confd = append(confd, path.Join("/etc/cloud/cloud.cfg.d", e.Name()))
			}
		}
		sort.Strings(confd)
		names = append(names, confd...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("list /etc/cloud/cloud.cfg.d: %w", err))
	}
	var network any
	for _, name := range names {
		b, err := root.ReadFile(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("read %s: %w", name, err))
			}
			continue
		}
		doc, err := yaml11.Load(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("parse %s: %w", name, err))
			continue
		}
		m, _ := doc.(map[string]any)
		v, ok := m["network"]
		if !ok {
			continue
		}
		network = mergeNetwork(network, v)
	}
	return network, errors.Join(errs...)
}

// mergeNetwork lays over on top of base one level deep: a later file's
// keys replace an earlier file's.
func mergeNetwork(base, over any) any {
	b, ok1 := base.(map[string]any)
	o, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return over
	}
	out := map[string]any{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range o {
		out[k] = v
	}
	return out
}
