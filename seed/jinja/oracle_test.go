package jinja

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/seedinit/seedinit/internal/testenv"
)

// oracleScript renders each case through cloud-init's own path: the
// instance-data conversion of handlers/jinja_template.py, then
// templater.render_string on the part with its header.
const oracleScript = `
import json, sys
from cloudinit.handlers.jinja_template import convert_jinja_instance_data
from cloudinit.templater import render_string
results = []
for case in json.load(sys.stdin):
    data = case["vars"]
    jvars = convert_jinja_instance_data(
        data, decode_paths=data.get("base64-encoded-keys", []),
        include_key_aliases=True)
    try:
        out = render_string("## template: jinja\n" + case["template"], jvars)
        results.append({"out": out})
    except Exception as e:
        results.append({"err": "%s: %s" % (type(e).__name__, e)})
json.dump(results, sys.stdout)
`

// instanceData looks like the instance-data.json of an OpenStack instance.
const instanceData = `{
  "base64-encoded-keys": ["ds/secret"],
  "ds": {
    "_doc": "EXPERIMENTAL: The structure and format of content scoped under the 'ds' key may change in subsequent releases of cloud-init.",
    "meta_data": {
      "availability_zone": "nova",
      "hostname": "web-01.novalocal",
      "instance-id": "3c9a7b2e-5f1d-4e0a-9b7c-2d8e6f4a1b3c",
      "launch_index": 0,
      "local-hostname": "web-01",
      "meta": {"role": "waf", "tier": "edge"},
      "name": "web-01",
      "public_keys": {"mykey": "ssh-ed25519 AAAAC3Nza admin@example"},
      "uuid": "3c9a7b2e-5f1d-4e0a-9b7c-2d8e6f4a1b3c"
    },
    "secret": "aGVsbG8gc2VjcmV0",
    "network_json": {"links": [{"id": "tap0", "ethernet_mac_address": "fa:16:3e:00:00:01", "mtu": 1450}]}
  },
  "merged_cfg": {"_doc": "Merged cloud-init system config", "ssh_pwauth": false, "runcmd": ["echo a", ["ls", "-l"]]},
  "sys_info": {"dist": ["debian", "12", "bookworm"], "python": "3.11.2", "uname": ["Linux", "web-01", "6.1.0-18-amd64", "#1 SMP", "x86_64", ""]},
  "v1": {
    "_beta_keys": ["subplatform"],
    "availability-zone": "nova",
    "availability_zone": "nova",
    "cloud-name": "openstack",
    "cloud_name": "openstack",
    "distro": "debian",
    "distro_release": "bookworm",
    "distro_version": "12",
    "instance-id": "3c9a7b2e-5f1d-4e0a-9b7c-2d8e6f4a1b3c",
    "instance_id": "3c9a7b2e-5f1d-4e0a-9b7c-2d8e6f4a1b3c",
    "kernel_release": "6.1.0-18-amd64",
    "local-hostname": "web-01",
    "local_hostname": "web-01",
    "machine": "x86_64",
    "platform": "openstack",
    "public_ssh_keys": ["ssh-ed25519 AAAAC3Nza admin@example", "ssh-rsa AAAAB3Nza ops@example"],
    "python_version": "3.11.2",
    "region": null,
    "subplatform": "config-disk (/dev/sr0)",
    "variant": "debian"
  },
  "extra": {
    "n": 7, "neg": -7, "f": 2.5, "third": 0.1, "big": 1e20, "tiny": 1.5e-7, "whole": 3.0,
    "flag": true, "off": false, "empty": "", "nothing": null,
    "nums": [3, 1, 2], "words": "  Hello World  foo ", "csv": "a,b,,c",
    "mixed": [1, "a", null, true, 2.0, [1, 2], {"k": "v"}],
    "nested": {"a": {"b": [1, {"c": "deep"}]}},
    "quote": "it's \"quoted\"", "apos": "it's", "unicode": "héllo wörld ☃ 🚀",
    "multiline": "line1\nline2\n\nline4", "ctrl": "tab\there\u0001",
    "dashed-key": "dash", "dotted.key": "dot", "op//key": "ops", "num_str": " 42 ", "hex": "0x1F", "fstr": "3.75"
  }
}`

