"""Differential oracle: runs cloud-init's own merging code on test inputs.

Run by the Go tests with /usr/bin/python3 (Debian's cloud-init 22.4.2).
Reads one JSON request on stdin and prints one JSON answer on stdout.

Requests:
  {"mode": "cases", "cases": [...]}  each case is one of
      {"kind": "merge", "spec": str, "base": yaml, "add": yaml}
          cloudinit.mergers.construct(string_extract_mergers(spec)).merge
      {"kind": "parts", "parts": [{"ctype": str, "content": str,
                                   "merge_type": str}]}
          the parts fed straight to CloudConfigPartHandler, then
          cloud_config.txt read back as cloud-init reads it
      {"kind": "many", "sources": [yaml, ...]}
          util.mergemanydict of the loaded sources
    Answer: {"results": [{"ok": value} or {"error": str}, ...]}
  {"mode": "userdata", "user_data": base64, "vendor_data": base64 or null}
    UserDataProcessor + the default part handlers (boothooks and scripts
    recorded, not run; part-handlers excluded), like
    stages.Init._consume_userdata/_consume_vendordata.
    Answer: {"config": cloud_config.txt, "vendor_config": ...,
             "combined": mergemanydict([config, vendor_config]),
             "scripts": [[source, ctype, filename, payload], ...]}

Keys are turned into strings the way json.dumps spells them, because the
Go side has no non-string keys.
"""

import base64
import json
import logging
import math
import os
import sys
import tempfile

from cloudinit import handlers, helpers, mergers, util
from cloudinit.handlers.cloud_config import CloudConfigPartHandler
from cloudinit.settings import PER_INSTANCE
from cloudinit.user_data import UserDataProcessor

logging.disable(logging.CRITICAL)


def key(k):
    if isinstance(k, str):
        return k
    return json.dumps(k)


def norm(v):
    if isinstance(v, dict):
        return {key(k): norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        # Not JSON: spelled as the Go side spells it.
        return "<float %s>" % json.dumps(v)
    return v


class FakeDatasource:
    def get_instance_id(self):
        return "iid-oracle"


def make_paths(tmp):
    paths = helpers.Paths(
        {"cloud_dir": os.path.join(tmp, "cloud"),
         "run_dir": os.path.join(tmp, "run")},
        ds=FakeDatasource(),
    )
    return paths


def read_back(path):
    # stages reads cloud_config.txt through util.read_conf.
    return util.read_conf(path)


class Recorder(handlers.Handler):
    """Records script and boothook parts instead of writing or running them."""

    def __init__(self, source, ctypes, out):
        handlers.Handler.__init__(self, "always")
        self.source = source
        self.ctypes = ctypes
        self.out = out

    def list_types(self):
        return list(self.ctypes)

    def handle_part(self, data, ctype, filename, payload, frequency):
        if ctype in handlers.CONTENT_SIGNALS:
            return
        self.out.append([self.source, ctype, filename, payload])


SCRIPT_TYPES = [
    "text/x-shellscript",
    "text/x-shellscript-per-boot",
    "text/x-shellscript-per-instance",
    "text/x-shellscript-per-once",
    "text/cloud-boothook",
]


def consume(paths, msg, cloud_config_path, source, scripts):
    c_handlers = helpers.ContentHandlers()
    cc = CloudConfigPartHandler(paths, cloud_config_path=cloud_config_path)
    for mod in [cc, Recorder(source, SCRIPT_TYPES, scripts)]:
        c_handlers.register(mod, overwrite=False)
    data = None
    for (_ctype, mod) in c_handlers.items():
        if mod in c_handlers.initialized:
            continue
        handlers.call_begin(mod, data, PER_INSTANCE)
        c_handlers.initialized.append(mod)
    part_data = {
        "handlers": c_handlers,
        "handlerdir": paths.get_ipath("handlers"),
        "data": data,
        "frequency": PER_INSTANCE,
        "handlercount": 0,
        "excluded": ["text/part-handler"],
    }
    handlers.walk(msg, handlers.walker_callback, data=part_data)
    for (_ctype, mod) in c_handlers.items():
        if mod not in c_handlers.initialized:
            continue
        c_handlers.initialized.remove(mod)
        handlers.call_end(mod, data, PER_INSTANCE)
    return read_back(paths.get_ipath(cloud_config_path))


def run_userdata(req):
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_paths(tmp)
        os.makedirs(paths.get_ipath(), exist_ok=True)
        scripts = []
        udp = UserDataProcessor(paths)
        ud_msg = udp.process(base64.b64decode(req["user_data"]))
        config = consume(paths, ud_msg, "cloud_config", "user-data", scripts)
        vendor_config = {}
        if req.get("vendor_data") is not None:
            vd_msg = udp.process(base64.b64decode(req["vendor_data"]))
            vendor_config = consume(
                paths, vd_msg, "vendor_cloud_config", "vendor-data", scripts
            )
        # ConfigMerger merges copies read from disk; keep ours intact.
        combined = util.mergemanydict(
            [json.loads(json.dumps(norm(config))),
             json.loads(json.dumps(norm(vendor_config)))]
        )
        return {
            "config": norm(config),
            "vendor_config": norm(vendor_config),
            "combined": norm(combined),
            "scripts": norm(scripts),
        }


def run_case(case):
    kind = case["kind"]
    if kind == "merge":
        merger = mergers.construct(mergers.string_extract_mergers(case["spec"]))
        base = util.load_yaml(case["base"], allowed=(object,))
        add = util.load_yaml(case["add"], allowed=(object,))
        return merger.merge(base, add)
    if kind == "many":
        srcs = [util.load_yaml(s, default={}) for s in case["sources"]]
        return util.mergemanydict(srcs)
    if kind == "parts":
        with tempfile.TemporaryDirectory() as tmp:
            paths = make_paths(tmp)
            os.makedirs(paths.get_ipath(), exist_ok=True)
            h = CloudConfigPartHandler(paths)
            h.handle_part(None, handlers.CONTENT_START, None, None, None, None)
            for i, p in enumerate(case["parts"]):
                headers = {"Content-Type": p["ctype"]}
                if p.get("merge_type"):
                    headers["Merge-Type"] = p["merge_type"]
                h.handle_part(None, p["ctype"], "part-%03d" % i,
                              p["content"], PER_INSTANCE, headers)
            h.handle_part(None, handlers.CONTENT_END, None, None, None, None)
            return read_back(paths.get_ipath("cloud_config"))
    raise ValueError("unknown case kind %r" % kind)


def main():
    req = json.load(sys.stdin)
    if req["mode"] == "userdata":
        out = run_userdata(req)
    else:
        out = {"results": []}
        for case in req["cases"]:
            try:
                out["results"].append({"ok": norm(run_case(case))})
            except Exception as e:  # the Go side only needs "it raised"
                out["results"].append({"error": "%s: %s" % (type(e).__name__, e)})
    json.dump(out, sys.stdout, sort_keys=True)


main()
