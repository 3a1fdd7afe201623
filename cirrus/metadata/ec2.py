"""The EC2-format metadata tree (``/<version>/meta-data/…``), as cloud-init's
EC2 reader and Nova's ``get_ec2_metadata`` lay it out.

A tree is nested dicts whose leaves are strings; :func:`walk` follows a path
through it and :func:`listing` renders a directory the EC2 way (``key/`` for
a directory, ``0=name`` for a public key).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from cirrus.network.model import VIF

# EC2 metadata versions (Nova's VERSIONS), oldest first; ``latest`` too.
EC2_VERSIONS = ("1.0", "2007-01-19", "2007-03-01", "2007-08-29", "2007-10-10",
                "2007-12-15", "2008-02-01", "2008-09-01", "2009-04-04")

Tree = dict[str, Union["Tree", str]]
# A directory may carry its own listing name (``0=mykey``) under this key.
NAME = "_name"


def ec2_id(instance: Mapping[str, Any]) -> str:
    """Nova's EC2 instance id: ``i-`` and the row id in eight hex digits."""
    return f"i-{int(instance.get('id') or 0):08x}"


def fixed_ipv4(network_info: Sequence[VIF] | None) -> str:
    """The first fixed IPv4 address of the instance ("" without one)."""
    for vif in network_info or []:
        for subnet in vif["network"]["subnets"]:
            for ip in subnet.get("ips", []):
                if subnet.get("version", 4) == 4:
                    return str(ip["address"])
    return ""


def meta_data(instance: Mapping[str, Any], network_info: Sequence[VIF] | None,
              floating_ips: Sequence[str]) -> Tree:
    """The ``meta-data/`` tree of one instance."""
    hostname = str(instance.get("hostname") or instance["uuid"])
    flavor = instance.get("flavor") or {}
    tree: Tree = {
        "ami-id": str(instance.get("image_ref") or ""),
        "ami-launch-index": str(instance.get("launch_index") or 0),
        "ami-manifest-path": "FIXME",
        "block-device-mapping": {"ami": "vda", "root": "/dev/vda"},
        "hostname": hostname,
        "instance-action": "none",
        "instance-id": ec2_id(instance),
        "instance-type": str(flavor.get("name") or ""),
        "local-hostname": hostname,
        "local-ipv4": fixed_ipv4(network_info),
        "placement": {"availability-zone": str(instance.get("availability_zone") or "")},
        "public-hostname": hostname,
        "public-ipv4": floating_ips[0] if floating_ips else "",
        "reservation-id": str(instance.get("reservation_id") or ""),
        "security-groups": "\n".join(_group_names(instance)),
    }
    if instance.get("key_data"):
        name = str(instance.get("key_name") or "key")
        tree["public-keys"] = {"0": {NAME: f"0={name}", "openssh-key": str(instance["key_data"])}}
    return tree


def _group_names(instance: Mapping[str, Any]) -> list[str]:
    groups = instance.get("security_groups") or []
    return [g["name"] if isinstance(g, dict) else str(g) for g in groups]


def walk(tree: Tree, parts: Sequence[str]) -> Tree | str | None:
    """The node at ``parts`` (empty parts are ignored), or None."""
    node: Tree | str = tree
    for part in parts:
        if not part:
            continue
        if not isinstance(node, dict) or part == NAME or part not in node:
            return None
        node = node[part]
    return node


def listing(node: Tree) -> str:
    """A directory as EC2 lists it: leaves by name, directories as ``key/``
    or their own name (``0=mykey``), one a line, sorted."""
    lines = []
    for key in sorted(k for k in node if k != NAME):
        child = node[key]
        if isinstance(child, dict):
            lines.append(str(child.get(NAME) or f"{key}/"))
        else:
            lines.append(key)
    return "\n".join(lines)
