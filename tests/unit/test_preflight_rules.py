"""The start-up checks' rules (cirrus/preflight.py); the CLI's one-line errors
are tested end to end in tests/client/test_startup_errors.py."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
import sqlalchemy as sa

from cirrus.preflight import (DatabaseUnreachable, PortInUse, StateDirUnusable, check_state_dir,
                              database_step, hide_password, listen_socket)


@pytest.mark.parametrize("url,shown", [
    ("postgresql+psycopg://u:s3cret@db:5432/cirrus", "postgresql+psycopg://u:***@db:5432/cirrus"),
    ("amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"),
    ("amqp://127.0.0.1/", "amqp://127.0.0.1/"),
    ("sqlite:////var/lib/cirrus/cirrus.db", "sqlite:////var/lib/cirrus/cirrus.db"),
    ("inprocess://", "inprocess://"),
])
def test_hide_password(url: str, shown: str) -> None:
    assert hide_password(url) == shown


def test_state_dir_is_made(tmp_path: Path) -> None:
    check_state_dir(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    assert list((tmp_path / "a" / "b").iterdir()) == []  # the probe leaves nothing


@pytest.mark.parametrize("where,reason", [
    ("file", "it is a file, not a directory"),
    ("file/below", "Not a directory"),
])
def test_unusable_state_dirs(tmp_path: Path, where: str, reason: str) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateDirUnusable) as caught:
        check_state_dir(tmp_path / where)
    assert reason in caught.value.format_message()


def test_a_taken_port_names_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PortInUse) as caught:
            listen_socket("127.0.0.1", port)
    assert f"127.0.0.1:{port}" in caught.value.format_message()


def test_a_free_port_is_listening() -> None:
    sock = listen_socket("127.0.0.1", 0)
    try:
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()


def test_accepted_connections_send_without_nagle() -> None:
    """asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP; the
    listener's setting is what its accepted connections get (a keep-alive
    response's body otherwise waited 40 ms for the client's delayed ACK)."""
    sock = listen_socket("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname()):
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


def test_database_errors_carry_their_first_line_and_no_password(tmp_path: Path) -> None:
    def fails() -> None:
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("could not connect\nmore text"))
    with pytest.raises(DatabaseUnreachable) as caught:
        database_step("postgresql://u:pw@h/db", fails)
    message = caught.value.format_message()
    assert "u:***@h" in message and "pw" not in message.replace("***", "")
    assert "could not connect" in message and "more text" not in message
