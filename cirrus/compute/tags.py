"""Server tags (2.26): Nova's ``instance_tag_*`` database calls and the
listing filters built on them.

A tag is one row of ``tags`` (server uuid, tag). The listing filters are
subqueries the database answers from the table's key (a server's tags) and
its tag index (the servers of a tag), so a filtered listing still stops at
its page.
"""
from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import instances, tags
from cirrus.db.prepared import statement_savepoint

MAX_TAG_COUNT = 50  # Nova's objects.instance.MAX_TAG_COUNT


def instance_tag_get_by_instance_uuids(conn: sa.Connection, uuids: Iterable[str]
                                       ) -> dict[str, list[str]]:
    """The tags of each of ``uuids``, in tag order (those without: absent)."""
    wanted = list(uuids)
    out: dict[str, list[str]] = {}
    if not wanted:
        return out
    rows = conn.execute(sa.select(tags.c.resource_id, tags.c.tag).where(
        tags.c.resource_id.in_(wanted)).order_by(tags.c.resource_id, tags.c.tag))
    for uuid, tag in rows:
        out.setdefault(uuid, []).append(tag)
    return out


def instance_tag_get_by_instance_uuid(conn: sa.Connection, uuid: str) -> list[str]:
    """The server's tags, in tag order."""
    return instance_tag_get_by_instance_uuids(conn, [uuid]).get(uuid, [])


def instance_tag_exists(conn: sa.Connection, uuid: str, tag: str) -> bool:
    return conn.execute(sa.select(sa.literal(1)).where(
        tags.c.resource_id == uuid, tags.c.tag == tag)).first() is not None


def instance_tag_set(conn: sa.Connection, uuid: str, new_tags: Iterable[str]) -> list[str]:
    """Replace the server's tags with ``new_tags`` (duplicates count once);
    the tags it has now."""
    wanted = list(dict.fromkeys(new_tags))
    if len(wanted) > MAX_TAG_COUNT:
        raise exc.TooManyTags(limit=MAX_TAG_COUNT)
    current = set(instance_tag_get_by_instance_uuid(conn, uuid))
    gone = current - set(wanted)
    if gone:
        conn.execute(tags.delete().where(tags.c.resource_id == uuid, tags.c.tag.in_(gone)))
    _insert_new(conn, uuid, [t for t in wanted if t not in current])
    return sorted(wanted)


def _insert_new(conn: sa.Connection, uuid: str, new_tags: list[str]) -> None:
    """Insert ``new_tags``; a tag a concurrent request added meanwhile (the
    key clashes) is there, as asked."""
    if not new_tags:
        return
    try:
        with statement_savepoint(conn):
            conn.execute(tags.insert(), [{"resource_id": uuid, "tag": t} for t in new_tags])
    except sa.exc.IntegrityError:
        for tag in new_tags:  # one by one, each clash passed over
            try:
                with statement_savepoint(conn):
                    conn.execute(tags.insert().values(resource_id=uuid, tag=tag))
            except sa.exc.IntegrityError:
                pass


def instance_tags_create(conn: sa.Connection, uuids: list[str], new_tags: list[str]) -> None:
    """Tag new servers (2.52's ``tags`` at boot), in their create's transaction."""
    rows = [{"resource_id": uuid, "tag": tag} for uuid in uuids for tag in dict.fromkeys(new_tags)]
    if rows:
        conn.execute(tags.insert(), rows)


def instance_tag_add(conn: sa.Connection, uuid: str, tag: str) -> bool:
    """Add ``tag``; whether it was new. :class:`TooManyTags` if the server
    already has the most it may (checked first, as Nova does, even for a tag
    it has)."""
    current = instance_tag_get_by_instance_uuid(conn, uuid)
    if len(current) >= MAX_TAG_COUNT:
        raise exc.TooManyTags(limit=MAX_TAG_COUNT)
    if tag in current:
        return False
    try:
        with statement_savepoint(conn):
            conn.execute(tags.insert().values(resource_id=uuid, tag=tag))
    except sa.exc.IntegrityError:
        return False  # a concurrent request added it first
    return True


def instance_tag_delete(conn: sa.Connection, uuid: str, tag: str) -> None:
    """Remove ``tag``; :class:`InstanceTagNotFound` if the server has not got it."""
    if conn.execute(tags.delete().where(tags.c.resource_id == uuid,
                                        tags.c.tag == tag)).rowcount == 0:
        raise exc.InstanceTagNotFound(instance_id=uuid, tag=tag)


def instance_tag_delete_all(conn: sa.Connection, uuid: str) -> None:
    conn.execute(tags.delete().where(tags.c.resource_id == uuid))


def _tagged_with_all(wanted: list[str]) -> sa.Select[tuple[str]]:
    """The servers having every tag of ``wanted`` (no duplicates)."""
    return sa.select(tags.c.resource_id).where(tags.c.tag.in_(wanted)).group_by(
        tags.c.resource_id).having(sa.func.count() == len(wanted))


def _tagged_with_any(wanted: list[str]) -> sa.Exists:
    return sa.exists().where(tags.c.resource_id == instances.c.uuid, tags.c.tag.in_(wanted))


def filters(all_of: list[str], any_of: list[str], not_all_of: list[str],
            not_any_of: list[str]) -> list[sa.ColumnElement[bool]]:
    """The conditions on ``instances`` of Nova's four tag filters: servers with
    every tag of ``all_of``, at least one of ``any_of``, not every one of
    ``not_all_of``, none of ``not_any_of`` (an empty list filters nothing)."""
    out: list[sa.ColumnElement[bool]] = []
    if all_of:
        out.append(instances.c.uuid.in_(_tagged_with_all(list(dict.fromkeys(all_of)))))
    if any_of:
        out.append(_tagged_with_any(any_of))
    if not_all_of:
        out.append(instances.c.uuid.not_in(_tagged_with_all(list(dict.fromkeys(not_all_of)))))
    if not_any_of:
        out.append(~_tagged_with_any(not_any_of))
    return out
