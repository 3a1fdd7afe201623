#!/bin/sh
# busybox udhcpc hook: apply the lease and print it on the console.
case "$1" in
    bound|renew)
        ip addr flush dev "$interface"
        ip addr add "$ip/${mask:-24}" dev "$interface"
        [ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
        for r in $router; do ip route add default via "$r" dev "$interface"; break; done
        # Option 121: "dest/len gateway" pairs (a default route among them too).
        set -- $staticroutes
        while [ $# -ge 2 ]; do
            ip route replace "$1" via "$2" dev "$interface"
            shift 2
        done
        : > /etc/resolv.conf
        for d in $dns; do echo "nameserver $d" >> /etc/resolv.conf; done
        echo "cirrus-tiny: $interface ip=$ip/${mask:-24} router=${router:-none} mtu=${mtu:-default}" > /dev/console
        ;;
esac
exit 0
