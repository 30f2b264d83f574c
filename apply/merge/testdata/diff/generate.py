"""Writes the differential test inputs in this directory.

Each case is a directory with user-data (and vendor-data where used), fed
as-is to cloud-init (../oracle.py) and to seed.ProcessUserData + merge.
MIME messages are written by hand-built text so they stay readable; gzip'd
inputs also get a user-data.txt with the uncompressed text. Run with
python3 from this directory; the output is deterministic.
"""

import gzip
import os

B = "==BOUNDARY=="


def mime(*parts, boundary=B):
    out = ['Content-Type: multipart/mixed; boundary="%s"' % boundary,
           "MIME-Version: 1.0", ""]
    for headers, body in parts:
        out.append("--" + boundary)
        out.extend(headers)
        out.append("")
        out.append(body)
    out.append("--%s--" % boundary)
    return "\n".join(out) + "\n"


def part(ctype, body, *extra, filename=None):
    headers = ['Content-Type: %s; charset="us-ascii"' % ctype,
               "MIME-Version: 1.0",
               "Content-Transfer-Encoding: 7bit"]
    if filename:
        headers.append('Content-Disposition: attachment; filename="%s"' % filename)
    headers.extend(extra)
    return headers, body


def write(name, user_data, vendor_data=None, gz=False):
    os.makedirs(name, exist_ok=True)
    data = user_data.encode()
    if gz:
        with open(os.path.join(name, "user-data.txt"), "w") as f:
            f.write(user_data)
        data = gzip.compress(data, mtime=0)
    with open(os.path.join(name, "user-data"), "wb") as f:
        f.write(data)
    if vendor_data is not None:
        with open(os.path.join(name, "vendor-data"), "w") as f:
            f.write(vendor_data)


CC1 = """#cloud-config
hostname: appliance-1
runcmd:
  - [sh, -c, 'echo one']
  - echo two
packages: [nginx]
users:
  - default
  - name: admin
    groups: [adm, sudo]
write_files:
  - path: /etc/a
    content: a
ntp:
  servers: [a.example]
"""

CC2_PLAIN = """#cloud-config
runcmd:
  - echo three
packages: [curl]
ntp:
  pools: [p.example]
"""

write("plain-cloud-config", CC1)

write("yaml11-scalars", """#cloud-config
ssh_pwauth: yes
disable_root: off
manage_etc_hosts: on
package_upgrade: n
mode_octal: 0644
mode_o: 0o644
thousand: 1_000
sexagesimal: 1:20
exp_string: 1e3
exp_float: 1.0e+3
infinity: .inf
tilde: ~
quoted: '0644'
tagged: !!str 0755
anchors:
  base: &base {a: 1, b: 2}
  derived:
    <<: *base
    b: 3
""")

