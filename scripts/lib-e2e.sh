# Shell helpers for the QEMU boots of scripts/e2e and scripts/bench; source
# it after setting $top (the repository) and $work (a scratch directory).
# Needs: qemu-system-x86, gdisk (sgdisk), e2fsprogs, busybox-static.

# The root partition's GUID, to boot by root=PARTUUID=.
partuuid=5eed1717-0000-4000-8000-000000000001

# skip_fails: whether a skip is a failure here: in CI, which sets
# SEEDINIT_TEST_REQUIRE=1 and installs everything, a test that cannot run
# means a missing install step, which must not pass green.
skip_fails() {
	if [ "${SEEDINIT_TEST_REQUIRE:-}" = 1 ]; then
		echo "  ... and that is a failure in CI (SEEDINIT_TEST_REQUIRE=1)"
		return 0
	fi
	return 1
}

# skip_exit: exit as a script that skipped: 0, or 1 in CI (skip_fails).
skip_exit() {
	if skip_fails; then exit 1; fi
	exit 0
}

# need_tools PREFIX TOOL...: exit with a SKIP line when a tool is missing,
# so that `make test` on a machine without QEMU reports rather than fails
# (in CI it fails: skip_exit).
need_tools() {
	local who=$1
	shift
	local tool
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			echo "$who: SKIP: $tool is not installed (scripts/install-deps installs it)"
			skip_exit
		fi
	done
	if [ ! -x /bin/busybox ]; then
		echo "$who: SKIP: /bin/busybox (busybox-static) is not installed"
		skip_exit
	fi
}

# fetch_kernel: sets $kver, $kroot and $kernel (Debian's cloud kernel).
fetch_kernel() {
	kver=$("$top/scripts/fetch-kernel")
	kroot=$top/.cache/kernel/root
	kernel=$kroot/boot/vmlinuz-$kver
}

# build_seedinit OUT VERSION: the static binary, built as `make build` does.
build_seedinit() {
	"$top/scripts/build-seedinit" "$1" "$2"
}

# make_busybox_root DIR INIT: a small busybox system whose /sbin/init is the
# file INIT, with the accounts and files the appliance seed expects.
make_busybox_root() {
	local r=$1 init=$2 a
	rm -rf "$r"
	mkdir -p "$r"/{bin,sbin,etc/ssh,etc/skel,etc/sudoers.d,root,home,proc,sys,dev,run,tmp,var/log,var/lib}
	cp /bin/busybox "$r/bin/busybox"
	for a in sh ash awk cat echo ls mount umount hostname id grep sed sleep sync poweroff date mkdir head ip stat test cut tr; do
		ln -sf busybox "$r/bin/$a"
	done
	cat >"$r/etc/passwd" <<-'P'
	root:x:0:0:root:/root:/bin/sh
	daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
	nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
	P
	printf 'root:x:0:\ndaemon:x:1:\nadm:x:4:\nsudo:x:27:\nusers:x:100:\nnogroup:x:65534:\n' >"$r/etc/group"
	printf 'root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n' >"$r/etc/shadow"
	printf 'root:*::\ndaemon:*::\nadm:*::\nsudo:*::\nusers:*::\nnogroup:*::\n' >"$r/etc/gshadow"
	chmod 0640 "$r/etc/shadow" "$r/etc/gshadow"
	printf 'PasswordAuthentication yes\n' >"$r/etc/ssh/sshd_config"
	printf 'ID=debian\nVERSION_ID="12"\n' >"$r/etc/os-release"
	printf 'localhost\n' >"$r/etc/hostname"
	install -m 0755 "$init" "$r/sbin/init"
}

# make_disk DIR IMG [PART_MB DISK_MB]: ext4 of DIR in GPT partition 1
# (80 MiB) of a 160 MiB disk, so that growpart has room to grow it.
make_disk() {
	local dir=$1 img=$2 part=${3:-80} size=${4:-160}
	rm -f "$img" "$img.part"
	mkfs.ext4 -q -F -L rootfs -d "$dir" "$img.part" "${part}M" >/dev/null 2>&1
	truncate -s "${size}M" "$img"
	sgdisk -n "1:2048:+${part}M" -t 1:8300 -c 1:root -u "1:$partuuid" "$img" >/dev/null
	dd if="$img.part" of="$img" bs=1M seek=1 conv=notrunc status=none
	rm -f "$img.part"
}

