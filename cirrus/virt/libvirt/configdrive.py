"""The config drive: an ISO 9660 volume labelled ``config-2`` in OpenStack's layout.

``openstack/latest/meta_data.json`` (uuid, name, hostname, keys, meta, files,
admin_pass), ``user_data``, ``network_data.json`` and injected files under
``openstack/content/``. Guests without a metadata service read it at boot.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

from cirrus.metadata.base import meta_data, network_data, user_data, vendor_data
from cirrus.network.model import VIF
from cirrus.virt import exception as vexc


def make_config_drive(path: Path, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                      injected_files: list[tuple[str, bytes]], admin_password: str | None) -> None:
    """Write the ISO to ``path``: the files :mod:`cirrus.metadata.base` builds,
    the same the metadata service serves."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        latest = root / "openstack" / "latest"
        content = root / "openstack" / "content"
        latest.mkdir(parents=True)
        content.mkdir(parents=True)
        files = []
        for i, (target, data) in enumerate(injected_files):
            name = f"{i:04x}"
            (content / name).write_bytes(data)
            files.append({"path": target, "content_path": f"/content/{name}"})
        (latest / "meta_data.json").write_text(json.dumps(meta_data(instance, files, admin_password)))
        (latest / "network_data.json").write_text(json.dumps(network_data(network_info)))
        vendor = json.dumps(vendor_data())
        (latest / "vendor_data.json").write_text(vendor)
        (latest / "vendor_data2.json").write_text(vendor)
        user = user_data(instance)
        if user is not None:
            (latest / "user_data").write_bytes(user)
        tool = shutil.which("genisoimage") or shutil.which("mkisofs")
        if tool is None:
            raise vexc.InstanceSpawnError(instance_uuid=instance["uuid"],
                                          reason="genisoimage is not installed")
        done = subprocess.run([tool, "-o", str(path), "-ldots", "-allow-lowercase",
                               "-allow-multidot", "-l", "-publisher", "cirrus", "-quiet",
                               "-J", "-r", "-V", "config-2", str(root)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise vexc.InstanceSpawnError(instance_uuid=instance["uuid"],
                                          reason=f"config drive: {done.stderr.strip()[-300:]}")
