"""The five ``/metadata`` handlers volumes and snapshots share (Cinder's
``volume_metadata`` and ``snapshot_metadata`` controllers are the same but
for the resource)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.wsgi import context, json_body, reply
from cirrus.volume.api import schemas
from cirrus.volume.api.common import bs
from cirrus.volume.exception import MetadataNotFound


@dataclass(frozen=True)
class MetadataHandlers:
    """Handlers of one resource's metadata: ``service`` picks its service
    (``get``/``set_metadata``/``delete_metadata``) from the block storage,
    ``id_param`` names the path parameter holding its id."""

    service: Callable[[Any], Any]
    id_param: str

    def _target(self, request: Request) -> tuple[Any, str]:
        return self.service(bs(request)), request.path_params[self.id_param]

    async def metadata(self, request: Request) -> Response:
        service, item = self._target(request)
        row = await service.get(context(request), item)
        return reply({"metadata": row["metadata"] or {}})

    async def set_metadata(self, request: Request) -> Response:
        meta = schemas.metadata_body(await json_body(request))
        service, item = self._target(request)
        new = await service.set_metadata(context(request), item, meta,
                                         replace=request.method == "PUT")
        return reply({"metadata": new})

    async def metadata_item(self, request: Request) -> Response:
        service, item = self._target(request)
        row = await service.get(context(request), item)
        key = request.path_params["key"]
        if key not in (row["metadata"] or {}):
            raise MetadataNotFound()
        return reply({"meta": {key: row["metadata"][key]}})

    async def set_metadata_item(self, request: Request) -> Response:
        meta = schemas.meta_item(await json_body(request), request.path_params["key"])
        service, item = self._target(request)
        await service.set_metadata(context(request), item, meta, replace=False)
        return reply({"meta": meta})

    async def delete_metadata_item(self, request: Request) -> Response:
        service, item = self._target(request)
        await service.delete_metadata(context(request), item, request.path_params["key"])
        return Response(status_code=200)
