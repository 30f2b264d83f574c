# shellcheck shell=bash
# Shell helpers for the arm64 QEMU boots of scripts/e2e-arm64 and
# scripts/bench; source it after scripts/lib-e2e.sh (it uses $top).
# Needs: qemu-system-arm (qemu-system-aarch64), and Debian's arm64 packages
# from the mirror apt is configured with: the cloud kernel
# (scripts/fetch-kernel arm64) and busybox-static, downloaded and unpacked
# under .cache, never installed (the host cannot run them, and
# busybox-static:arm64 would replace the host's /bin/busybox).

# QEMU's CPU. `max` has what today's arm64 servers have (LSE atomics, which
# Go's runtime uses when present; pointer authentication, which Debian's
# kernel turns on), but TCG computes its QARMA5 pointer-authentication
# codes in software at every signed call and return: on this project's
# shared machines the NoCloud boot took 54 to 149 s of wall time with plain
# `max`, 12 to 45 s with pauth-impdef=on (QEMU's cheap implementation-
# defined algorithm; the guest runs the same instructions) and about as
# long with cortex-a57, which lacks both features. ARM64_CPU=... picks
# another.
arm64_cpu=${ARM64_CPU:-max,pauth-impdef=on}

# fetch_arm64 WHO: sets $kver_arm64, $kroot_arm64, $kernel_arm64 (Debian's
# arm64 cloud kernel, an uncompressed Image that QEMU's -kernel boots on
# the virt machine without firmware) and $busybox_arm64. Prints
# "WHO: SKIP: why" and returns 1 when either cannot be had.
fetch_arm64() {
	local who=$1
	if ! command -v qemu-system-aarch64 >/dev/null; then
		echo "$who: SKIP: qemu-system-aarch64 is not installed (scripts/install-deps installs qemu-system-arm)"
		return 1
	fi
	if ! kver_arm64=$("$top/scripts/fetch-kernel" arm64 2>&1); then
		echo "$who: SKIP: no Debian arm64 kernel: $(echo "$kver_arm64" | tail -n1)"
		return 1
	fi
	kroot_arm64=$top/.cache/kernel-arm64/root
	kernel_arm64=$kroot_arm64/boot/vmlinuz-$kver_arm64
	if ! busybox_arm64=$(fetch_busybox_arm64); then
		echo "$who: SKIP: no arm64 busybox: Debian's busybox-static:arm64 could not be downloaded"
		return 1
	fi
}

# fetch_busybox_arm64: prints the path of Debian's static arm64 busybox,
# unpacked into .cache/busybox-arm64 (once). Needs arm64 among dpkg's
# architectures, which fetch-kernel arm64 sees to.
fetch_busybox_arm64() {
	local dest=$top/.cache/busybox-arm64
	if [ ! -x "$dest/root/bin/busybox" ]; then
		rm -rf "$dest"
		mkdir -p "$dest"
		(cd "$dest" && apt-get download -q busybox-static:arm64 >/dev/null 2>&1) || return 1
		dpkg -x "$dest"/busybox-static_*_arm64.deb "$dest/root" || return 1
		rm -f "$dest"/busybox-static_*_arm64.deb
	fi
	echo "$dest/root/bin/busybox"
}

# make_busybox_root_arm64 DIR INIT: make_busybox_root's system with the
# arm64 busybox in place of the host's, so that the real init, its shell
# and every command in the root run on the guest.
make_busybox_root_arm64() {
	make_busybox_root "$1" "$2"
	install -m 0755 "$busybox_arm64" "$1/bin/busybox"
}

# qemu_boot_arm64 LOG INITRD APPEND QEMU-ARGS...: one TCG boot of
# $kernel_arm64 on QEMU's virt machine (PL011 console on ttyAMA0, PSCI to
# power off, virtio over PCI and over MMIO) with the console saved to LOG;
# prints the host wall time in milliseconds. INITRD may be empty.
qemu_boot_arm64() {
	local log=$1 initrd=$2 append=$3
	shift 3
	local extra=()
	[ -n "$initrd" ] && extra+=(-initrd "$initrd")
	local start end
	start=$(date +%s%N)
	timeout "${QEMU_TIMEOUT:-300}" qemu-system-aarch64 -M virt -cpu "$arm64_cpu" -accel tcg -m 512 -smp 1 \
		-nographic -no-reboot "${extra[@]}" \
		-kernel "$kernel_arm64" -append "console=ttyAMA0 panic=-1 $append" \
		-device virtio-rng-pci -net none "$@" >"$log" 2>&1 || true
	end=$(date +%s%N)
	echo $(((end - start) / 1000000))
}
