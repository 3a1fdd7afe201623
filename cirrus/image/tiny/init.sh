#!/bin/busybox sh
# PID 1 of the cirrus tiny guest. Everything it prints goes to the serial
# console, which is how tests and users see what happened inside.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /run /tmp /mnt/root /mnt/config /etc
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "cirrus-tiny: $*"; }
# Each line of stdin with the prefix $1, as soon as the line is complete. Not
# sed: busybox sed reads a line ahead, so a script's last line before it waits
# (a mark written, then a loop that prints nothing) would stay unseen.
prefix_lines() {
    while IFS= read -r line || [ -n "$line" ]; do echo "$1$line"; done
}

say "booting $(uname -r)"
for mod in $(cat /etc/modules.order); do
    insmod "/lib/modules/$mod" 2>/dev/null
done
sleep 0.3

# The root disk proves the flavor's disk reached the guest.
if mount -t ext4 /dev/vda /mnt/root 2>/dev/null; then
    say "root disk vda: $(cat /mnt/root/etc/cirrus-tiny 2>/dev/null)"
else
    say "root disk vda: not found"
fi

# Config drive (label config-2, iso9660 or vfat): hostname, key, user data.
name=cirrus-tiny
drive=
for dev in /dev/vd[b-z] /dev/sr0; do
    [ -b "$dev" ] || continue
    if mount -o ro -t iso9660 "$dev" /mnt/config 2>/dev/null \
            || mount -o ro -t vfat "$dev" /mnt/config 2>/dev/null; then
        meta=/mnt/config/openstack/latest/meta_data.json
        if [ -f "$meta" ]; then
            found=$(sed -n 's/.*"hostname": *"\([^"]*\)".*/\1/p' "$meta")
            [ -n "$found" ] && name=$found
            uuid=$(sed -n 's/.*"uuid": *"\([^"]*\)".*/\1/p' "$meta")
            say "config drive $dev: uuid=$uuid"
            keys=$(grep -o 'ssh-[a-z0-9-]* [A-Za-z0-9+/=]*' "$meta" | head -n 1)
            [ -n "$keys" ] && say "public key: $keys"
            [ -f /mnt/config/openstack/latest/user_data ] && \
                cp /mnt/config/openstack/latest/user_data /run/user_data
            drive=$dev
            break
        fi
        umount /mnt/config
    fi
done
hostname "$name"
say "hostname $name"

ip link set lo up
if ip link show eth0 >/dev/null 2>&1; then
    ip link set eth0 up
    # staticroutes (option 121) carries the route to the metadata service.
    udhcpc -i eth0 -s /etc/udhcpc.sh -O staticroutes -t 30 -T 1 -A 2 -n -q >/dev/null 2>&1 \
        || say "eth0 dhcp failed"
else
    say "no eth0"
fi

# No config drive: the same files from the metadata service (169.254.169.254).
# (timeout, not wget -T: busybox 1.35's wget crashes with -T.)
md=http://169.254.169.254/openstack/latest
if [ -z "$drive" ] && ip link show eth0 >/dev/null 2>&1; then
    for try in 1 2 3 4 5; do
        timeout 10 wget -q -O /run/meta_data.json "$md/meta_data.json" 2>/dev/null && break
        rm -f /run/meta_data.json; sleep 1
    done
    if [ -s /run/meta_data.json ]; then
        uuid=$(sed -n 's/.*"uuid": *"\([^"]*\)".*/\1/p' /run/meta_data.json)
        say "metadata service: instance-id: $uuid"
        found=$(sed -n 's/.*"hostname": *"\([^"]*\)".*/\1/p' /run/meta_data.json)
        [ -n "$found" ] && hostname "$found" && say "hostname $found"
        timeout 10 wget -q -O /run/user_data "$md/user_data" 2>/dev/null || rm -f /run/user_data
    else
        say "metadata service: unreachable"
    fi
fi

# ACPI power button → clean power off (how stop and soft reboot reach us).
for ev in /sys/class/input/event*; do
    if [ "$(cat "$ev/device/name" 2>/dev/null)" = "Power Button" ]; then
        dev=/dev/input/$(basename "$ev")
        ( head -c 1 "$dev" >/dev/null && { say "power button: powering off"; sync
          poweroff -f; } ) &
    fi
done

say "boot complete"
if [ -s /run/user_data ]; then
    case "$(head -c 2 /run/user_data)" in
        '#!') chmod +x /run/user_data; say "running user data"
              ( /run/user_data 2>&1 | prefix_lines "user-data: " ) & ;;
        *) say "user data: $(head -n 1 /run/user_data)" ;;
    esac
fi
while true; do sleep 3600; done
