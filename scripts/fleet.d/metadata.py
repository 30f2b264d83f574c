#!/usr/bin/python3
"""The fleet's one metadata service (scripts/fleet), on 169.254.169.254:80
in the fleet's server namespace. It serves two layouts at once:

  an appliance vendor's, read by the VendorHTTP datasource:
    /acme/latest/meta_data.json, /acme/latest/meta_data/<key>,
    /acme/latest/user_data (a MIME multipart: a cloud-config and a script)
  OpenStack's, read by the OpenStack datasource:
    /openstack (the versions), /openstack/<version>/meta_data.json,
    user_data, network_data.json, vendor_data.json

and tells the instances apart as the real services do: by the request's
source address, which dnsmasq's leases file maps to a MAC, which the
inventory maps to an instance (Neutron's metadata proxy goes from the
address to the port the same way). No instance ever names itself.

Every request is logged to REQUEST-LOG as one line, retries included:
  <unix time> <source address> <instance or -> <path> <status> <ms to answer>
so that the script counts requests per instance.

Usage: metadata.py INVENTORY LEASES REQUEST-LOG ADDR PORT
INVENTORY has one instance a line: NAME MAC LAYOUT (vendor or openstack).
"""
import http.server
import json
import os
import sys
import threading
import time
import uuid

INVENTORY, LEASES, REQLOG, ADDR, PORT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
VENDOR = "/acme/latest/"
VERSIONS = ["2018-08-27", "latest"]
FLEET_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINvHhcInOuZ6EB75uX1jPHGhVObcp7rwgvcTwQUlONo2 admin@fleet"

