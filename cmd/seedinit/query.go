package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/apply/target"
)

func runQuery(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seedinit query", flag.ContinueOnError)
	rootDir := fs.String("root", "/", "target root directory")
	all := fs.Bool("all", false, "print all instance data")
	listKeys := fs.Bool("list-keys", false, "list the keys below KEY (or the top level)")
	pos, code, ok := parseFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return fail(stderr, "query: one KEY at most, got %d", len(pos))
	}
	if len(pos) == 0 && !*all && !*listKeys {
		return fail(stderr, "query: give a KEY (such as v1.instance_id), --all or --list-keys")
	}
	root, err := target.Open(*rootDir)
	if err != nil {
		return fail(stderr, "query: %v", err)
	}
	defer root.Close()
	data, err := readInstanceData(root)
	if err != nil {
		return fail(stderr, "query: %v", err)
	}
	var v any = data
	if len(pos) == 1 {
		v, err = lookupKey(data, pos[0])
		if err != nil {
			return fail(stderr, "query: %v", err)
		}
	}
	if *listKeys {
		m, ok := v.(map[string]any)
		if !ok {
			return fail(stderr, "query: --list-keys: %s is not a mapping", pos[0])
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(stdout, strings.Join(keys, "\n"))
		return exitOK
	}
	if s, ok := v.(string); ok {
		fmt.Fprintln(stdout, s)
		return exitOK
	}
	b, _ := json.MarshalIndent(v, "", " ")
	fmt.Fprintln(stdout, string(b))
	return exitOK
}

// readInstanceData prefers the sensitive copy (merged_cfg included) where
// it is readable, as cloud-init query does for root; the v1 keys are also
// offered at the top level.
func readInstanceData(root *target.Root) (map[string]any, error) {
	name := "/run/cloud-init/instance-data-sensitive.json"
	b, err := root.ReadFile(name)
	if err != nil {
		name = "/run/cloud-init/instance-data.json"
		b, err = root.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("no instance data in %s (has seedinit run?): %w", root.Dir(), err)
	}
	var data map[string]any
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	if v1, ok := data["v1"].(map[string]any); ok {
		for k, v := range v1 {
			if _, taken := data[k]; !taken {
				data[k] = v
			}
		}
	}
	return data, nil
}

// lookupKey follows a dotted path; list items are addressed by index.
func lookupKey(data map[string]any, key string) (any, error) {
	var cur any = data
	for i, part := range strings.Split(key, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, fmt.Errorf("key %q: no %q at %q", key, part, strings.Join(strings.Split(key, ".")[:i], "."))
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(part)
			if err != nil || n < 0 || n >= len(c) {
				return nil, fmt.Errorf("key %q: %q is not an index of a %d-item list", key, part, len(c))
			}
			cur = c[n]
		default:
			return nil, fmt.Errorf("key %q: %q is below a scalar", key, part)
		}
	}
	return cur, nil
}
