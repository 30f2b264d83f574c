package apply

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// Config is the merged cloud-config: YAML decoded into map[string]any,
// []any, string, bool, int64, float64 and nil, as seed/yaml11 produces.
type Config map[string]any

// Has reports whether key is present (even if null).
func (c Config) Has(key string) bool {
	_, ok := c[key]
	return ok
}

// String returns key as a string. Numbers are accepted and formatted (YAML
// turns "hostname: 1234" into an int); other types are an error naming key.
func (c Config) String(key string) (string, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, err := AsString(v)
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", key, err)
	}
	return s, true, nil
}

// Bool returns key as a boolean, accepting cloud-init's spellings.
func (c Config) Bool(key string, def bool) (bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return def, nil
	}
	b, err := AsBool(v)
	if err != nil {
		return def, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// Map returns key as a nested Config.
func (c Config) Map(key string) (Config, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return nil, false, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		if cm, isConfig := v.(Config); isConfig {
			return cm, true, nil
		}
		return nil, true, fmt.Errorf("%s: want a mapping, got %s", key, TypeName(v))
	}
	return Config(m), true, nil
}

// List returns key as a list; a lone scalar is not turned into a list.
func (c Config) List(key string) ([]any, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return nil, false, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, true, fmt.Errorf("%s: want a list, got %s", key, TypeName(v))
	}
	return l, true, nil
}

// StringList returns key as a list of strings; a single string (or, when
// splitComma, a comma-separated one) counts as a list, as cloud-init's
// modules accept for groups and similar keys.
func (c Config) StringList(key string, splitComma bool) ([]string, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return nil, false, nil
	}
	l, err := AsStringList(v, splitComma)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", key, err)
	}
	return l, true, nil
}

// Int returns key as an integer.
func (c Config) Int(key string) (int64, bool, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch n := v.(type) {
	case int64:
		return n, true, nil
	case int:
		return int64(n), true, nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true, nil
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64); err == nil {
			return i, true, nil
		}
	}
	return 0, true, fmt.Errorf("%s: want an integer, got %s", key, TypeName(v))
}

// AsString formats scalars as cloud-init's str() would.
func AsString(v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case int64:
		return strconv.FormatInt(s, 10), nil
	case int:
		return strconv.Itoa(s), nil
	case float64:
		return strconv.FormatFloat(s, 'g', -1, 64), nil
	case bool:
		if s {
			return "True", nil
		}
		return "False", nil
	}
	return "", fmt.Errorf("want a string, got %s", TypeName(v))
}

// AsBool accepts true/false, yes/no, on/off, 1/0 (any case), as cloud-init's
// util.is_true / translate_bool do.
func AsBool(v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case int64:
		if b == 0 || b == 1 {
			return b == 1, nil
		}
	case int:
		if b == 0 || b == 1 {
			return b == 1, nil
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true", "yes", "on", "1", "y":
			return true, nil
		case "false", "no", "off", "0", "n", "":
			return false, nil
		}
		return false, fmt.Errorf("want a boolean, got %q", b)
	}
	return false, fmt.Errorf("want a boolean, got %s", TypeName(v))
}

// AsStringList accepts a list of scalars, or a single string.
func AsStringList(v any, splitComma bool) ([]string, error) {
	switch l := v.(type) {
	case string:
		if !splitComma {
			return []string{l}, nil
		}
		var out []string
		for _, p := range strings.Split(l, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	case []any:
		out := make([]string, 0, len(l))
		for i, e := range l {
			s, err := AsString(e)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of strings, got %s", TypeName(v))
}

// TypeName names a decoded YAML value's type the way a user thinks of it.
func TypeName(v any) string {
	return yaml11.TypeName(v)
}

// Keys returns the config's top-level keys, sorted.
func (c Config) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