write("mime-default-replace", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", CC2_PLAIN)))

write("mime-merge-how-string", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", "#cloud-config\nmerge_how: 'dict(recurse_array,no_replace)+list(append)'\n" + CC2_PLAIN.split("\n", 1)[1])))

write("mime-merge-how-list", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", """#cloud-config
merge_how:
  - name: list
    settings: [prepend]
  - name: dict
    settings: [no_replace, recurse_list]
runcmd: [echo zero]
packages: [vim]
hostname: ignored
""")))

write("mime-merge-type-header", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", CC2_PLAIN, "Merge-Type: dict(recurse_array)+list(append)+str()")))

write("mime-x-merge-type-header", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", CC2_PLAIN, "X-Merge-Type: dict(recurse_list,recurse_str)+list(append)+str(append)"),
    part("text/cloud-config", "#cloud-config\nhostname: -suffix\n", "X-Merge-Type: dict(recurse_str)+str(append)")))

write("mime-allow-delete", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", "#cloud-config\npackages: null\nntp: ~\nextra: kept\n", "Merge-Type: dict(allow_delete)+list()+str()")))

write("mime-no-dict-merger-drops-part", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", "#cloud-config\nmerge_how: 'list(append)'\nruncmd: [lost]\nnew_key: lost\n"),
    part("text/cloud-config", "#cloud-config\nlast: kept\n")))

write("mime-merge-type-kept", mime(
    part("text/cloud-config", "#cloud-config\nmerge_how: 'dict(replace)+list()+str()'\nmerge_type: 'list(append)'\na: 1\n")))

write("mime-bad-parts-skipped", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", "#cloud-config\nbroken: [1\nstill: broken\n"),
    part("text/cloud-config", "#cloud-config\n- a\n- list\n"),
    part("text/cloud-config", "#cloud-config\nmerge_how: 'dict(recurse_list)+str(append)'\nhostname: [1]\n"),
    part("text/cloud-config", "#cloud-config\nhostname: final\n")))

write("nested-mime", mime(
    part("text/cloud-config", CC1),
    (['Content-Type: multipart/mixed; boundary="inner"', "MIME-Version: 1.0"],
     mime(part("text/cloud-config", CC2_PLAIN, "Merge-Type: dict(recurse_array)+list(append)"),
          part("text/x-shellscript", "#!/bin/sh\necho inner\n", filename="inner.sh"),
          boundary="inner").split("\n", 3)[3]),
    part("text/cloud-config", "#cloud-config\nfinal: true\n")))

write("gzip-cloud-config", CC1, gz=True)

write("gzip-mime", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config", CC2_PLAIN, "Merge-Type: dict(recurse_array)+list(append)"),
    part("text/x-shellscript", "#!/bin/sh\necho gz\n", filename="gz.sh")), gz=True)

write("cloud-config-archive", """#cloud-config-archive
- type: text/cloud-config
  content: |
    #cloud-config
    runcmd: [from-archive-1]
    hostname: archived
- content: |
    #cloud-config
    runcmd: [from-archive-2]
  Merge-Type: 'dict(recurse_array)+list(append)+str()'
- filename: hello.sh
  content: |
    #!/bin/sh
    echo hello
- |
  #cloud-config
  sniffed: true
- type: text/cloud-boothook
  content: |
    #cloud-boothook
    echo boothook
""")

write("jsonp-after-cloud-config", mime(
    part("text/cloud-config", CC1),
    part("text/cloud-config-jsonp", """[
  {"op": "add", "path": "/runcmd/-", "value": "echo appended"},
  {"op": "add", "path": "/packages/0", "value": "first"},
  {"op": "replace", "path": "/hostname", "value": "patched"},
  {"op": "remove", "path": "/write_files"},
  {"op": "copy", "from": "/ntp", "path": "/ntp_copy"},
  {"op": "move", "from": "/users/1", "path": "/admin"},
  {"op": "test", "path": "/admin/name", "value": "admin"}
]"""),
    part("text/cloud-config-jsonp", '[{"op": "remove", "path": "/does/not/exist"}]'),
    part("text/cloud-config", "#cloud-config\nafter_patch: true\n")))

write("jsonp-alone", """#cloud-config-jsonp
[{"op": "add", "path": "/runcmd", "value": ["echo from jsonp"]},
 {"op": "add", "path": "/runcmd/-", "value": "echo more"}]
""")

write("scripts-and-boothooks-mixed", mime(
    part("text/x-shellscript", "#!/bin/sh\necho first\n", filename="first.sh"),
    part("text/cloud-config", CC1),
    part("text/cloud-boothook", "#cloud-boothook\n#!/bin/sh\necho boot\n"),
    part("text/x-shellscript-per-boot", "#!/bin/sh\necho every boot\n", filename="per-boot.sh"),
    part("text/x-shellscript-per-once", "#!/bin/sh\necho once\n", filename="once.sh"),
    part("text/plain", "#!/bin/bash\necho sniffed\n"),
    part("text/plain", "#cloud-config\nsniffed_config: true\n", "Merge-Type: dict(recurse_array)+list(append)")))

write("script-only", "#!/bin/sh\necho only a script\n")

write("base64-part", mime(
    (['Content-Type: text/cloud-config; charset="utf-8"', "MIME-Version: 1.0",
      "Content-Transfer-Encoding: base64"],
     "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtmcm9tLWJhc2U2NF0KZ3JlZXRpbmc6ICJow6lsbG8iCg=="),
    part("text/cloud-config", "#cloud-config\nruncmd: [plain]\n", "Merge-Type: dict(recurse_array)+list(prepend)")))

write("vendor-and-user-default", CC1, vendor_data="""#cloud-config
hostname: vendor-host
runcmd: [vendor-cmd]
ntp:
  enabled: true
  servers: [vendor.example]
vendor_only: yes
""")

write("vendor-merge-how-is-consumed", CC1, vendor_data="""#cloud-config
merge_how: 'dict(recurse_array,no_replace)+list(append)'
runcmd: [vendor-cmd]
packages: [vendor-pkg]
""")

write("vendor-mime-with-script", mime(
    part("text/cloud-config", CC2_PLAIN),
    part("text/cloud-config-jsonp", '[{"op": "add", "path": "/merge_how", "value": "dict(recurse_array)+list(append)"}]')),
    vendor_data=mime(
        part("text/cloud-config", "#cloud-config\nruncmd: [vendor]\npackages: [vendor-pkg]\nlocale: C.UTF-8\n"),
        part("text/x-shellscript", "#!/bin/sh\necho vendor\n", filename="vendor.sh")))
