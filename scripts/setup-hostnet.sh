#!/usr/bin/env bash
# Install what the linuxbridge host backend and tests/host need: iproute2 (ip,
# network namespaces, bridges), nftables, dnsmasq with dhcp_release (freed
# addresses' leases), busybox (the tests' DHCP client) and ping (the tests'
# reachability checks). Idempotent: apt-get runs only when a binary is missing, and only as
# root. A failure is reported and tolerated: the host tests then skip.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

missing=0
for tool in ip nft dnsmasq dhcp_release busybox ping; do
    command -v "$tool" >/dev/null 2>&1 || missing=1
done
if [ "$missing" -eq 1 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup-hostnet: not root; cannot install iproute2 nftables dnsmasq-base dnsmasq-utils busybox-static iputils-ping" >&2
        exit 0
    fi
    (apt-get update -qq && apt-get install -y --no-install-recommends \
        nftables dnsmasq-base dnsmasq-utils iproute2 busybox-static iputils-ping) >/tmp/cirrus-hostnet-install.log 2>&1 || {
        echo "setup-hostnet: install failed (see /tmp/cirrus-hostnet-install.log)" >&2; exit 0; }
fi
# Bridged traffic reaches the security group chains through br_netfilter.
if [ ! -e /proc/sys/net/bridge ] && [ "$(id -u)" -eq 0 ]; then
    modprobe br_netfilter 2>/dev/null || echo "setup-hostnet: br_netfilter is not available" >&2
fi
echo "host networking tools ready"
