"""Resource tags (Neutron's ``standard-attr-tag`` and ``tag-creation``) on
networks, subnets, ports, security groups, routers, floating IPs and subnet
pools: the rows, their rules and the listing filters.

A tag is a string of 1–255 characters; a resource has at most
:data:`MAX_TAGS` distinct ones, kept in ``network_tags`` (one row per
resource and tag). Listing filters take comma-separated tags: ``tags`` (all
of them), ``tags-any`` (at least one), ``not-tags`` (not all of them),
``not-tags-any`` (none of them).
"""
from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.db.prepared import Prepared, statement_savepoint
from cirrus.network import exception as exc
from cirrus.network import validators as v
from cirrus.network.models import network_tags

MAX_TAG_LEN = 255
MAX_TAGS = 50  # Neutron's per-resource limit
FILTERS = ("tags", "tags-any", "not-tags", "not-tags-any")
# The collection in a tag URL → the type recorded with each tag.
RESOURCE_TYPES = {"networks": "network", "subnets": "subnet", "ports": "port",
                  "security-groups": "security_group", "routers": "router",
                  "floatingips": "floatingip", "subnetpools": "subnetpool"}

_DELETE_OF = Prepared(network_tags.delete().where(
    network_tags.c.resource_id == sa.bindparam("w_id")))


# -- rules ------------------------------------------------------------------------------
def tag_reason(value: Any) -> v.Reason:
    """Why ``value`` is no tag (None: it is one)."""
    reason = v.string(MAX_TAG_LEN)(value)
    if reason:
        return reason
    return "tags may not be empty" if value == "" else None


def tags_reason(value: Any) -> v.Reason:
    """Why ``value`` is no list of tags (unique, at most :data:`MAX_TAGS`)."""
    if not isinstance(value, list):
        return f"'{v.shown(value)}' is not a list"
    for item in value:
        reason = tag_reason(item)
        if reason:
            return reason
    if len(set(value)) != len(value):
        return f"Duplicate items in the list: '{v.shown(value)}'"
    if len(value) > MAX_TAGS:
        return f"The number of tags exceed the per-resource limit of {MAX_TAGS}"
    return None


def check_tag(tag: str) -> None:
    """400 unless ``tag`` (from a URL) is a tag."""
    reason = tag_reason(tag)
    if reason:
        raise exc.BadRequest(reason=f"Invalid input for operation: {reason}.")


def parse_tags_body(body: Any) -> list[str]:
    """``{"tags": [...]}`` → the tags; 400 on anything else."""
    if not isinstance(body, dict) or "tags" not in body:
        raise exc.BadRequest(reason="Invalid input for operation: Invalid tags body.")
    extra = set(body) - {"tags"}
    if extra:
        raise exc.BadRequest(reason=f"Unrecognized attribute(s) "
                                    f"'{v.shown(', '.join(sorted(map(str, extra))))}'")
    reason = tags_reason(body["tags"])
    if reason:
        raise exc.BadRequest(reason=f"Invalid input for operation: {reason}.")
    return list(body["tags"])


# -- rows -------------------------------------------------------------------------------
def tags_of(conn: sa.Connection, resource_ids: list[str]) -> dict[str, list[str]]:
    """The tags of each of ``resource_ids``, sorted (an id without any: [])."""
    out: dict[str, list[str]] = {rid: [] for rid in resource_ids}
    if not resource_ids:
        return out
    for row in conn.execute(sa.select(network_tags.c.resource_id, network_tags.c.tag).where(
            network_tags.c.resource_id.in_(resource_ids)).order_by(network_tags.c.tag)):
        out[row.resource_id].append(row.tag)
    return out


def attach(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with their ``tags`` set (read in one statement), for the views."""
    found = tags_of(conn, [r["id"] for r in rows])
    for row in rows:
        row["tags"] = found[row["id"]]
    return rows


def add_tags(conn: sa.Connection, resource_type: str, resource_id: str,
             tags: Iterable[str]) -> list[str]:
    """Add ``tags`` the resource has not got yet, within :data:`MAX_TAGS`; all
    its tags after."""
    current = tags_of(conn, [resource_id])[resource_id]
    new = [t for t in dict.fromkeys(tags) if t not in current]
    if len(current) + len(new) > MAX_TAGS:
        raise exc.BadRequest(reason=f"The number of tags exceed the per-resource limit of "
                                    f"{MAX_TAGS}")
    for tag in new:
        try:
            with statement_savepoint(conn):
                conn.execute(network_tags.insert().values(
                    resource_id=resource_id, tag=tag, resource_type=resource_type))
        except sa.exc.IntegrityError:
            pass  # a concurrent request added it: the resource has it, as asked
    return sorted(current + new)


def replace_tags(conn: sa.Connection, resource_type: str, resource_id: str,
                 tags: list[str]) -> list[str]:
    """The resource's tags become exactly ``tags``."""
    delete_tags(conn, [resource_id])
    return add_tags(conn, resource_type, resource_id, tags)


def remove_tag(conn: sa.Connection, resource_id: str, tag: str) -> bool:
    """Remove one tag; whether the resource had it."""
    return conn.execute(network_tags.delete().where(
        network_tags.c.resource_id == resource_id, network_tags.c.tag == tag)).rowcount > 0


def delete_tags(conn: sa.Connection, resource_ids: list[str]) -> None:
    """Forget every tag of ``resource_ids`` (the resources are being deleted)."""
    if len(resource_ids) == 1:
        _DELETE_OF.execute(conn, w_id=resource_ids[0])
    elif resource_ids:
        conn.execute(network_tags.delete().where(network_tags.c.resource_id.in_(resource_ids)))


# -- listing filters --------------------------------------------------------------------
def _tagged(tags: list[str]) -> Any:
    return sa.select(network_tags.c.resource_id).where(network_tags.c.tag.in_(tags))


def _tagged_with_all(tags: list[str]) -> Any:
    return _tagged(tags).group_by(network_tags.c.resource_id).having(
        sa.func.count() == len(tags))


def _filter(id_column: Any, key: str, asked: list[str]) -> Any:
    """One filter's clause. A string no resource can have as a tag (too
    long, not storable) matches nothing: ``tags`` with one can hold for no
    row and ``not-tags`` for every row."""
    tags = sorted({t for t in asked if not tag_reason(t)})
    impossible = len(tags) < len(set(asked))
    if key == "tags":
        return sa.false() if impossible else id_column.in_(_tagged_with_all(tags))
    if key == "not-tags":
        return None if impossible else id_column.not_in(_tagged_with_all(tags))
    if key == "tags-any":
        return id_column.in_(_tagged(tags)) if tags else sa.false()
    return id_column.not_in(_tagged(tags)) if tags else None


def filter_clause(id_column: Any, filters: dict[str, list[str]]) -> Any:
    """The WHERE clause of the tag filters in ``filters`` on rows whose id is
    ``id_column`` (None: no tag filter); the tag filters are taken out of
    ``filters``."""
    clauses = []
    for key in FILTERS:
        asked = [t for value in filters.pop(key, []) for t in value.split(",") if t]
        clause = _filter(id_column, key, asked) if asked else None
        if clause is not None:
            clauses.append(clause)
    return sa.and_(*clauses) if clauses else None