# make_split_disk DIR IMG: DIR's root on GPT partition 1 (80 MiB), its
# /var on partition 2 (label "var") and its /home on partition 3 (UUID
# $home_uuid), each ext4, with an fstab in the root that mounts them, as
# appliance images lay out their disks.
home_uuid=5eed1717-0000-4000-8000-00000000c0de
make_split_disk() {
	local dir=$1 img=$2 d
	rm -rf "$img" "$img".p* "$dir.var" "$dir.home"
	mv "$dir/var" "$dir.var"
	mv "$dir/home" "$dir.home"
	mkdir -p "$dir/var" "$dir/home"
	printf 'PARTUUID=%s / ext4 defaults 0 1\nLABEL=var /var ext4 defaults 0 2\nUUID=%s /home ext4 defaults,noatime 0 2\n' \
		"$partuuid" "$home_uuid" >"$dir/etc/fstab"
	mkfs.ext4 -q -F -L rootfs -d "$dir" "$img.p1" 80M >/dev/null 2>&1
	mkfs.ext4 -q -F -L var -d "$dir.var" "$img.p2" 48M >/dev/null 2>&1
	mkfs.ext4 -q -F -U "$home_uuid" -d "$dir.home" "$img.p3" 48M >/dev/null 2>&1
	truncate -s 200M "$img"
	sgdisk -n 1:2048:+80M -t 1:8300 -c 1:root -u "1:$partuuid" -n 2:0:+48M -c 2:var -n 3:0:+48M -c 3:home "$img" >/dev/null
	for d in 1 2 3; do
		dd if="$img.p$d" of="$img" bs=512 seek="$(part_start "$img" $d)" conv=notrunc status=none
		rm -f "$img.p$d"
	done
}

# make_split_var_disk DIR IMG ROOT_MB VAR_MB DISK_MB: DIR's root on GPT
# partition 1 and its /var on partition 2 (label "var"), each ext4, with
# an fstab that checks and mounts both, as appliance images have them.
# DIR is changed: its /var moves to DIR.var.
make_split_var_disk() {
	local dir=$1 img=$2 rootmb=$3 varmb=$4 size=$5 d
	rm -rf "$img" "$img".p* "$dir.var"
	mv "$dir/var" "$dir.var"
	mkdir -p "$dir/var"
	printf 'PARTUUID=%s / ext4 errors=remount-ro 0 1\nLABEL=var /var ext4 defaults 0 2\n' "$partuuid" >"$dir/etc/fstab"
	mkfs.ext4 -q -F -L rootfs -d "$dir" "$img.p1" "${rootmb}M" >/dev/null 2>&1
	mkfs.ext4 -q -F -L var -d "$dir.var" "$img.p2" "${varmb}M" >/dev/null 2>&1
	truncate -s "${size}M" "$img"
	sgdisk -n "1:2048:+${rootmb}M" -t 1:8300 -c 1:root -u "1:$partuuid" -n "2:0:+${varmb}M" -c 2:var "$img" >/dev/null
	for d in 1 2; do
		dd if="$img.p$d" of="$img" bs=1M seek="$(($(part_start "$img" $d) / 2048))" conv=notrunc status=none
		rm -f "$img.p$d"
	done
}

# part_start IMG N: partition N's first sector.
part_start() {
	sgdisk -i "$2" "$1" | awk '/^First sector:/ {print $3}'
}

# read_root IMG PATH: a file from the root partition after power-off.
read_root() {
	read_part "$1" 1 "$2"
}

# read_part IMG N PATH: a file from partition N (ext4) after power-off;
# a directory is listed, one name per line.
read_part() {
	local img=$1 n=$2 path=$3 part start
	# Its own copy: checks read several files at once through <(...).
	part=$(mktemp "$img.p$n.XXXXXX")
	start=$(part_start "$img" "$n")
	dd if="$img" of="$part" bs=512 skip="$start" count="$(sgdisk -i "$n" "$img" | awk '/^Partition size:/ {print $3}')" status=none
	if debugfs -R "stat $path" "$part" 2>/dev/null | grep -q 'Type: directory'; then
		debugfs -R "ls -p $path" "$part" 2>/dev/null | awk -F/ 'NF > 5 && $6 != "." && $6 != ".." {print $6}'
	else
		debugfs -R "cat $path" "$part" 2>/dev/null
	fi
	rm -f "$part"
}

