// Package jinja renders the subset of Jinja2 that cloud-init users write in
// "## template: jinja" user-data, with the settings cloud-init 22.4 uses:
// trim_blocks on, lstrip_blocks off, the trailing newline of the template
// kept, and missing variables printed as CI_MISSING_JINJA_VAR/<name>.
//
// The subset: {{ }} output, {% if/elif/else %}, {% for %} (with else,
// unpacking, loop.*, an if filter), {% set %}, {% do %}, {% raw %},
// comments and whitespace control; Python-like expressions (literals,
// lists, tuples, dicts, attribute and item access, slices, arithmetic,
// comparisons, and/or/not, in, ~, inline if); common filters, tests and
// str/dict/list methods. Anything else is a *SyntaxError naming the line.
package jinja

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Options tune RenderWith.
type Options struct {
	// Name identifies the template in log messages ("part-001").
	Name string
	// Logger receives cloud-init's warning about variables that rendered
	// as CI_MISSING_JINJA_VAR; nil means slog.Default().
	Logger *slog.Logger
	// MaxOutput caps the rendered size in bytes; 0 means DefaultMaxOutput.
	MaxOutput int
}

// Render renders a template (without its "## template: jinja" header line)
// against vars, which is instance-data as instance-data.json holds it (v1,
// ds, merged_cfg ...). Render prepares vars as cloud-init does (keys
// sorted, base64-encoded-keys decoded, the keys of v1 copied to the top,
// "-" and "." in keys aliased with "_"), so callers pass the raw
// instance-data. Decode JSON with json.Decoder.UseNumber so that 1 and 1.0
// stay apart as in Python.
//
// A missing variable renders as CI_MISSING_JINJA_VAR/<name> with a warning
// on slog.Default(); using one in arithmetic or attribute access is an
// error wrapping *UndefinedError (cloud-init then ignores the part).
// Templates this renderer cannot run give an error wrapping *SyntaxError.
func Render(src []byte, vars map[string]any) ([]byte, error) {
	return RenderWith(src, vars, Options{})
}

// RenderWith is Render with options.
func RenderWith(src []byte, vars map[string]any, opts Options) ([]byte, error) {
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	where := "jinja template"
	if opts.Name != "" {
		where += " " + opts.Name
	}
	globals, err := instanceVars(vars)
	if err != nil {
		return nil, fmt.Errorf("prepare variables for %s: %w", where, err)
	}
	tmpl, err := parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", where, err)
	}
	r := &renderer{maxOutput: opts.MaxOutput, globals: globals}
	if err := r.execBody(tmpl.body, newScope(nil, tmpl.undefined)); err != nil {
		return nil, fmt.Errorf("render %s: %w", where, err)
	}
	// cloud-init adds back the newline that Jinja2 drops at the end.
	if strings.HasSuffix(string(src), "\n") {
		if err := r.write("\n"); err != nil {
			return nil, fmt.Errorf("render %s: %w", where, err)
		}
	}
	out := []byte(r.out.String())
	if missing := MissingVariables(out); len(missing) > 0 {
		opts.Logger.Warn("could not render jinja template variables",
			"template", opts.Name, "variables", missing)
	}
	return out, nil
}

var missingVarPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(regexp.QuoteMeta(missingPrefix) + `\S+`) })

// MissingVariables lists the names that rendered as
// CI_MISSING_JINJA_VAR/<name> in out, as cloud-init reports them.
func MissingVariables(out []byte) []string {
	var names []string
	for _, m := range missingVarPattern().FindAll(out, -1) {
		names = append(names, strings.TrimPrefix(string(m), missingPrefix))
	}
	return names
}

// maxVarDepth bounds the nesting of the variables a caller passes.
const maxVarDepth = 200

// instanceVars turns instance-data into the variables of a template as
// cloud-init's convert_jinja_instance_data does: keys sorted, the
// base64-encoded-keys decoded, the keys of v1 (any "v<N>" dict) copied to
// the top level, and every key holding a Jinja operator ("-", ".", ...)
// aliased with "_" in its place ("availability-zone" is also
// "availability_zone").
func instanceVars(data map[string]any) (*pyDict, error) {
	var decodePaths []string
	if keys, ok := data["base64-encoded-keys"]; ok {
		list, _ := toValue(keys, 0)
		if l, ok := list.(*pyList); ok {
			for _, k := range l.items {
				if s, ok := k.(string); ok {
					// cloud-init compares these, dashes turned to
					// underscores, with paths made of the original keys.
					decodePaths = append(decodePaths, strings.ReplaceAll(s, "-", "_"))
				}
			}
		}
	}
	return convertInstanceData(data, "", decodePaths, 0)
}

var versionKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v\d+$`) })

func convertInstanceData(data map[string]any, prefix string, decodePaths []string, depth int) (*pyDict, error) {
	if depth > maxVarDepth {
		return nil, fmt.Errorf("variables nest deeper than %d levels", maxVarDepth)
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	result := newDict()
	var errs []error
	for _, key := range keys {
		keyPath := key
		if prefix != "" {
			keyPath = prefix + "/" + key
		}
		raw := data[key]
		if slices.Contains(decodePaths, keyPath) {
			if s, ok := raw.(string); ok {
				if decoded, err := base64.StdEncoding.DecodeString(s); err == nil {
					raw = string(decoded)
				}
			}
		}
		if m, ok := asStringMap(raw); ok {
			sub, err := convertInstanceData(m, keyPath, decodePaths, depth+1)
			if err != nil {
				errs = append(errs, fmt.Errorf("convert key %q: %w", keyPath, err))
				continue
			}
			result.setString(key, sub)
			if versionKey().MatchString(key) {
				for i, subKey := range sub.keys {
					_ = result.set(subKey, deepCopy(sub.vals[i]))
				}
			}
		} else {
			v, err := toValue(raw, depth+1)
			if err != nil {
				errs = append(errs, fmt.Errorf("convert key %q: %w", keyPath, err))
				continue
			}
			result.setString(key, v)
		}
		if alias := operatorAlias(key); alias != key {
			v, _ := result.get(key)
			result.setString(alias, deepCopy(v))
		}
	}
	return result, errors.Join(errs...)
}

// operatorAlias replaces every Jinja2 operator in a key with "_", longest
// operator first, as cloud-init's get_jinja_variable_alias does.
func operatorAlias(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); {
		matched := false
		for _, op := range operators {
			if strings.HasPrefix(key[i:], op) {
				b.WriteByte('_')
				i += len(op)
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(key[i])
			i++
		}
	}
	return b.String()
}

func deepCopy(v value) value {
	switch v := v.(type) {
	case *pyList:
		items := make([]value, len(v.items))
		for i, item := range v.items {
			items[i] = deepCopy(item)
		}
		return &pyList{items: items, kind: v.kind, rangeArgs: v.rangeArgs}
	case *pyDict:
		d := newDict()
		for i, k := range v.keys {
			_ = d.set(k, deepCopy(v.vals[i]))
		}
		return d
	}
	return v
}

func asStringMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[string]string:
		out := make(map[string]any, len(m))
		for k, s := range m {
			out[k] = s
		}
		return out, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String {
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[iter.Key().String()] = iter.Value().Interface()
		}
		return out, true
	}
	return nil, false
}

// toValue converts a Go value (as decoded from JSON or YAML, or built by
// the caller) into a template value. Integers stay integers; use
// json.Decoder.UseNumber so that JSON's 1 and 1.0 stay apart as in Python.
func toValue(v any, depth int) (value, error) {
	if depth > maxVarDepth {
		return nil, fmt.Errorf("variables nest deeper than %d levels", maxVarDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool, string, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil && !isRangeErr(err) {
			return nil, fmt.Errorf("convert number %q: %w", string(x), err)
		}
		return f, nil
	case []byte:
		if utf8.Valid(x) {
			return string(x), nil
		}
		return nil, errors.New("bytes that are not UTF-8 text")
	case []any:
		items := make([]value, len(x))
		for i, item := range x {
			iv, err := toValue(item, depth+1)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			items[i] = iv
		}
		return newList(items), nil
	}
	if m, ok := asStringMap(v); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d := newDict()
		for _, k := range keys {
			kv, err := toValue(m[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			d.setString(k, kv)
		}
		return d, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return nil, errIntOverflow
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Slice, reflect.Array:
		items := make([]value, rv.Len())
		for i := range items {
			iv, err := toValue(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			items[i] = iv
		}
		return newList(items), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return toValue(rv.Elem().Interface(), depth+1)
	}
	return nil, fmt.Errorf("unsupported variable type %T", v)
}
