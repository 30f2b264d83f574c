# Runs cloud-init's UserDataProcessor and part walk over user-data files and
# prints, per file, the parts that cloud-init's default handlers take:
# [filename, content type, base64 payload, merge type]. Used by
# TestMatchesCloudInit. Fetching is disabled and failures are warnings
# (ERROR_ON_USER_DATA_FAILURE off), as in seedinit's default.
import base64
import json
import logging
import sys

from cloudinit import features, handlers, user_data, util
from cloudinit.url_helper import UrlError

logging.disable(logging.CRITICAL)
features.ERROR_ON_USER_DATA_FAILURE = False
util.fetch_ssl_details = lambda paths=None: None


def no_fetch(url, **kwargs):
    raise UrlError(IOError("fetching is disabled"), url=url)


user_data.read_file_or_url = no_fetch

HANDLED = {
    "text/cloud-config",
    "text/cloud-config-jsonp",
    "text/x-shellscript",
    "text/x-shellscript-per-boot",
    "text/x-shellscript-per-instance",
    "text/x-shellscript-per-once",
    "text/cloud-boothook",
    "text/part-handler",
}


class Paths:
    def get_ipath_cur(self, name=None):
        return "/nonexistent/" + (name or "")


result = {}
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        blob = f.read()
    msg = user_data.UserDataProcessor(Paths()).process(blob)
    parts = []

    def collect(data, filename, payload, headers):
        ctype = headers["Content-Type"]
        if ctype not in HANDLED or payload is None:
            return
        if isinstance(payload, str):
            payload = payload.encode("utf-8", "surrogateescape")
        merge = ""
        for name in ("Merge-Type", "X-Merge-Type"):
            if headers.get(name, ""):
                merge = headers[name]
                break
        parts.append([filename, ctype, base64.b64encode(payload).decode(), merge])

    handlers.walk(msg, collect, {})
    result[path] = parts
json.dump(result, sys.stdout)
