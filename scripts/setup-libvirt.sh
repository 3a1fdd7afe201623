#!/usr/bin/env bash
# Install libvirt, QEMU and what the libvirt driver and tiny guest need from
# Debian (with ping for the real-VM tests and cpio to check our initramfs
# writer against), and start virtlogd and libvirtd without systemd. Idempotent.
#   scripts/setup-libvirt.sh [--netns NAME]
# With --netns the daemons run inside network namespace NAME (created if
# missing), so the taps libvirt makes for guests live there, away from the
# machine's own interfaces; a libvirtd running elsewhere is restarted there.
# A failure is reported and tolerated: the real-VM tests then skip, saying why.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive
NETNS=""
[ "${1:-}" = "--netns" ] && NETNS=${2:?--netns needs a name}
PY=${PYTHON:-python3}
LOG=/tmp/cirrus-libvirt-install.log

need=()
for pair in libvirtd:libvirt-daemon-system libvirtd:libvirt-daemon-driver-qemu \
            virsh:libvirt-clients qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils qemu-storage-daemon:qemu-system-common \
            genisoimage:genisoimage pkg-config:pkg-config dnsmasq:dnsmasq-base nft:nftables \
            dhcp_release:dnsmasq-utils \
            mke2fs:e2fsprogs file:file ping:iputils-ping cpio:cpio; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
[ -x /bin/busybox ] && ! file -L /bin/busybox | grep -q dynamically || need+=(busybox-static)
[ -f /usr/include/libvirt/libvirt.h ] || need+=(libvirt-dev)
if [ ${#need[@]} -gt 0 ]; then
    echo "setup-libvirt: installing ${need[*]}"
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}") \
        >"$LOG" 2>&1 || { echo "setup-libvirt: install failed (see $LOG)" >&2; exit 0; }
fi
if ! "$PY" -c "import libvirt" 2>/dev/null; then
    "$PY" -m pip install --quiet --disable-pip-version-check "libvirt-python>=9" >>"$LOG" 2>&1 \
        || { echo "setup-libvirt: pip install libvirt-python failed (see $LOG)" >&2; exit 0; }
fi

# QEMU runs as root with no security driver: guest files live in cirrus's
# state directory, which the libvirt-qemu user may not reach.
CONF=/etc/libvirt/qemu.conf
if ! grep -q "^# cirrus" "$CONF" 2>/dev/null; then
    printf '\n# cirrus\nuser = "root"\ngroup = "root"\nsecurity_driver = "none"\n' >>"$CONF"
fi

in_ns() { if [ -n "$NETNS" ]; then ip netns exec "$NETNS" "$@"; else "$@"; fi; }
if [ -n "$NETNS" ]; then
    ip netns list | grep -qw "$NETNS" || ip netns add "$NETNS"
    ip netns exec "$NETNS" ip link set lo up
fi
running_in_wanted_ns() {
    local pid; pid=$(pgrep -x libvirtd | head -n 1)
    [ -n "$pid" ] || return 1
    [ "$(ip netns identify "$pid" 2>/dev/null)" = "$NETNS" ]
}
if ! running_in_wanted_ns; then
    pkill -x libvirtd 2>/dev/null; pkill -x virtlogd 2>/dev/null
    for _ in $(seq 1 50); do pgrep -x libvirtd >/dev/null || break; sleep 0.1; done
    mkdir -p /run/libvirt
    in_ns virtlogd -d
    in_ns libvirtd -d
fi
for _ in $(seq 1 100); do
    virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.1
done
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
    echo "setup-libvirt: libvirtd did not answer on qemu:///system" >&2; exit 0
fi
echo "libvirt ready: qemu:///system${NETNS:+ (network namespace $NETNS)}"
