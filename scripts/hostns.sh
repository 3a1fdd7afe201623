#!/usr/bin/env bash
# "Hosts" on this machine: each a network namespace joined to the root
# namespace by a veth underlay, with its own libvirtd and virtlogd running in
# a private mount namespace (their own /etc/libvirt, /run/libvirt,
# /var/lib/libvirt, /var/log/libvirt, /var/cache/libvirt), reachable at
# qemu+tcp://ADDR/system (TCP without auth, on the underlay address only).
# The machine's own libvirtd (qemu:///system) is not touched.
#
#   scripts/hostns.sh up NAME ADDR/PREFIX   # e.g. up cirrus-h1 198.51.100.11/24
#   scripts/hostns.sh down NAME              # guests, daemons, namespace, state: all gone
#   scripts/hostns.sh exec NAME CMD…         # run CMD in the host's network and mount namespaces
#   scripts/hostns.sh list                   # the hosts that are up
#
# Both verbs are idempotent. The underlay is a bridge ``cirrus-ul`` in the root
# namespace holding the first address of ADDR's network (198.51.100.1/24 above); a range the
# machine's own routes overlap is refused;
# each host's end of its veth is ``ul0``. NAME is also the network namespace's
# name (at most 12 characters: the root end of the veth is ``ul-NAME``).
# State lives in /run/cirrus-hosts/NAME (pid files, the daemons' directories).
set -euo pipefail

ROOT=/run/cirrus-hosts
UNDERLAY=cirrus-ul
# What a host's libvirt keeps private; each gets a directory of its own.
PRIVATE_DIRS="etc:/etc/libvirt run:/run/libvirt lib:/var/lib/libvirt log:/var/log/libvirt
              cache:/var/cache/libvirt"