# qemu_boot LOG INITRD APPEND QEMU-ARGS...: one TCG boot of $kernel with the
# console saved to LOG; prints the host wall time in milliseconds.
# INITRD may be empty (no initramfs).
qemu_boot() {
	local log=$1 initrd=$2 append=$3
	shift 3
	local extra=()
	# qboot starts faster than SeaBIOS; QEMU_SEABIOS=1 keeps SeaBIOS (with
	# a TPM, qboot's memory map leaves the guest 57 MB).
	[ -f /usr/share/qemu/qboot.rom ] && [ -z "${QEMU_SEABIOS:-}" ] && extra+=(-bios /usr/share/qemu/qboot.rom)
	[ -n "$initrd" ] && extra+=(-initrd "$initrd")
	local start end qpid
	start=$(date +%s%N)
	# -k: QEMU that does not end on SIGTERM (it drains a block request that
	# never completes before it exits) is killed.
	timeout -k 10 "${QEMU_TIMEOUT:-240}" qemu-system-x86_64 -accel tcg -m 512 -smp "${QEMU_SMP:-1}" -nographic -no-reboot "${extra[@]}" \
		-kernel "$kernel" -append "console=ttyS0 panic=-1 $append" \
		-device virtio-rng-pci -net none "$@" <&0 >"$log" 2>&1 &
	# (<&0: a command put in the background without job control reads
	# /dev/null unless its input is named; the console's input is the
	# caller's, a FIFO the u-root test types into.)
	qpid=$!
	if [ -n "${QEMU_KILL_AFTER:-}" ]; then
		# A guest with a request that never completes: its shutdown's
		# sync waits for that device, and QEMU waits for the request
		# before it exits. Once the console says QEMU_KILL_AFTER (a
		# pattern), QEMU is killed.
		while kill -0 "$qpid" 2>/dev/null; do
			if grep -aq -- "$QEMU_KILL_AFTER" "$log"; then
				sleep 1
				# $qpid is timeout's; QEMU is its child.
				kill -KILL $(pgrep -P "$qpid") 2>/dev/null || true
				break
			fi
			sleep 0.5
		done
	fi
	wait "$qpid" || true
	end=$(date +%s%N)
	echo $(((end - start) / 1000000))
}

