// Package parse reads the network configurations seedinit is handed
// (cloud-init network config v1 and v2, Debian ENI, OpenStack
// network_data.json) into a model.Network, following cloud-init 22.4.2's
// rules for each, so that renderers write what cloud-init would write.
//
// Parsers never stop at the first bad item: they return the network built
// from every item that could be used together with an error joining one
// entry per item that could not, each naming the item (its key or index).
// A value that is not what its key says (ErrInvalidValue: a MAC that is
// not a MAC, a name the kernel would refuse, an address that does not
// parse) is different: it may be an attempt to inject a line into the
// rendered files, and the whole config is refused, with no network.
package parse

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/seedinit/seedinit/netup/model"
	"github.com/seedinit/seedinit/seed/yaml11"
	"go.yaml.in/yaml/v3"
)

// ErrDisabled is returned for "network: {config: disabled}": the user
// asked that seedinit leave the network configuration alone.
var ErrDisabled = errors.New("network configuration is disabled (config: disabled)")

// Options carry facts about the machine that some inputs refer to.
type Options struct {
	// MACs maps the MAC address of each of the machine's NICs to its name,
	// for inputs that identify NICs by MAC only (network_data.json links
	// without a name; v2 ethernets matched by macaddress without
	// set-name). Case does not matter.
	MACs map[string]string
	// Drivers maps a NIC's name to the kernel driver bound to it
	// ("hv_netvsc"), for inputs whose rules depend on it (Azure matches
	// its synthetic NICs by driver too, since an accelerated-networking
	// VF shares their MAC). Empty when the machine is not known.
	Drivers map[string]string
}

// YAML parses a cloud-init network config (v1 or v2), possibly wrapped in
// a top-level "network:" key, decoded with YAML 1.1 rules as PyYAML does.
func YAML(data []byte, opts Options) (*model.Network, error) {
	doc, err := yaml11.Load(data)
	if err != nil {
		return nil, fmt.Errorf("decode network config: %w", err)
	}
	order := keyOrders(data)
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decode network config: expected a mapping, got a %s", yaml11.Kind(doc))
	}
	var path []string
	if inner, ok := m["network"]; ok {
		if m, ok = inner.(map[string]any); !ok {
			return nil, fmt.Errorf("decode network config: key \"network\": expected a mapping, got a %s", yaml11.Kind(inner))
		}
		path = []string{"network"}
	}
	return config(m, opts, func(keys ...string) []string {
		return order[pathKey(append(append([]string{}, path...), keys...))]
	})
}

// Config parses an already decoded network config (the mapping below
// "network:", or the whole document when it has no such key). Mapping
// order is not known here, so v2 devices are taken in sorted name order.
func Config(doc map[string]any, opts Options) (*model.Network, error) {
	if inner, ok := doc["network"].(map[string]any); ok {
		doc = inner
	}
	return config(doc, opts, func(...string) []string { return nil })
}

func config(m map[string]any, opts Options, order func(keys ...string) []string) (*model.Network, error) {
	if c, ok := m["config"].(string); ok && c == "disabled" {
		return nil, ErrDisabled
	}
	switch v := m["version"].(type) {
	case int64:
		switch v {
		case 1:
			return v1(m, opts)
		case 2:
			return v2(m, opts, order)
		}
	case nil:
		return nil, errors.New("parse network config: missing key \"version\" (1 or 2)")
	}
	return nil, fmt.Errorf("parse network config: key \"version\": unsupported version %s (want 1 or 2)", label(m["version"]))
}

func v1(m map[string]any, opts Options) (*model.Network, error) {
	raw, ok := m["config"]
	if !ok || raw == nil {
		return nil, errors.New("parse network config v1: missing key \"config\"")
	}
	items, err := asList(raw)
	if err != nil {
		return nil, fmt.Errorf("parse network config v1: key \"config\": %w", err)
	}
	in := newInterpreter(1, opts.MACs)
	for i, item := range items {
		where := fmt.Sprintf("config[%d]", i)
		cmd, err := asMap(item)
		if err != nil {
			in.fail(fmt.Errorf("%s: %w", where, err))
			continue
		}
		in.command(cmd, where)
	}
	in.finishV1()
	n, err := in.result()
	if err != nil {
		err = fmt.Errorf("parse network config v1: %w", err)
	}
	return refuse(n, err)
}

func pathKey(keys []string) string {
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
	}
	return b.String()
}

// keyOrders records the order of keys in the document's mappings (three
// levels deep below an optional "network:"), which a Go map forgets and
// cloud-init's dicts keep: v2 devices are processed in document order,
// and that order shows in the global DNS list.
func keyOrders(data []byte) map[string][]string {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	out := map[string][]string{}
	var walk func(n *yaml.Node, path []string, depth int)
	walk = func(n *yaml.Node, path []string, depth int) {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode || depth > 4 {
			return
		}
		var keys []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			keys = append(keys, k)
			walk(n.Content[i+1], append(append([]string{}, path...), k), depth+1)
		}
		out[pathKey(path)] = keys
	}
	walk(doc.Content[0], nil, 0)
	return out
}