die() { echo "hostns: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, libvirtd)"; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
ip_of() { echo "${1%/*}"; }

# The underlay's own address: the first host address of ADDR's network,
# refused if a route of another device overlaps it (the machine's own LAN).
gateway_of() {
    python3 -c 'import ipaddress, json, subprocess, sys
net = ipaddress.ip_interface(sys.argv[1]).network
routes = json.loads(subprocess.run(["ip", "-j", "route"], capture_output=True, text=True,
                                   check=True).stdout)
for r in routes:
    if r["dst"] != "default" and r.get("dev") != sys.argv[2] \
            and ipaddress.ip_network(r["dst"], strict=False).overlaps(net):
        sys.exit("hostns: %s overlaps %s on %s; pick another range" % (net, r["dst"], r.get("dev")))
print(f"{next(net.hosts())}/{net.prefixlen}")' "$1" "$UNDERLAY"
}

ensure_underlay() {
    local gw=$1
    ip link show "$UNDERLAY" >/dev/null 2>&1 || ip link add "$UNDERLAY" type bridge
    ip link set "$UNDERLAY" up
    ip -o addr show dev "$UNDERLAY" | grep -w >/dev/null "$gw" || ip addr add "$gw" dev "$UNDERLAY"
}

ensure_netns() {
    local name=$1 addr=$2 veth="ul-$1"
    ip netns list | grep -w >/dev/null "^$name" || ip netns add "$name"
    ip -n "$name" link set lo up
    if ! ip -n "$name" link show ul0 >/dev/null 2>&1; then
        ip link del "$veth" 2>/dev/null || true
        ip link add "$veth" type veth peer name ul0 netns "$name"
    fi
    ip link set "$veth" master "$UNDERLAY" up
    ip -n "$name" link set ul0 up
    ip -n "$name" -o addr show dev ul0 | grep -w >/dev/null "$addr" \
        || ip -n "$name" addr add "$addr" dev ul0
}

# The host's libvirt configuration: the machine's qemu.conf (guests run as
# root without a security driver, as scripts/setup-libvirt.sh sets), no
# domains or networks of the machine's, TCP on the underlay address only.
write_config() {
    local dir=$1 ip=$2
    mkdir -p "$dir/etc/qemu/networks/autostart" "$dir/etc/secrets" "$dir/etc/nwfilter"
    for conf in libvirt.conf qemu.conf virtlogd.conf; do
        [ -f "/etc/libvirt/$conf" ] && cp "/etc/libvirt/$conf" "$dir/etc/$conf"
    done
    cat >"$dir/etc/libvirtd.conf" <<EOF
# cirrus hostns: plain TCP on the underlay address, no authentication
listen_tls = 0
listen_tcp = 1
listen_addr = "$ip"
auth_tcp = "none"
auth_unix_rw = "none"
unix_sock_group = "root"
EOF
    # Incoming migrations listen on the underlay address and name it to the
    # source (not the machine's host name, which every namespace shares).
    printf '\n# cirrus hostns\nmigration_address = "%s"\nmigration_host = "%s"\n' \
        "$ip" "$ip" >>"$dir/etc/qemu.conf"
}

start_daemons() {
    local name=$1 dir=$2 binds="" pair
    for pair in $PRIVATE_DIRS; do
        mkdir -p "$dir/${pair%%:*}"
        binds="$binds mkdir -p ${pair#*:}; mount --bind $dir/${pair%%:*} ${pair#*:};"
    done
    # `ip netns exec` already gives a mount namespace of its own; unshare makes
    # the private one explicit, so the binds never reach the root namespace.
    ip netns exec "$name" unshare --mount --propagation private sh -ec "$binds
        virtlogd -d -p $dir/virtlogd.pid
        libvirtd -d -l -p $dir/libvirtd.pid"
}

wait_answer() {
    local uri=$1 deadline=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$deadline" ]; do
        timeout 5 virsh -c "$uri" version >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

cmd_up() {
    local name=${1:?up NAME ADDR/PREFIX} addr=${2:?up NAME ADDR/PREFIX}
    need_root
    [ "${#name}" -le 12 ] || die "NAME must be at most 12 characters"
    [[ "$addr" == */* ]] || die "ADDR needs its prefix, e.g. 198.51.100.11/24"
    for tool in ip unshare libvirtd virtlogd virsh python3; do
        command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup-libvirt.sh)"
    done
    local dir="$ROOT/$name" ip uri
    ip=$(ip_of "$addr")
    uri="qemu+tcp://$ip/system"
    local gw
    gw=$(gateway_of "$addr") || exit 1
    mkdir -p "$dir"
    echo "$addr" >"$dir/addr"
    ensure_underlay "$gw"
    ensure_netns "$name" "$addr"
    if ! alive "$dir/libvirtd.pid"; then
        alive "$dir/virtlogd.pid" && kill "$(cat "$dir/virtlogd.pid")"
        write_config "$dir" "$ip"
        start_daemons "$name" "$dir"
    fi
    wait_answer "$uri" || die "libvirtd of $name did not answer on $uri"
    echo "host $name ready: $uri (network namespace $name)"
}

# Domains of the host's libvirtd: destroyed and undefined.
remove_guests() {
    local uri=$1 dom
    for dom in $(timeout 10 virsh -c "$uri" list --all --name 2>/dev/null); do
        timeout 30 virsh -c "$uri" destroy "$dom" >/dev/null 2>&1 || true
        virsh -c "$uri" undefine --nvram --managed-save "$dom" >/dev/null 2>&1 \
            || virsh -c "$uri" undefine "$dom" >/dev/null 2>&1 || true
    done
}

stop_pid() {
    local file=$1 pid
    alive "$file" || return 0
    pid=$(cat "$file")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

cmd_down() {
    local name=${1:?down NAME}
    need_root
    local dir="$ROOT/$name" pid
    if [ -f "$dir/addr" ] && alive "$dir/libvirtd.pid"; then
        remove_guests "qemu+tcp://$(ip_of "$(cat "$dir/addr")")/system"
    fi
    stop_pid "$dir/libvirtd.pid"
    stop_pid "$dir/virtlogd.pid"
    if ip netns list | grep -w >/dev/null "^$name"; then
        # Whatever still runs in the namespace is this host's (QEMU, dnsmasq).
        for pid in $(ip netns pids "$name"); do kill "$pid" 2>/dev/null || true; done
        for _ in $(seq 1 50); do [ -z "$(ip netns pids "$name")" ] && break; sleep 0.1; done
        for pid in $(ip netns pids "$name"); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$name"
    fi
    ip link del "ul-$name" 2>/dev/null || true
    rm -rf "$dir"
    rmdir "$ROOT" 2>/dev/null || true
    # The underlay goes with its last host.
    if ip link show "$UNDERLAY" >/dev/null 2>&1 \
            && [ -z "$(ip -o link show master "$UNDERLAY")" ]; then
        ip link del "$UNDERLAY"
    fi
    echo "host $name down"
}

cmd_exec() {
    local name=${1:?exec NAME CMD…}
    shift
    local dir="$ROOT/$name"
    alive "$dir/libvirtd.pid" || die "host $name is not up"
    exec nsenter --target "$(cat "$dir/libvirtd.pid")" --net --mount -- "$@"
}

cmd_list() {
    local dir
    for dir in "$ROOT"/*/; do
        [ -f "$dir/addr" ] || continue
        alive "$dir/libvirtd.pid" && state=up || state=broken
        echo "$(basename "$dir") $(cat "$dir/addr") $state"
    done
}

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    down) shift; cmd_down "$@" ;;
    exec) shift; cmd_exec "$@" ;;
    list) cmd_list ;;
    *) echo "usage: $0 up NAME ADDR/PREFIX | down NAME | exec NAME CMD… | list" >&2; exit 2 ;;
esac
