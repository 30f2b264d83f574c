package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goVars are variables as a Go caller builds them, not as JSON decodes them.
func goVars() map[string]any {
	return map[string]any{
		"v1": map[string]any{
			"local-hostname":  "node-7",
			"instance-id":     "i-0abc",
			"public_ssh_keys": []string{"ssh-ed25519 AAA a@b", "ssh-rsa BBB c@d"},
			"launch_index":    3,
			"region":          nil,
		},
		"ds": map[string]any{
			"meta_data": map[string]string{"instance-id": "i-0abc", "role": "ips"},
		},
		"count":   int32(5),
		"ratio":   0.5,
		"enabled": true,
		"number":  json.Number("12"),
		"decimal": json.Number("1.0"),
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name, template, want string
	}{
		{"plain", "hello\n", "hello\n"},
		{"dotted access", "{{ v1.local_hostname }}", "node-7"},
		{"dashed key by subscript", `{{ v1["local-hostname"] }}`, "node-7"},
		{"v1 keys at top level", "{{ instance_id }}/{{ local_hostname }}", "i-0abc/node-7"},
		{"map of strings", "{{ ds.meta_data.role }} {{ ds.meta_data.instance_id }}", "ips i-0abc"},
		{"string slice", "{{ v1.public_ssh_keys|length }} {{ v1.public_ssh_keys[1] }}", "2 ssh-rsa BBB c@d"},
		{"go ints", "{{ v1.launch_index + count }} {{ count is integer }}", "8 True"},
		{"json numbers stay apart", "{{ number }} {{ decimal }} {{ number + 1 }}", "12 1.0 13"},
		{"floats", "{{ ratio * 3 }} {{ ratio|string }}", "1.5 0.5"},
		{"none", "{{ v1.region }} {{ v1.region is none }}", "None True"},
		{"bool", "{{ enabled }} {{ not enabled }}", "True False"},
		{"missing variable", "{{ nope }} {{ v1.nope }} {{ v1.public_ssh_keys[9] }}",
			"CI_MISSING_JINJA_VAR/nope CI_MISSING_JINJA_VAR/nope CI_MISSING_JINJA_VAR/9"},
		{"default filter", "{{ nope|default('x') }} {{ v1.region|d('r', true) }}", "x r"},
		{"for with loop", "{% for k in v1.public_ssh_keys %}{{ loop.index }}:{{ k.split()[0] }}{% if not loop.last %},{% endif %}{% endfor %}",
			"1:ssh-ed25519,2:ssh-rsa"},
		{"for items", "{% for k, v in ds.meta_data.items() %}{{ k }}={{ v }};{% endfor %}", "instance-id=i-0abc;instance_id=i-0abc;role=ips;"},
		{"trim_blocks", "{% if true %}\nyes\n{% endif %}\n", "yes\n\n"},
		{"strip markers", "a   {{- 'b' -}}   c", "abc"},
		{"trailing newline kept once", "x\n\n", "x\n\n"},
		{"crlf normalized", "a\r\nb\r\n", "a\nb\n"},
		{"python repr", "{{ ['a', 1, none, true, 1.5, {'k': (1,)}] }}", "['a', 1, None, True, 1.5, {'k': (1,)}]"},
		{"unicode", "{{ 'é☃'|upper }} {{ 'é☃'|length }}", "É☃ 2"},
		{"set and scope", "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "21"},
		{"raw", "{% raw %}{{ x }}{% endraw %}", "{{ x }}"},
		{"inline if", "{{ 'a' if enabled else 'b' }}", "a"},
		{"printf", "{{ '%s=%d' % ('n', count) }}", "n=5"},
		{"tojson", "{{ v1.public_ssh_keys|tojson }}", `["ssh-ed25519 AAA a@b", "ssh-rsa BBB c@d"]`},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderWith([]byte(tc.template), goVars(), quietOptions())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorsCarryLine checks that every failure names the template line.
func TestErrorsCarryLine(t *testing.T) {
	tests := []struct {
		name, template string
		line           int
		contains       string
	}{
		{"unknown filter", "a\nb\n{{ x|frobnicate }}\n", 3, `unsupported filter "frobnicate"`},
		{"unknown test", "\n{{ x is frob }}", 2, `unsupported test "frob"`},
		{"syntax", "a\n\n\n{% if %}", 4, "expected an expression"},
		{"unclosed if", "{% if true %}\n\nx", 3, "unexpected end of template"},
		{"unclosed comment", "x\n{# never closed\n", 2, "missing end of comment"},
		{"unterminated string", "\n\n{{ 'abc }}", 3, "unterminated string"},
		{"unexpected char", "{{ a $ b }}", 1, "unexpected char"},
		{"macro", "x\n{% macro m() %}{% endmacro %}", 2, `unsupported statement "macro"`},
		{"include", "{% include 'x' %}", 1, `unsupported statement "include"`},
		{"extends", "\n\n{% extends 'x' %}", 3, `unsupported statement "extends"`},
		{"call block", "{% call foo() %}{% endcall %}", 1, `unsupported statement "call"`},
		{"filter block", "{% filter upper %}x{% endfilter %}", 1, `unsupported statement "filter"`},
		{"block set", "{% set x %}y{% endset %}", 1, "unsupported block set"},
		{"recursive loop", "{% for x in y recursive %}{% endfor %}", 1, "unsupported recursive"},
		{"undefined arithmetic", "ok\n{{ nope + 1 }}", 2, "'nope' is undefined"},
		{"attribute of undefined", "\n\n{{ nope.key }}", 3, "'nope' is undefined"},
		{"dash in name", "{{ v1.local-hostname }}", 1, `Perhaps you meant "local_hostname"?`},
		{"type error in loop body", "{% for i in [1, 2] %}\n{{ i + 'a' }}\n{% endfor %}", 2, "unsupported operand"},
		{"not iterable", "\n{% for i in 5 %}{% endfor %}", 2, "'int' object is not iterable"},
		{"unsupported method", "{{ 'a'.zfill(3) }}", 1, "unsupported method"},
		{"unsupported function", "{{ joiner() }}", 1, "unsupported function joiner()"},
		{"set attribute of non-namespace", "\n{% set v1.x = 1 %}", 2, "non-namespace"},
		{"division by zero", "\n\n\n\n{{ 1 // 0 }}", 5, "division or modulo by zero"},
		{"filter argument", "{{ 'a'|replace('a') }}", 1, "filter replace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderWith([]byte(tc.template), goVars(), quietOptions())
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			var syntaxErr *SyntaxError
			var renderErr *RenderError
			line := 0
			switch {
			case errors.As(err, &syntaxErr):
				line = syntaxErr.Line
			case errors.As(err, &renderErr):
				line = renderErr.Line
			default:
				t.Fatalf("error %v (%T) carries no line", err, err)
			}
			if line != tc.line {
				t.Errorf("error %q is at line %d, want %d", err, line, tc.line)
			}
			wantPrefix := "jinja line " + strconv.Itoa(tc.line) + ": "
			if !strings.Contains(err.Error(), wantPrefix) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q and %q", err, wantPrefix, tc.contains)
			}
		})
	}
}

func TestUndefinedErrorIsDetectable(t *testing.T) {
	_, err := RenderWith([]byte("{{ missing.key }}"), nil, quietOptions())
	var ue *UndefinedError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v is not an *UndefinedError", err)
	}
}