// oracleCases are templates whose output must match Jinja2's (through
// cloud-init) byte for byte, errors included.
var oracleCases = []struct{ name, template string }{
	{"plain text", "hello\nworld\n"},
	{"no trailing newline", "hello"},
	{"two trailing newlines", "a\n\n"},
	{"crlf", "a\r\nb\r\n{% if true %}\r\nc\r\n{% endif %}\r\n"},
	{"hostname", "#cloud-config\nhostname: {{ v1.local_hostname }}\nfqdn: {{ ds.meta_data.hostname }}\n"},
	{"top-level v1 aliases", "{{ local_hostname }} {{ cloud_name }} {{ instance_id }} {{ platform }}\n"},
	{"subscript with dash", "{{ ds.meta_data['instance-id'] }} {{ ds.meta_data[\"local-hostname\"] }}\n"},
	{"underscore alias of dashed key", "{{ ds.meta_data.local_hostname }} {{ extra.dashed_key }} {{ extra.dotted_key }} {{ extra.op_key }}\n"},
	{"dash is subtraction", "{{ v1.availability-zone }}\n"},
	{"undefined top-level", "a {{ nope }} b\n"},
	{"undefined attribute", "{{ v1.nope }} {{ ds.meta_data['nope-key'] }} {{ v1.public_ssh_keys[5] }}\n"},
	{"undefined attribute of undefined", "{{ nope.deeper }}\n"},
	{"region none", "{{ v1.region }} {{ extra.nothing }} {{ none }} {{ None }}\n"},
	{"booleans", "{{ true }} {{ True }} {{ false }} {{ extra.flag }} {{ merged_cfg.ssh_pwauth }}\n"},
	{"numbers", "{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ 1_000 }} {{ 0x1f }} {{ 0b101 }} {{ 0o17 }} {{ extra.whole }} {{ extra.big }} {{ extra.tiny }} {{ extra.third }}\n"},
	{"arithmetic", "{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 8 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}\n"},
	{"float arithmetic", "{{ 0.1 + 0.2 }} {{ extra.f * 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 / 3 }} {{ 1e16 }} {{ 123456789012345678.0 }} {{ 0.0001 }} {{ 0.00001 }}\n"},
	{"precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ (1 + 2) ~ 3 }} {{ 2 * 3 ~ 4 * 5 }} {{ 1 ~ 2 + 3 ~ 4 }}\n"},
	{"plus binds looser than tilde", "{{ 1 + 2 ~ 3 }}\n"},
	{"string ops", "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'x' ~ 1 ~ none ~ true }} {{ \"it's\" }} {{ 'adj' 'acent' }}\n"},
	{"concat undefined", "{{ 'a' ~ nope ~ 'b' }}\n"},
	{"comparisons", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ none == none }}\n"},
	{"comparison type error", "{{ 1 < 'a' }}\n"},
	{"in", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'meta' in ds.meta_data }} {{ 'x' not in v1 }} {{ 'x' in nope }}\n"},
	{"and or not", "{{ 1 and 2 }} {{ 0 and 2 }} {{ '' or 'fallback' }} {{ none or 0 }} {{ not '' }} {{ nope or 'dflt' }}\n"},
	{"inline if", "{{ 'yes' if extra.flag else 'no' }} {{ 'yes' if extra.off else 'no' }} {{ 'x' if false }}|\n"},
	{"lists and dicts", "{{ [1, 'a', none, true, 2.5] }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ {'a': 1, 'b': [2]} }} {{ {} }} {{ [] }}\n"},
	{"repr of strings", "{{ [extra.quote, extra.apos, extra.multiline, extra.ctrl, extra.unicode, '\\\\'] }}\n"},
	{"print containers", "{{ extra.mixed }}\n{{ ds.meta_data.meta }}\n{{ sys_info.dist }}\n{{ v1.public_ssh_keys }}\n"},
	{"subscripts and slices", "{{ extra.nums[0] }} {{ extra.nums[-1] }} {{ extra.nums[1:] }} {{ extra.nums[::-1] }} {{ 'hello'[1:3] }} {{ 'hello'[::-2] }} {{ extra.nums.0 }} {{ extra.unicode[1] }}\n"},
	{"nested access", "{{ extra.nested.a.b[1].c }} {{ extra.nested['a']['b'][0] }} {{ ds['meta_data']['meta']['role'] }}\n"},
	{"if elif else", "{% if v1.cloud_name == 'aws' %}aws{% elif v1.cloud_name == 'openstack' %}os{% else %}other{% endif %}\n"},
	{"if trim_blocks", "{% if true %}\nkept\n{% endif %}\nafter\n"},
	{"nested if", "{% if extra.flag %}\n  {% if extra.n > 5 %}\n  big\n  {% else %}\n  small\n  {% endif %}\n{% endif %}\n"},
	{"for loop", "{% for key in v1.public_ssh_keys %}\n- {{ key }}\n{% endfor %}\n"},
	{"for loop vars", "{% for x in extra.nums %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/{{ loop.revindex }}:{{ x }} {% endfor %}\n"},
	{"for else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %} {% for x in nope %}{{ x }}{% else %}none{% endfor %}\n"},
	{"for items", "{% for k, v in ds.meta_data.meta.items() %}{{ k }}={{ v }};{% endfor %}\n"},
	{"for dict keys", "{% for k in ds.meta_data %}{{ k }},{% endfor %}\n"},
	{"for string and filter", "{% for c in 'abcd' if c != 'b' %}{{ c }}{{ loop.index }}{% endfor %}\n"},
	{"for unpack tuples", "{% for a, b in [(1, 2), [3, 4]] %}{{ a }}+{{ b }};{% endfor %}\n"},
	{"for scoping", "{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}\n"},
	{"nested loops", "{% for i in range(3) %}{% for j in range(i) %}{{ i }}{{ j }} {% endfor %}{% endfor %}\n"},
	{"range", "{{ range(3) }} {{ range(1, 10, 2) }} {% for i in range(5, 0, -2) %}{{ i }}{% endfor %}\n"},
	{"set", "{% set name = v1.local_hostname ~ '.example.com' %}{{ name }}\n{% set a, b = 1, 2 %}{{ a }}{{ b }}\n"},
	{"set in if", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}\n"},
	{"do append", "{% set l = [] %}{% for k in v1.public_ssh_keys %}{% do l.append(k.split()[0]) %}{% endfor %}{{ l }} {{ l|join(',') }}\n"},
	{"comments", "a{# comment #}b\n{# line comment #}\nc{#- strip -#}  d\n"},
	{"whitespace control", "a  {{- 'b' -}}  c\n  {%- if true -%}  d  {%- endif -%}  \ne\n"},
	{"plus modifier", "{% if true +%}\nx\n{%+ endif %}\ny\n"},
	{"raw", "{% raw %}{{ not rendered }}{% endraw %}\n{%- raw -%}  x  {%- endraw %}\n"},
	{"filters case", "{{ 'Hello World'|lower }} {{ 'hello'|upper }} {{ 'hello world-wide (x)'|title }} {{ 'hELLO wORLD'|capitalize }} {{ nope|lower }} {{ nope|upper }}\n"},
	{"filter default", "{{ nope|default('dflt') }} {{ nope|d('d2') }} {{ extra.empty|default('e') }} {{ extra.empty|default('e', true) }} {{ v1.region|default('r') }} {{ v1.region|default('r', true) }} {{ nope|default }}|\n"},
	{"filter trim replace", "[{{ extra.words|trim }}] [{{ 'xxhixx'|trim('x') }}] {{ 'a-b-c'|replace('-', '_') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '.') }}\n"},
	{"filter join length", "{{ extra.nums|join }} {{ extra.nums|join(', ') }} {{ extra.mixed|join('|') }} {{ 'abc'|join('.') }} {{ extra.nums|length }} {{ extra.unicode|length }} {{ ds.meta_data|count }} {{ nope|length }}\n"},
	{"filter string int float", "{{ 42|string }} {{ none|string }} {{ '42'|int }} {{ extra.num_str|int }} {{ '3.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ extra.hex|int(0, 16) }} {{ '0x1F'|int(base=0) }} {{ 3.9|int }} {{ true|int }} {{ extra.fstr|float }} {{ 'abc'|float }} {{ 2|float }} {{ '1_000'|int }}\n"},
	{"filter first last", "{{ extra.nums|first }} {{ extra.nums|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ []|first }} {{ ds.meta_data.meta|first }}\n"},
	{"filter chains", "{{ v1.local_hostname|upper|replace('-', '_')|lower }} {{ v1.public_ssh_keys|first|trim|length }} {{ -3|abs }} {{ (1, 2)|list }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }}\n"},
	{"filter indent", "key: |\n  {{ extra.multiline|indent(2) }}\nother: {{ 'a\\nb'|indent(4, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ 'x\\ny'|indent('> ') }}\n"},
	{"filter tojson", "{{ ds.meta_data.meta|tojson }} {{ extra.mixed|tojson }} {{ '<a & b>'|tojson }} {{ extra.unicode|tojson }} {{ {'b': 1, 'a': [1, 2.5, none]}|tojson(2) }}\n"},
	{"filter items", "{% for k, v in ds.meta_data.meta|items %}{{ k }}:{{ v }} {% endfor %}\n"},
	{"tests", "{{ nope is defined }} {{ v1 is defined }} {{ nope is undefined }} {{ v1.region is none }} {{ v1.region is not none }} {{ 'a' is string }} {{ 1 is string }} {{ 1 is number }} {{ 1.5 is number }} {{ 'a' is number }} {{ true is number }}\n"},
	{"more tests", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ {} is mapping }} {{ [] is sequence }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 2 is in [1, 2] }} {{ 1 is eq 1 }} {{ 1 is gt 0 }} {{ none is sameas none }}\n"},
	{"not test precedence", "{{ not nope is defined }} {{ nope is not defined and true }}\n"},
	{"string methods", "{{ v1.local_hostname.split('-')[0] }} {{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' x '.strip() }} {{ 'web-01'.startswith('web') }} {{ 'x.yaml'.endswith(('.yml', '.yaml')) }} {{ 'ab'.upper() }} {{ 'hello world'.title() }} {{ '-'.join(['a', 'b']) }} {{ 'hello'.replace('l', 'L') }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }}\n"},
	{"dict methods", "{{ ds.meta_data.meta.get('role') }} {{ ds.meta_data.meta.get('nope') }} {{ ds.meta_data.meta.get('nope', 'd') }} {{ ds.meta_data.meta.keys() }} {{ ds.meta_data.meta.values() }} {{ ds.meta_data.meta.items() }}\n"},
	{"list methods", "{% set l = [1, 2, 2] %}{{ l.count(2) }} {{ l.index(2) }} {% do l.extend([3]) %}{{ l }}\n"},
	{"base64 keys", "{{ ds.secret }}\n"},
	{"cloud-config document", "## comment\n#cloud-config\n{% set role = ds.meta_data.meta.role|default('none') %}\nhostname: {{ v1.local_hostname }}\nwrite_files:\n  - path: /etc/role\n    content: |\n      role={{ role }}\n      az={{ v1.availability_zone }}\n{% if role == 'waf' %}\nruncmd:\n{% for cmd in ['a', 'b'] %}\n  - echo {{ cmd }} {{ loop.index }}\n{% endfor %}\n{% endif %}\n"},
	{"shell script", "#!/bin/sh\n{# set up the instance #}\necho \"{{ v1.instance_id }}\" > /run/id\n{% for k in v1.public_ssh_keys -%}\necho '{{ k }}'\n{% endfor -%}\nexit 0\n"},
	{"undefined arithmetic", "{{ nope + 1 }}\n"},
	{"undefined minus", "{{ 1 - nope }}\n"},
	{"undefined int", "{{ nope|int }}\n"},
	{"undefined in if", "{% if nope %}y{% else %}n{% endif %}{% if nope == nope %}eq{% endif %}{% if nope != 1 %}ne{% endif %}\n"},
	{"unknown filter", "{{ 'a'|nosuchfilter }}\n"},
	{"unknown test", "{{ 'a' is nosuchtest }}\n"},
	{"syntax error", "line1\n{% if %}\n"},
	{"unclosed block", "{% if true %}\nx\n"},
	{"stray end", "{% endif %}\n"},
	{"unclosed output", "{{ a\n"},
	{"division by zero", "{{ 1 / 0 }}\n"},
	{"not callable", "{{ 'a'() }}\n"},
	{"loop var print", "{% for i in [1] %}{{ loop }}{% endfor %}\n"},
	{"brace balance", "{{ {'a': {'b': 1}}['a'] }}\n"},
	{"string escapes", "{{ 'tab\\there' }} {{ \"nl\\nx\" }} {{ 'uni\\u00e9' }} {{ 'hex\\x41' }} {{ 'keep\\d' }} {{ 'q\\'s' }}\n"},
	{"string with tag text", "{{ '}}' }} {{ '{% x %}' }} {{ \"{#\" }}\n"},
	{"unicode output", "{{ extra.unicode }} {{ extra.unicode|upper }} {{ extra.unicode|title }}\n"},
	{"tuple output", "{{ 1, 'a' }}\n"},
	{"chained filters on undefined", "{{ nope|default(v1.local_hostname)|upper }}\n"},
	{"empty template", ""},
	{"only newline", "\n"},
	{"only tag", "{% if false %}x{% endif %}"},
	{"comment at end", "x\n{# end #}\n"},
	{"minus at data start", "{{- 'a' }}\n  {{- 'b' }}\n"},
	{"missing var in list", "{{ [nope, 1] }}\n"},
	{"int overflow-free", "{{ 2 ** 62 }} {{ 9223372036854775807 }} {{ -9223372036854775807 - 1 }}\n"},
	{"dict literal order", "{{ {'z': 1, 'a': 2, 'z': 3} }}\n"},
	{"bool keys", "{{ {1: 'a', true: 'b', 1.0: 'c'} }}\n"},
	{"loop filter else", "{% for x in [1, 2] if x > 5 %}{{ x }}{% else %}none{% endfor %}\n"},
	{"printf", "{{ '%s-%s' % ('a', 1) }} {{ '%d%%' % 50 }} {{ '%05.1f|%-4s|%4s|%x|%#x|%#o|%r' % (3.14159, 'ab', 'cd', 255, 255, 8, 'q') }} {{ '%(a)s=%(b)d' % {'a': 'k', 'b': 2} }} {{ '%s' % [1, 2] }} {{ '%.2e %g %G' % (12345.678, 0.0001, 1e20) }}\n"},
	{"printf errors", "{{ '%s %s' % ('a',) }}\n"},
	{"format filter", "{{ '%s/%s'|format(v1.cloud_name, v1.platform) }} {{ '%(x)s'|format(x='kw') }}\n"},
	{"dictsort sort reverse", "{% for k, v in {'b': 2, 'A': 1, 'c': 0}|dictsort %}{{ k }}{{ v }}{% endfor %} {{ {'b': 2, 'A': 1}|dictsort(true) }} {{ {'b': 2, 'a': 1}|dictsort(by='value', reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A']|sort(case_sensitive=true) }} {{ 'abc'|reverse }} {{ 'abc'|reverse|list }}{% for x in [1, 2]|reverse %}{{ x }}{% endfor %}\n"},
	{"whitespace around tags", "a\n  {% if true %}  \n  b\n  {% endif %}\n{{ 'c' }}\n{% for i in [1] %}\n{{ i }}\n{% endfor %}\n\n{%- if true %}\nd{% endif -%}\n\n  e\n"},
	{"yaml list from loop", "users:\n{% for k in v1.public_ssh_keys %}\n  - name: u{{ loop.index }}\n    ssh_authorized_keys:\n      - {{ k }}\n{% endfor %}\npackages: [{% for p in ['a', 'b'] %}{{ p }}{% if not loop.last %}, {% endif %}{% endfor %}]\n"},
	{"comment trims newline", "a{# c #}\nb {#- c2 #}\n c{# c3 -#}\n\n d{#+ c4 +#}\ne\n"},
	{"set trims newline", "{% set a = 1 %}\n{% set b = 2 -%}\n   {{ a + b }}\n"},
	{"negative numbers and unary", "{{ -extra.n }} {{ +extra.n }} {{ -(-3) }} {{ --3 }} {{ -extra.f }} {{ not not 1 }}\n"},
	{"compare mixed equality", "{{ 'a' == 1 }} {{ [1] == (1,) }} {{ {'a': 1} == {'a': 1} }} {{ none == false }} {{ 0 == false }} {{ 1.0 in [1] }}\n"},
	{"dict get and keys with dashes", "{{ ds.meta_data.get('instance-id') }} {{ ds.meta_data.instance_id }} {{ v1['cloud-name'] }} {{ v1['instance-id'] }}\n"},
	{"undefined hint message", "{{ ([]|first) }} {{ (''|last) }}\n"},
	{"self-containing list", "{% set l = [1] %}{% do l.append(l) %}{{ l }} {{ l == l }} {{ l|length }}\n"},
	{"dict update", "{% set d = {'a': 1} %}{% do d.update({'b': 2}) %}{% do d.update([('c', 3)]) %}{% do d.update(a=0) %}{{ d }}\n"},
	{"scoping read then set", "{{ v1.cloud_name }}{% set cloud_name = 'x' %}{{ cloud_name }}|{{ local_hostname }}{% set local_hostname = 2 %}{{ local_hostname }}\n"},
	{"scoping loop before set", "{% for i in [1, 2] %}{{ cloud_name }},{% endfor %}{% set cloud_name = 2 %}{{ cloud_name }}\n"},
	{"scoping if before set", "{% if true %}{{ cloud_name }}{% endif %}{% set cloud_name = 2 %}{{ cloud_name }}\n"},
	{"scoping set in loop", "{% for i in [1, 2] %}{{ cloud_name }}{% set cloud_name = i %}{% endfor %}\n"},
	{"scoping nested loops", "{% for i in [1, 2] %}{% for j in [1] %}{{ cloud_name }};{% endfor %}{% set cloud_name = i %}{% endfor %}\n"},
	{"scoping branch set", "{% if false %}{% set cloud_name = 2 %}{% endif %}{{ cloud_name }}{% for i in [1, 2] %}{% if i == 2 %}{% set platform = 5 %}{% endif %}{{ platform }}{% endfor %}\n"},
	{"scoping all branches", "{% for j in [1] %}{% if false %}{% set p = 1 %}{% elif false %}{% set p = 2 %}{% else %}{% set p = 3 %}{% endif %}{{ p }}{% endfor %}{% for j in [1] %}{% for k in [1] %}{{ platform }}{% endfor %}{% if j %}{% set platform = 1 %}{% elif false %}{% set platform = 2 %}{% else %}{% set platform = 3 %}{% endif %}{% endfor %}\n"},
	{"scoping for else", "{% for x in [] %}{% else %}{% set y = 1 %}{{ y }}{% endfor %}{{ y }}\n"},
	{"loop extras", "{% for x in extra.nums %}{{ loop.cycle('odd', 'even') }}:{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {{ loop.revindex0 }}{{ loop.depth }}{{ loop.depth0 }};{% endfor %}\n"},
	{"namespace", "{% set ns = namespace(found=false, n=0) %}{% for k in v1.public_ssh_keys %}{% if 'rsa' in k %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.found }} {{ ns.n }} {{ ns['n'] }} {{ ns.nope }} {{ ns }}\n"},
	{"namespace from dict", "{% set ns = namespace({'a': 1}) %}{% set ns.b = 2 %}{{ ns.a }}{{ ns.b }}\n"},
	{"set list then index", "{% set parts = v1.local_hostname.split('-') %}{{ parts[1]|int + 1 }}\n"},
}

