"""``/v3/{project_id}/types/{type_id}/encryption``: a volume type's
encryption specs (Cinder's ``volume_type_encryption`` extension; admins
only). Recorded, not acted on: see :mod:`cirrus.volume.encryption`."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.db.base import isotime
from cirrus.volume.api.common import bs
from cirrus.volume.api.schemas import wrapped
from cirrus.volume.encryption import EncryptionSpecs
from cirrus.volume.exception import VolumeTypeEncryptionNotFound

KEYS = {"provider", "cipher", "key_size", "control_location"}
LOCATIONS = ("front-end", "back-end")


def parse_specs(body: Any, required: tuple[str, ...]) -> EncryptionSpecs:
    """Cinder's ``volume_type_encryption`` create (``required``: provider and
    control_location) and update (nothing required) schemas."""
    data = wrapped(body, "encryption")
    unknown = sorted(set(map(str, data)) - KEYS)
    if unknown:
        raise bad("encryption", f"Additional properties are not allowed "
                                f"({', '.join(unknown)[:200]} were unexpected)")
    for key in required:
        if key not in data:
            raise bad(f"encryption/{key}", f"'{key}' is a required property")
    specs: EncryptionSpecs = {}
    if "provider" in data:
        specs["provider"] = text(data["provider"], "encryption/provider")
    if "cipher" in data:
        specs["cipher"] = None if data["cipher"] is None else \
            text(data["cipher"], "encryption/cipher")
    if "key_size" in data:
        specs["key_size"] = _key_size(data["key_size"])
    if "control_location" in data:
        if data["control_location"] not in LOCATIONS:
            raise bad("encryption/control_location", f"must be one of {', '.join(LOCATIONS)}")
        specs["control_location"] = data["control_location"]
    return specs


def _key_size(value: Any) -> int | None:
    """Cinder's ``key_size``: null, or a non-negative integer (digits in a string too)."""
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 31:
        raise bad("encryption/key_size", "must be a non-negative integer")
    return value


def view(row: dict[str, Any]) -> dict[str, Any]:
    """Cinder's encryption row as ``GET …/encryption`` shows it."""
    return {"volume_type_id": row["volume_type_id"], "encryption_id": row["encryption_id"],
            "provider": row["provider"], "cipher": row["cipher"], "key_size": row["key_size"],
            "control_location": row["control_location"],
            "created_at": isotime(row["created_at"]), "updated_at": isotime(row["updated_at"]),
            "deleted": False, "deleted_at": None}


def _type_id(request: Request) -> str:
    return request.path_params["type_id"]


async def index(request: Request) -> Response:
    row = await bs(request).encryption.get(context(request), _type_id(request))
    return reply(view(row) if row else {})


async def show(request: Request) -> Response:
    """One spec: ``{key: value}`` (404 for a key the specs do not have)."""
    row = await bs(request).encryption.get(context(request), _type_id(request))
    key = request.path_params["key"]
    shown = view(row) if row else {}
    if key not in shown:
        raise VolumeTypeEncryptionNotFound(type_id=_type_id(request)[:64])
    return reply({key: shown[key]})


async def create(request: Request) -> Response:
    specs = parse_specs(await json_body(request), ("provider", "control_location"))
    row = await bs(request).encryption.create(context(request), _type_id(request), specs)
    return reply({"encryption": {**specs, "volume_type_id": row["volume_type_id"],
                                 "encryption_id": row["encryption_id"]}})


async def update(request: Request) -> Response:
    specs = parse_specs(await json_body(request), ())
    await bs(request).encryption.update(context(request), _type_id(request), specs)
    return reply({"encryption": dict(specs)})


async def delete(request: Request) -> Response:
    await bs(request).encryption.delete(context(request), _type_id(request))
    return Response(status_code=202)