# write_test_init FILE: the real init of the test roots: it reports what it
# sees, waits for seedinit's final stage when there is a seed, and powers
# off cleanly.
write_test_init() {
	cat >"$1" <<'I'
#!/bin/sh
echo "E2E: real init started as pid $$"
echo "E2E: root mounted $(awk '$2=="/" {split($4, o, ","); print o[1]}' /proc/mounts)"
# What a real init does from fstab: the root read-write, then the rest.
mount -o remount,rw / 2>/dev/null
[ -f /etc/fstab ] && mount -a 2>/dev/null
awk '$2 ~ "^/(var|home|data)" {print "E2E: mounted " $2 " " $3}' /proc/mounts
echo "E2E: hostname=$(hostname)"
[ -r /sys/class/tpm/tpm0/pcr-sha256/12 ] && echo "E2E: pcr12=$(cat /sys/class/tpm/tpm0/pcr-sha256/12)"
id admin >/dev/null 2>&1 && echo "E2E: user admin exists"
grep -q admin@laptop /home/admin/.ssh/authorized_keys 2>/dev/null && echo "E2E: admin's key in place"
grep -q e2e.marker /root/bootcmd-cmdline 2>/dev/null && echo "E2E: bootcmd read /proc/cmdline"
ip -o -4 addr show 2>/dev/null | awk '$2 != "lo" {print "E2E: " $2 " " $4}' | sed 's|/[0-9]*$||'
for b in /sys/class/net/*/bonding/slaves; do
	[ -e "$b" ] && echo "E2E: bond $(basename "$(dirname "$(dirname "$b")")") slaves $(cat "$b")"
done
if [ -e /run/seedinit/seed/meta-data ]; then
	i=0
	while [ ! -e /var/lib/cloud/instance/boot-finished ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
	[ -e /var/lib/cloud/instance/boot-finished ] && echo "E2E: final stage finished after init"
fi
# A root that asks for it (no seed, so no final stage to wait for) waits
# for the copy of seedinit the child after the handoff makes.
if [ -e /etc/e2e-wait-kept-seedinit ]; then
	i=0
	while [ ! -s /var/lib/seedinit/seedinit ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
	[ -s /var/lib/seedinit/seedinit ] && sleep 0.5 && echo "E2E: seedinit kept in the root after the handoff"
fi
# A root that asks for it stays up until its DHCP lease has ended (the
# seconds since boot in the file), then shows its address and reaches
# the metadata server's address through it.
if [ -s /etc/e2e-stay-up-until ]; then
	until=$(cat /etc/e2e-stay-up-until)
	while [ "$(cut -d. -f1 /proc/uptime)" -lt "$until" ]; do sleep 1; done
	ip -o -4 addr show 2>/dev/null | awk '$2 != "lo" {print "E2E: after the lease: " $2 " " $4}' | sed 's|/[0-9]*$||'
	# (busybox's wget crashes in these roots, which have no libc's NSS.)
	busybox ping -c 1 -W 5 169.254.169.254 >/dev/null 2>&1 && echo "E2E: metadata address answers after the lease"
	# A renewal in flight says "renewing" for a moment (one every 9 s
	# here): the keeper's state is read once it says bound, 10 s at most.
	i=0
	while ! grep -q '"state": "bound"' /run/seedinit/dhcp-leases.json 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
	grep -o '"state": "[^"]*"' /run/seedinit/dhcp-leases.json 2>/dev/null | sed 's/^/E2E: keeper /'
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q '^[^ ]*seedinit dhcp keep '; then
			echo "E2E: keeper $(tr '\0' ' ' <"$p/cmdline" | cut -d' ' -f1) $(grep -E '^(VmRSS|RssAnon):' "$p/status" | tr -s ' \t' ' ' | tr '\n' ' ')"
		fi
	done
fi
echo "E2E: done"
# What a real init does at shutdown, so the disk images are clean to
# read: every other process ends (the final stage may still be writing
# its log), then the filesystems go read-only.
kill -TERM -1 2>/dev/null
sleep 0.3
kill -KILL -1 2>/dev/null
sync
for m in $(awk '$2 ~ "^/(var|home|data)" {print $2}' /proc/mounts | sort -r); do umount "$m" 2>/dev/null; done
mount -o remount,ro / 2>/dev/null || echo "E2E: the root could not go read-only at shutdown"
poweroff -f
I
}

# vm_netns NS: a network namespace with a bridge br0 at 10.98.0.1/24 and
# one TAP (tap0) on it, for a guest that stays up to be logged in to.
vm_netns() {
	ip netns add "$1"
	ip netns exec "$1" sh -e -c '
		ip link set lo up
		ip link add br0 type bridge
		ip addr add 10.98.0.1/24 dev br0
		ip link set br0 up
		ip tuntap add dev tap0 mode tap
		ip link set tap0 master br0 up'
}

# vm_start NS LOG INITRD APPEND MAC QEMU-ARGS...: boots $kernel in the
# background inside NS with its NIC (MAC) on tap0; sets $vm_pid.
vm_start() {
	local ns=$1 log=$2 initrd=$3 append=$4 mac=$5
	shift 5
	local extra=()
	[ -f /usr/share/qemu/qboot.rom ] && extra+=(-bios /usr/share/qemu/qboot.rom)
	ip netns exec "$ns" timeout "${QEMU_TIMEOUT:-400}" qemu-system-x86_64 -accel tcg -m 512 -smp 1 -nographic -no-reboot "${extra[@]}" \
		-kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 panic=-1 $append" \
		-device virtio-rng-pci -net none \
		-netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device "virtio-net-pci,netdev=n0,mac=$mac" \
		"$@" >"$log" 2>&1 &
	vm_pid=$!
}

# vm_ssh NS KEY USER@IP COMMAND...: one command in the guest, no prompts.
vm_ssh() {
	local ns=$1 key=$2 dest=$3
	shift 3
	ip netns exec "$ns" ssh -o LogLevel=ERROR -i "$key" -o BatchMode=yes -o ConnectTimeout=5 \
		-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$key.known_hosts" "$dest" "$@"
}

# vm_wait_ssh NS KEY USER@IP [SECONDS]: true once a login works, false
# when the guest stopped or the time (300 s) is up.
vm_wait_ssh() {
	local i=0 limit=$((${4:-300} / 2))
	while [ $i -lt $limit ] && kill -0 "$vm_pid" 2>/dev/null; do
		vm_ssh "$1" "$2" "$3" true 2>/dev/null && return 0
		sleep 2
		i=$((i + 1))
	done
	return 1
}

# vm_stop NS KEY USER@IP: poweroff from inside, then wait for QEMU (60 s).
vm_stop() {
	vm_ssh "$1" "$2" "$3" 'sudo -n /sbin/poweroff' >/dev/null 2>&1 || true
	local w=0
	while kill -0 "$vm_pid" 2>/dev/null && [ $w -lt 60 ]; do sleep 1; w=$((w + 1)); done
	kill "$vm_pid" 2>/dev/null || true
}