func findOracle(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Skip(t, "no /usr/bin/python3: install Debian's cloud-init package to run the Jinja2 oracle")
	}
	if err := exec.Command(python, "-c", "import cloudinit.templater, jinja2").Run(); err != nil {
		testenv.Skipf(t, "%s cannot import cloudinit and jinja2 (%v): install Debian's cloud-init package to run the Jinja2 oracle", python, err)
	}
	return python
}

type oracleResult struct {
	Out *string `json:"out"`
	Err *string `json:"err"`
}

func runOracle(t *testing.T, python string, templates []string, vars map[string]any) []oracleResult {
	t.Helper()
	type oracleCase struct {
		Template string         `json:"template"`
		Vars     map[string]any `json:"vars"`
	}
	var input []oracleCase
	for _, tmpl := range templates {
		input = append(input, oracleCase{Template: tmpl, Vars: vars})
	}
	payload, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "oracle.py")
	if err := os.WriteFile(script, []byte(oracleScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(payload)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run oracle: %v\n%s", err, stderr.String())
	}
	var results []oracleResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("decode oracle output: %v", err)
	}
	if len(results) != len(templates) {
		t.Fatalf("oracle returned %d results for %d templates", len(results), len(templates))
	}
	return results
}

func decodeVars(t testing.TB, text string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var vars map[string]any
	if err := dec.Decode(&vars); err != nil {
		t.Fatalf("decode instance data: %v", err)
	}
	return vars
}

func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestMatchesJinja2 renders every oracle case through Jinja2 (as cloud-init
// calls it) and through Render, and wants the same bytes, or an error from
// both.
func TestMatchesJinja2(t *testing.T) {
	python := findOracle(t)
	vars := decodeVars(t, instanceData)
	templates := make([]string, len(oracleCases))
	for i, c := range oracleCases {
		templates[i] = c.template
	}
	results := runOracle(t, python, templates, vars)
	for i, c := range oracleCases {
		t.Run(c.name, func(t *testing.T) {
			want := results[i]
			got, err := RenderWith([]byte(c.template), decodeVars(t, instanceData), quietOptions())
			switch {
			case want.Err != nil && err == nil:
				t.Errorf("Render succeeded with %q; Jinja2 failed: %s", got, *want.Err)
			case want.Err == nil && err != nil:
				t.Errorf("Render failed: %v; Jinja2 rendered %q", err, *want.Out)
			case want.Err == nil:
				if diff := cmp.Diff(*want.Out, string(got)); diff != "" {
					t.Errorf("output differs from Jinja2 (-jinja2 +render):\n%s", diff)
				}
			default:
				t.Logf("both fail: jinja2: %s; render: %v", *want.Err, err)
			}
		})
	}
}
