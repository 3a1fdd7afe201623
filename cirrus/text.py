"""What text a client may store, and how stored text is shown: one rule for
every service.

A lone surrogate (``"\\ud800"``) is a Python string no UTF-8 encoder takes, so
no database stores it and no JSON reply carries it; PostgreSQL's text refuses
NUL. The JSON parser refuses both in bodies (``cirrus.api.wsgi.parse_json``);
the services check what reaches them otherwise (paths, queries, forms), and
their views show what an older row may hold instead of failing.
"""
from __future__ import annotations


def encodable(value: str) -> bool:
    """Whether UTF-8 can encode ``value`` (no lone surrogates)."""
    if value.isascii():  # the common case: one C scan
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(value: str) -> bool:
    """Whether every database can keep ``value`` and a reply carry it."""
    return "\x00" not in value and encodable(value)


def presentable(value: str) -> str:
    """``value`` with each lone surrogate shown as U+FFFD (pairs join up)."""
    if value.isascii():
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
