"""A metadata path to what it serves (Nova's ``InstanceMetadata.lookup``).

``/`` lists the EC2 versions, ``/openstack`` the OpenStack ones; under a
version, ``/openstack/<v>/<file>`` and ``/<v>/meta-data/…``, ``/<v>/user-data``.
Anything else, and a version or file that does not exist, is
:class:`MetadataNotFound`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from cirrus.api.metadata.exception import MetadataNotFound
from cirrus.api.metadata.instance import InstanceMetadata
from cirrus.compute.password import extract_password
from cirrus.metadata import base, ec2

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass(frozen=True)
class Content:
    """One answer: its bytes and their media type."""

    body: bytes
    content_type: str = TEXT


def _text(lines: Sequence[str]) -> Content:
    return Content("\n".join(lines).encode())


def lookup(md: InstanceMetadata, path: str) -> Content:
    """What ``path`` serves for ``md``'s instance; :class:`MetadataNotFound`."""
    parts = [p for p in path.split("/") if p]
    found: Content | None
    if not parts:
        found = _text([*ec2.EC2_VERSIONS, base.LATEST])
    elif parts[0] == "openstack":
        found = _openstack(md, parts[1:])
    else:
        found = _ec2(md, parts)
    if found is None:
        raise MetadataNotFound(path="/" + "/".join(parts))
    return found


def known_openstack_version(version: str) -> bool:
    return version == base.LATEST or version in base.OPENSTACK_VERSIONS


def _openstack(md: InstanceMetadata, parts: list[str]) -> Content | None:
    if not parts:
        return _text([*base.OPENSTACK_VERSIONS, base.LATEST])
    if not known_openstack_version(parts[0]) or len(parts) > 2:
        return None
    files = base.files_of(parts[0])
    if len(parts) == 1:
        return _text(files)
    return openstack_file(md, parts[1]) if parts[1] in files else None


def openstack_file(md: InstanceMetadata, name: str) -> Content | None:
    """One file of ``/openstack/<version>/`` (None: this instance has none)."""
    if name == "user_data":
        data = base.user_data(md.instance)
        return Content(data, "application/octet-stream") if data is not None else None
    if name == "password":
        return Content((extract_password(md.instance.get("system_metadata")) or "").encode())
    return _json({"meta_data.json": lambda: base.meta_data(md.instance, [], None),
                  "network_data.json": lambda: base.network_data(md.network_info),
                  "vendor_data.json": base.vendor_data,
                  "vendor_data2.json": base.vendor_data}[name]())


def _json(data: Any) -> Content:
    return Content(json.dumps(data).encode(), JSON)


def _ec2(md: InstanceMetadata, parts: list[str]) -> Content | None:
    version, rest = parts[0], parts[1:]
    if version != base.LATEST and version not in ec2.EC2_VERSIONS:
        return None
    user = base.user_data(md.instance)
    if not rest:
        return _text(["meta-data/", *(["user-data"] if user is not None else [])])
    if rest == ["user-data"]:
        return Content(user, "application/octet-stream") if user is not None else None
    if rest[0] != "meta-data":
        return None
    node = ec2.walk(ec2.meta_data(md.instance, md.network_info, md.floating_ips), rest[1:])
    if node is None:
        return None
    return _text([ec2.listing(node)] if isinstance(node, dict) else [node])
