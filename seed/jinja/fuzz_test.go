package jinja

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRender renders arbitrary templates: the renderer must never panic or
// hang, and must render the same template the same way twice.
func FuzzRender(f *testing.F) {
	for _, c := range oracleCases {
		f.Add(c.template)
	}
	for _, seed := range []string{
		"{{", "{%", "{#", "}}", "{{ }}", "{% %}", "{%- raw -%}x", "{{ 'a' }}{{ -1 }}{{- -}}",
		"{% for %}", "{% for x in %}", "{% if x %}{% elif %}", "{{ x[::] }}", "{{ x[1:2:0] }}",
		"{{ a.0.b }}", "{{ {'a': [1, {'b': (2,)}]} }}", "{{ '\\u12' }}", "{{ '\\x4' }}",
		"{{ 0x }}", "{{ 1e }}", "{{ 1_ }}", "{{ 00 }}", "{{ 1.5e+3_0 }}", "{{ '%*d' % 1 }}",
		"{{ '%(a' % {} }}", "{% set a, b = 'xy' %}{{ b }}", "{{ x is divisibleby 0 }}",
		"{{ range(0, 10, 0) }}", "{{ 'é'[0] }}{{ 'é'|reverse }}", "{{ \xff }}", "\r\n{{ 1 }}\r",
		// Hostile shapes: doubling, repetition, values kept in a namespace.
		"{% set l = [1] %}" + strings.Repeat("{% set l = l + l %}", 40) + "{{ l|length }}",
		"{% set s = 'ab' %}" + strings.Repeat("{% set s = s ~ s %}", 40) + "{{ s|length }}",
		"{{ ([0] * 999999 + [1])|length }}{{ ('x' * 99999)|replace('x', 'xx') }}",
		"{% set ns = namespace(d={}) %}{% for i in range(1000) %}{% do ns.d.update({i: range(1000)|list}) %}{% endfor %}{{ ns.d|length }}",
	} {
		f.Add(seed)
	}
	vars := decodeVars(f, instanceData)
	f.Fuzz(func(t *testing.T, template string) {
		opts := quietOptions()
		opts.MaxOutput = 1 << 16
		first, err1 := RenderWith([]byte(template), vars, opts)
		second, err2 := RenderWith([]byte(template), vars, opts)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(first, second) {
			t.Fatalf("two renderings differ: %q, %v and %q, %v", first, err1, second, err2)
		}
		if len(first) > opts.MaxOutput {
			t.Fatalf("output of %d bytes exceeds the cap of %d", len(first), opts.MaxOutput)
		}
	})
}

// FuzzInstanceVars feeds arbitrary instance-data JSON through the variable
// conversion and a template that walks it.
func FuzzInstanceVars(f *testing.F) {
	f.Add(instanceData)
	f.Add(`{"v1": {"a-b": 1, "v2": {"x": [1, 2.5, null]}}, "base64-encoded-keys": ["x"], "x": "!!"}`)
	f.Add(`{"a.b": {"c//d": {"e": "f"}}, "v0": {"v1": {}}}`)
	f.Add(`{"base64-encoded-keys": "notalist", "k": 1e999}`)
	f.Fuzz(func(t *testing.T, data string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(data)))
		dec.UseNumber()
		var vars map[string]any
		if dec.Decode(&vars) != nil {
			return
		}
		tmpl := "{% for k in v1 %}{{ k }}={{ v1[k] }}{% endfor %}{{ ds }}{{ x|default(1) }}"
		opts := quietOptions()
		opts.MaxOutput = 1 << 16
		_, _ = RenderWith([]byte(tmpl), vars, opts)
	})
}
