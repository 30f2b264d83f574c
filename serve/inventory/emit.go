package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/seedinit/seedinit/seed/yaml11"
)

// MarshalYAML writes a decoded document (the values yaml11.Load gives) as
// block YAML that PyYAML and yaml11 read back as the same values: keys
// sorted, so the same inventory serves the same bytes (and a manifest's
// digests stay put); every string double-quoted with JSON's escapes, which
// YAML's double-quoted scalars share, so that no string is taken for a
// YAML 1.1 boolean, number or date ("yes", "0644", "1_000") by the
// instance.
func MarshalYAML(v any) []byte {
	var b bytes.Buffer
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}\n")
			break
		}
		writeMapping(&b, x, 0)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]\n")
			break
		}
		writeSequence(&b, x, 0)
	default:
		b.WriteString(scalarYAML(v))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func writeMapping(b *bytes.Buffer, m map[string]any, indent int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pad := strings.Repeat(" ", indent)
	for _, k := range keys {
		b.WriteString(pad)
		b.WriteString(keyYAML(k))
		b.WriteByte(':')
		writeValue(b, m[k], indent)
	}
}

func writeSequence(b *bytes.Buffer, s []any, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, item := range s {
		b.WriteString(pad)
		b.WriteByte('-')
		writeValue(b, item, indent)
	}
}

// writeValue writes what follows "key:" or "-": a scalar on the same
// line, a collection indented below.
func writeValue(b *bytes.Buffer, v any, indent int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		writeMapping(b, x, indent+2)
	case []any:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteByte('\n')
		writeSequence(b, x, indent+2)
	default:
		b.WriteByte(' ')
		b.WriteString(scalarYAML(v))
		b.WriteByte('\n')
	}
}

var plainKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`) })

// keyYAML writes a key plain when YAML 1.1 reads it back as that string,
// quoted otherwise.
func keyYAML(k string) string {
	if plainKeyRE().MatchString(k) && yaml11.PlainIsString(k) {
		return k
	}
	return quoteYAML(k)
}

func scalarYAML(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		switch {
		case math.IsNaN(x):
			return ".nan"
		case math.IsInf(x, 1):
			return ".inf"
		case math.IsInf(x, -1):
			return "-.inf"
		}
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0" // YAML 1.1 reads 3 as an integer
		}
		return s
	case string:
		return quoteYAML(x)
	}
	return quoteYAML(fmt.Sprint(v))
}

// quoteYAML is a double-quoted scalar: JSON's escapes are YAML's.
func quoteYAML(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