// TestLimits feeds hostile templates: each must fail cleanly and fast.
func TestLimits(t *testing.T) {
	tests := []struct {
		name, template string
		maxOutput      int
		contains       string
	}{
		{"output cap", "{% for i in range(100) %}0123456789{% endfor %}", 500, "output exceeds 500 bytes"},
		{"string repetition", "{{ 'x' * 100000000000 }}", 0, "exceeds"},
		{"list repetition", "{{ [1, 2] * 100000000000 }}", 0, "list of more than 1000000 items"},
		// 2^40 items: 391 MiB before lists had a cap of their own.
		{"list doubling", "{% set l = [1] %}" + strings.Repeat("{% set l = l + l %}", 40) + "{{ l|length }}", 0, "list of more than 1000000 items"},
		{"many large lists kept", "{% set ns = namespace(d={}) %}{% set l = range(900000)|list %}{% for i in range(100) %}{% do ns.d.update({i: l + [i]}) %}{% endfor %}{{ ns.d|length }}", 0, "template builds more than 67108864 bytes of values"},
		{"huge range", "{% for i in range(100000000) %}{% endfor %}", 0, "range of more than"},
		{"nested loops", "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}{% endfor %}{% endfor %}{% endfor %}", 0, "loop iterations"},
		{"deep parentheses", strings.Repeat("{{ ", 1) + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + " }}", 0, "nest"},
		{"deep blocks", strings.Repeat("{% if true %}", 500) + strings.Repeat("{% endif %}", 500), 0, "nests deeper"},
		{"deep not", "{{ " + strings.Repeat("not ", 5000) + "1 }}", 0, "nests deeper"},
		{"deep unary minus", "{{ " + strings.Repeat("-", 5000) + "1 }}", 0, "nests deeper"},
		{"exponent overflow", "{{ 2 ** 100 }}", 0, "integer overflow"},
		{"replace growth", "{{ ('x' * 1000000)|replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyy') }}", 0, "exceeds"},
		{"append in loop", "{% set l = [] %}{% for i in range(1000000) %}{% do l.append(l) %}{% endfor %}{{ l|length }}", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := quietOptions()
			opts.MaxOutput = tc.maxOutput
			out, err := RenderWith([]byte(tc.template), nil, opts)
			if err == nil {
				if tc.contains != "" {
					t.Fatalf("Render succeeded with %d bytes, want an error containing %q", len(out), tc.contains)
				}
				return
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", err, tc.contains)
			}
		})
	}
}

