"""Who asks the metadata API: an instance, named and vouched for by the
metadata proxy's headers (Neutron's), never by a token.

``X-Instance-ID`` names the instance, ``X-Tenant-ID`` its project and
``X-Instance-ID-Signature`` is the HMAC of the id with the shared secret. A
request whose signature holds gets a context for that instance and project;
any other gets none, and the routes' :attr:`~cirrus.policy.Level.SIGNED`
rule answers it 403.
"""
from __future__ import annotations

from typing import Mapping

from cirrus.context import RequestContext
from cirrus.metadata import signature

PREFIX = "/metadata/"


def is_metadata(path: str) -> bool:
    """Whether ``path`` is the metadata API's (which takes no token)."""
    return path.startswith(PREFIX)


def signed_context(headers: Mapping[bytes, bytes], secret: str) -> RequestContext | None:
    """The context of the instance the headers name and sign, or None."""
    instance_id = headers.get(b"x-instance-id", b"").decode("latin-1")
    tenant_id = headers.get(b"x-tenant-id", b"").decode("latin-1")
    signed = headers.get(b"x-instance-id-signature", b"").decode("latin-1")
    if not (instance_id and tenant_id and signed):
        return None
    if not signature.verify(secret, instance_id, signed):
        return None
    return RequestContext(project_id=tenant_id, instance_id=instance_id)
