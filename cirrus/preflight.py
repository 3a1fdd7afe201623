"""What a starting cirrus checks first, so each failure is one line and exit 1.

A taken port, a state dir it cannot write, a database or a bus it cannot reach:
each is an error the operator fixes in a moment, given its cause. Without these
checks they surfaced as tracebacks from deep in uvicorn, SQLAlchemy or
the AMQP client. Each check raises a :class:`StartupError`; ``cirrus.cli.main`` prints
its message and exits with status 1.
"""
from __future__ import annotations

import socket
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

import sqlalchemy as sa

from cirrus.exception import CirrusException

T = TypeVar("T")


class StartupError(CirrusException):
    """cirrus cannot start; the message says why and what was tried."""

    msg_fmt = "cannot start: %(reason)s"


class PortInUse(StartupError):
    msg_fmt = ("cannot listen on %(bind)s: %(reason)s (is another cirrus running? "
               "choose another with --bind HOST:PORT)")


class StateDirUnusable(StartupError):
    msg_fmt = "state dir %(path)s is not usable: %(reason)s (choose another with --state-dir)"


class DatabaseUnreachable(StartupError):
    msg_fmt = "cannot use the database at %(url)s: %(reason)s"


class TransportUnreachable(StartupError):
    msg_fmt = "cannot connect to the message bus at %(url)s: %(reason)s"


def _reason(error: BaseException) -> str:
    """The first line of what the foreign error says (driver errors run on)."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    text = str(getattr(error, "orig", None) or error).strip() or type(error).__name__
    return text.splitlines()[0]


def check_state_dir(path: Path) -> None:
    """``path`` exists (made if need be) and cirrus may write in it."""
    if path.exists() and not path.is_dir():
        raise StateDirUnusable(path=path, reason="it is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        # os.access says yes to root on a read-only mount; a real write tells.
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise StateDirUnusable(path=path, reason=_reason(error)) from error


def listen_socket(host: str, port: int) -> socket.socket:
    """The API's listening socket, bound now so a taken port fails before
    anything else starts (and, with API workers, shared by each of them)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it. asyncio sets it itself only on a
        # socket whose proto is IPPROTO_TCP (this one's is 0), uvloop always:
        # without it ``cirrus api`` answered each keep-alive request after the
        # first 40 ms late (Nagle holding the body behind the headers until
        # the client's delayed ACK).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as error:
        sock.close()
        bind = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise PortInUse(bind=bind, reason=error.strerror or str(error)) from error
    sock.set_inheritable(True)
    return sock


def hide_password(url: str) -> str:
    """``url`` with any password replaced by ``***``, fit for a message."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def database_step(url: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` (a migration, a first query), its database failure a
    :class:`DatabaseUnreachable`."""
    try:
        return fn(*args)
    except (sa.exc.SQLAlchemyError, ImportError, OSError) as error:
        raise DatabaseUnreachable(url=hide_password(url), reason=_reason(error)) from error


async def transport_step(url: str, start: Callable[[], Awaitable[None]]) -> None:
    """``await start()``, its failure to reach the bus a :class:`TransportUnreachable`."""
    try:
        await start()
    except (OSError, ConnectionError) as error:  # refused, timed out, login refused
        raise TransportUnreachable(url=hide_password(url), reason=_reason(error)) from error