// TestDeepStructuresStayBounded builds values that would take exponential
// time or unbounded recursion to print or compare: each rendering must end
// with the output wanted or with an error naming the limit.
func TestDeepStructuresStayBounded(t *testing.T) {
	const grow = "{% set l = [1] %}{% set m = [1] %}{% for i in range(60) %}{% do l.append(l[:]) %}{% do m.append(m[:]) %}{% endfor %}"
	tests := []struct{ name, template, want, errContains string }{
		{"self-containing list", "{% set l = [] %}{% do l.append(l) %}{{ l }} {{ l == l }}", "[[...]] True", ""},
		{"self-containing dict", "{% set d = {'a': 1} %}{% do d.update({'self': d}) %}{{ d }}", "{'a': 1, 'self': {...}}", ""},
		{"exponential print", grow + "{{ l }}", "", "exceeds"},
		{"exponential compare", grow + "{{ l == m }}", "", "too much work"},
		{"exponential tojson", grow + "{{ l|tojson }}", "", "exceeds"},
		{"cyclic compare", "{% set l = [] %}{% do l.append(l) %}{% set m = [] %}{% do m.append(m) %}{{ l == m }}", "", "recursion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RenderWith([]byte(tc.template), nil, quietOptions())
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("Render = %.80q, %v; want an error containing %q", out, err, tc.errContains)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingVariablesAreLogged(t *testing.T) {
	var logs bytes.Buffer
	opts := Options{Name: "part-003", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	out, err := RenderWith([]byte("a {{ nope }} {{ v1.gone }}\n"), goVars(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"nope", "gone"}, MissingVariables(out)); diff != "" {
		t.Errorf("MissingVariables (-want +got):\n%s", diff)
	}
	for _, want := range []string{"level=WARN", "part-003", "nope", "gone"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q does not contain %q", logs.String(), want)
		}
	}
}

func TestInstanceVars(t *testing.T) {
	data := map[string]any{
		"base64-encoded-keys": []any{"ds/user-data", "ds/secret"},
		"ds": map[string]any{
			"secret":    "c2VjcmV0",
			"user-data": "aGk=",
			"v1.0":      map[string]any{"a": 1},
		},
		"v1":         map[string]any{"cloud-name": "nocloud", "b": "x"},
		"b":          "top",
		"a//b**c==d": 1,
	}
	vars, err := instanceVars(data)
	if err != nil {
		t.Fatal(err)
	}
	keysOf := func(d *pyDict) []string {
		var keys []string
		for _, k := range d.keys {
			keys = append(keys, k.(string))
		}
		return keys
	}
	wantTop := []string{"a//b**c==d", "a_b_c_d", "b", "base64-encoded-keys", "base64_encoded_keys", "ds", "v1", "cloud-name", "cloud_name"}
	if diff := cmp.Diff(wantTop, keysOf(vars)); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	// "b" keeps its sorted position but takes v1's value, as a Python dict
	// assignment does.
	if got, _ := vars.get("b"); got != "x" {
		t.Errorf("b = %v, want v1's value x", got)
	}
	ds, _ := vars.get("ds")
	dsDict := ds.(*pyDict)
	if diff := cmp.Diff([]string{"secret", "user-data", "user_data", "v1.0", "v1_0"}, keysOf(dsDict)); diff != "" {
		t.Errorf("ds keys (-want +got):\n%s", diff)
	}
	// cloud-init matches decode paths with dashes turned to underscores
	// against paths of original keys: ds/secret decodes, ds/user-data not.
	if got, _ := dsDict.get("secret"); got != "secret" {
		t.Errorf("ds.secret = %v, want it decoded", got)
	}
	if got, _ := dsDict.get("user-data"); got != "aGk=" {
		t.Errorf("ds.user-data = %v, want it left encoded as cloud-init does", got)
	}
}

func TestAppendDoesNotLeakIntoAliases(t *testing.T) {
	vars := map[string]any{"v1": map[string]any{"keys": []any{"a"}}}
	out, err := RenderWith([]byte("{% do v1['keys'].append('b') %}{{ v1['keys'] }} {{ keys }}"), vars, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("['a', 'b'] ['a']", string(out)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"a"}, vars["v1"].(map[string]any)["keys"]); diff != "" {
		t.Errorf("caller's vars changed (-want +got):\n%s", diff)
	}
}
