"""Loads each YAML document of a JSON list with PyYAML's safe_load and
prints a JSON list of {"ok": value} or {"error": message, "line": n}.

Run by yaml11_test.go with /usr/bin/python3 (Debian's PyYAML, as
cloud-init uses it). Keys are spelled as json.dumps spells them; bytes
(!!binary) are decoded as Latin-1 so that each byte is one character;
dates (!!timestamp) are written with isoformat; sets as mappings to null
(as the Go side loads them); non-finite floats as
"<float X>", which the Go side writes the same way.
"""

import datetime
import json
import math
import sys

import yaml


def key(k):
    if isinstance(k, str):
        return k
    return json.dumps(norm(k))


def norm(v):
    if isinstance(v, dict):
        return {key(k): norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return {key(k): None for k in v}
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return "<float %s>" % json.dumps(v)
    return v


out = []
for doc in json.load(sys.stdin):
    try:
        out.append({"ok": norm(yaml.safe_load(doc))})
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        out.append({"error": str(e), "line": mark.line + 1 if mark else 0})
    except Exception as e:
        out.append({"error": "%s: %s" % (type(e).__name__, e), "line": 0})
json.dump(out, sys.stdout, sort_keys=True)
