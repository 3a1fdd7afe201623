"""The one place where errors become OpenStack error bodies.

Each API family has its own body shape, which clients parse:

* compute: ``{"itemNotFound": {"code": 404, "message": "…"}}``
* identity: ``{"error": {"code": 401, "message": "…", "title": "Unauthorized"}}``
* network: ``{"NeutronError": {"type": "PortNotFound", "message": "…", "detail": ""}}``
* image: ``{"code": "404 Not Found", "title": "Not Found", "message": "…"}``
"""
from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from cirrus.exception import CirrusException

LOG = logging.getLogger(__name__)

COMPUTE_KEYS = {
    400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
    405: "badMethod", 406: "notAcceptable", 409: "conflictingRequest",
    413: "overLimit", 415: "badMediaType", 422: "unprocessableEntity",
    429: "overLimit", 501: "notImplemented", 503: "serviceUnavailable",
}


def _title(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Error"


def compute_body(code: int, message: str, _type: str) -> dict:
    return {COMPUTE_KEYS.get(code, "computeFault"): {"code": code, "message": message}}


def identity_body(code: int, message: str, _type: str) -> dict:
    return {"error": {"code": code, "message": message, "title": _title(code)}}


def network_body(code: int, message: str, type_name: str) -> dict:
    return {"NeutronError": {"type": type_name, "message": message, "detail": ""}}


def image_body(code: int, message: str, _type: str) -> dict:
    return {"code": f"{code} {_title(code)}", "title": _title(code), "message": message}


STYLES: dict[str, Callable[[int, str, str], dict]] = {
    "compute": compute_body, "identity": identity_body,
    "network": network_body, "image": image_body,
}


def style_for_path(path: str) -> str:
    for prefix, style in (("/identity", "identity"), ("/network", "network"),
                          ("/image", "image")):
        if path.startswith(prefix):
            return style
    return "compute"


def error_response(code: int, message: str, style: str, type_name: str = "",
                   headers: dict[str, str] | None = None) -> Response:
    body = STYLES[style](code, message, type_name or _title(code).replace(" ", ""))
    return JSONResponse(body, status_code=code, headers=headers)


async def cirrus_exception_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CirrusException)
    style = style_for_path(request.scope["path"])
    headers = None
    if exc.code == 401:
        headers = {"WWW-Authenticate": f'Keystone uri="{request.base_url}identity"'}
    return error_response(exc.code, exc.format_message(), style, exc.type_name, headers)


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    code = getattr(exc, "status_code", 500)
    detail = getattr(exc, "detail", None) or _title(code)
    return error_response(code, str(detail), style_for_path(request.scope["path"]))


def unexpected_response(path: str, request_id: str) -> Response:
    """The 500 of an error no handler expected: the family's body, naming the
    request id that the log's traceback carries too."""
    return error_response(500, "Unexpected API Error. Please report this at the cirrus issue "
                          "tracker and attach the cirrus log if possible "
                          f"(request {request_id}).", style_for_path(path))