by_mac = {}
with open(INVENTORY) as f:
    for n, line in enumerate(f, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3 or fields[2] not in ("vendor", "openstack"):
            sys.exit(f"metadata: {INVENTORY} line {n}: want NAME MAC vendor|openstack, got {line.strip()!r}")
        name, mac, layout = fields
        by_mac[mac.lower()] = {"name": name, "mac": mac.lower(), "layout": layout,
                               "uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name + ".fleet.seedinit")),
                               "index": len(by_mac)}

lock = threading.Lock()
leases = {"mtime": None, "by_ip": {}}
log = open(REQLOG, "a", buffering=1)


def lease_mac(ip):
    """The MAC dnsmasq's leases file gives ip, re-read when it changed or
    when ip is not in it."""
    with lock:
        try:
            mtime = os.stat(LEASES).st_mtime_ns
        except FileNotFoundError:
            return None
        if mtime != leases["mtime"] or ip not in leases["by_ip"]:
            by_ip = {}
            with open(LEASES) as f:
                for line in f:
                    fields = line.split()
                    # expiry MAC address hostname client-id
                    if len(fields) >= 3:
                        by_ip[fields[2]] = fields[1].lower()
            leases["mtime"], leases["by_ip"] = mtime, by_ip
        return leases["by_ip"].get(ip)


# How long a request from an address with no lease in the file waits for
# one: dnsmasq rewrites the file in place, so a read can catch it half
# written, and an instance asks the moment its lease is acked. Answering
# 404 then (as this server first did) cost a quarter of a 100-instance
# fleet its user-data or its whole seed.
LEASE_WAIT = 3.0


def instance_of(ip):
    deadline = time.monotonic() + LEASE_WAIT
    while True:
        mac = lease_mac(ip)
        if mac or time.monotonic() >= deadline:
            return by_mac.get(mac) if mac else None
        time.sleep(0.02)


def instance_id(inst):
    return "i-" + inst["uuid"].split("-")[0] + "-" + inst["name"] if inst["layout"] == "vendor" else inst["uuid"]


def cloud_config(inst, layout):
    # Host keys of the two fast types: the fleet is about collisions,
    # not about RSA key generation on two CPUs.
    return (
        "#cloud-config\n"
        f"hostname: {inst['name']}\n"
        "ssh_genkeytypes: [ed25519, ecdsa]\n"
        "write_files:\n"
        "  - path: /etc/fleet/identity\n"
        f"    content: \"name={inst['name']} layout={layout} instance={instance_id(inst)}\\n\"\n"
        "runcmd:\n"
        "  - [sh, -c, 'echo \"runcmd on $(cat /etc/hostname)\" > /var/lib/fleet-runcmd']\n"
    )


def vendor_user_data(inst):
    boundary = "==fleet-" + inst["name"] + "=="
    script = "#!/bin/sh\necho \"script part on " + inst["name"] + "\" > /var/lib/fleet-script\n"
    parts = [("text/cloud-config", "fleet.cfg", cloud_config(inst, "vendor")),
             ("text/x-shellscript", "fleet.sh", script)]
    out = [f'Content-Type: multipart/mixed; boundary="{boundary}"', "MIME-Version: 1.0", ""]
    for ctype, fname, body in parts:
        out += [f"--{boundary}", f'Content-Type: {ctype}; charset="us-ascii"', "MIME-Version: 1.0",
                f'Content-Disposition: attachment; filename="{fname}"', "", body]
    out += [f"--{boundary}--", ""]
    return "\n".join(out)


def vendor(inst, rel):
    md = {"instance-id": instance_id(inst), "hostname": inst["name"], "local-hostname": inst["name"],
          "availability_zone": "rack-1", "public-keys": [FLEET_KEY]}
    if rel == "meta_data.json":
        return "application/json", json.dumps(md)
    if rel.startswith("meta_data/") and rel[len("meta_data/"):] in md:
        v = md[rel[len("meta_data/"):]]
        return "text/plain", v if isinstance(v, str) else "\n".join(v)
    if rel == "user_data":
        return "text/plain", vendor_user_data(inst)
    return None


def openstack(inst, rel):
    if rel == "":
        return "text/plain", "\n".join(VERSIONS)
    version, _, name = rel.partition("/")
    if version not in VERSIONS:
        return None
    if name == "":
        return "text/plain", "meta_data.json\nuser_data\nnetwork_data.json\nvendor_data.json"
    if name == "meta_data.json":
        return "application/json", json.dumps({
            "uuid": inst["uuid"], "hostname": inst["name"] + ".novalocal", "name": inst["name"],
            "availability_zone": "nova", "project_id": "fleet", "launch_index": inst["index"],
            "public_keys": {"fleet": FLEET_KEY}})
    if name == "user_data":
        return "text/plain", cloud_config(inst, "openstack")
    if name == "network_data.json":
        return "application/json", json.dumps({
            "links": [{"id": "tap-" + inst["name"], "type": "ovs", "ethernet_mac_address": inst["mac"], "mtu": 1500}],
            "networks": [{"id": "net0", "link": "tap-" + inst["name"], "type": "ipv4_dhcp"}],
            "services": []})
    if name == "vendor_data.json":
        return "application/json", "{}"
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real metadata services
    # Headers and body go out in two writes: with Nagle's algorithm the
    # body waited for the client's delayed ACK, 40 ms a request.
    disable_nagle_algorithm = True
    # An idle keep-alive connection gives its worker back after this.
    timeout = 5

    def do_GET(self):
        start = time.monotonic()
        src = self.client_address[0]
        inst = instance_of(src)
        path = self.path.split("?")[0]
        answer = None
        if inst is not None:
            if path.startswith(VENDOR):
                answer = vendor(inst, path[len(VENDOR):])
            elif path == "/openstack" or path.startswith("/openstack/"):
                answer = openstack(inst, path[len("/openstack/"):] if path != "/openstack" else "")
        status = 200 if answer else 404
        log.write(f"{time.time():.3f} {src} {inst['name'] if inst else '-'} {path} {status} {(time.monotonic() - start) * 1000:.0f}\n")
        if answer is None:
            body = b"not found\n"
            ctype = "text/plain"
        else:
            ctype, text = answer
            body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass  # REQUEST-LOG has every request


class Server(http.server.HTTPServer):
    # A hundred instances ask at the same moment: the default backlog of
    # 5 would drop their SYNs and cost each a second's retransmit.
    request_queue_size = 1024


# Workers that each accept on the one socket. socketserver's threading
# server accepts in one loop and starts a thread per connection, which
# waits for the interpreter: with a hundred instances connecting at once
# on two busy CPUs the last ones were accepted more than a second after
# they connected, past the fetcher's 1 s per attempt, and asked again.
WORKERS = 256


def worker(server):
    while True:
        try:
            conn, addr = server.socket.accept()
        except OSError:
            continue
        try:
            server.finish_request(conn, addr)
        except Exception:
            pass
        finally:
            server.shutdown_request(conn)


server = Server((ADDR, PORT), Handler)
for _ in range(WORKERS):
    threading.Thread(target=worker, args=(server,), daemon=True).start()
threading.Event().wait()
