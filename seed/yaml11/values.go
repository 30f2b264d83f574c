package yaml11

import (
	"fmt"
	"reflect"
)

// Kind names the YAML type of a decoded value in a word ("string",
// "integer", "number", "boolean", "list", "mapping", "null"), for messages
// that say what was given where something else was wanted.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64:
		return "integer"
	case float64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// TypeName is Kind with an article ("a string", "an integer"), and "null"
// as it is, to read as the object of "got".
func TypeName(v any) string {
	switch k := Kind(v); k {
	case "integer":
		return "an integer"
	case "string", "boolean", "number", "list", "mapping":
		return "a " + k
	default:
		return k
	}
}

// Truthy is Python's bool() of a decoded value: false for None, False,
// zero, the empty string and empty containers.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case bool:
		return x
	case int:
		return x != 0
	case int64:
		return x != 0
	case uint64:
		return x != 0
	case float64:
		return x != 0
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() > 0
	}
	return true
}

// PlainIsString reports whether s, written as a plain (unquoted) scalar,
// loads back as the string s under YAML 1.1's rules: "yes", "0644",
// "1_000" and "1:20" do not.
func PlainIsString(s string) bool {
	v, err := resolvePlain(s, 0)
	got, ok := v.(string)
	return err == nil && ok && got == s
}
