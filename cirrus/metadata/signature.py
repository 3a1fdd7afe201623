"""The shared secret between the metadata proxies and the metadata API, and
the request signature made with it (Neutron's ``X-Instance-ID-Signature``).

The proxy on a network's DHCP host knows which instance asks (by the port
holding the source address); the API believes it only with this signature:
HMAC-SHA256 of the instance id keyed with ``metadata_proxy_shared_secret``.
Without the setting, the first process to start writes a random secret to
``STATE_DIR/metadata_proxy_secret`` and every later one reads it.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any

SECRET_FILE = "metadata_proxy_secret"


def sign(secret: str, instance_id: str) -> str:
    """The hex HMAC-SHA256 of ``instance_id`` keyed with ``secret``."""
    return hmac.new(secret.encode(), instance_id.encode(), hashlib.sha256).hexdigest()


def verify(secret: str, instance_id: str, signature: str) -> bool:
    """Whether ``signature`` is ``instance_id``'s, compared in constant time."""
    return hmac.compare_digest(sign(secret, instance_id).encode(),
                               signature.encode(errors="replace"))


def shared_secret(settings: Any) -> str:
    """The deployment's secret: the setting, else the state dir's file
    (created, readable by this user only, by whoever comes first)."""
    configured = str(getattr(settings, "metadata_proxy_shared_secret", "") or "")
    if configured:
        return configured
    path = Path(settings.state_dir) / SECRET_FILE
    if not path.exists():
        _create(path)
    return path.read_text().strip()


def _create(path: Path) -> None:
    """Write a new secret to ``path`` unless another process got there first:
    the file appears whole (a hard link of a written file), so no process
    ever reads a half-written secret."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process won; its secret is the one
    finally:
        tmp.unlink(missing_ok=True)
