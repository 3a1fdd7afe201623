"""The tag filters of a server listing (2.26) are answered from the ``tags``
table's indexes: no filter reads every tag, or every server's row."""
from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.compute import queries
from cirrus.db import migrate
from tests.unit.plans import listing_plan

FILTERS = [{"tags": ["a", "b"]}, {"tags_any": ["a", "b"]}, {"not_tags": ["a"]},
           {"not_tags_any": ["a", "b"]}, {"tags": ["a"], "not_tags_any": ["b"]}]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    url = f"sqlite:///{tmp_path_factory.mktemp('tags') / 'tags.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("tag_filter", FILTERS)
def test_a_tag_filter_searches_an_index(engine: Any, tag_filter: dict[str, list[str]]) -> None:
    plan = listing_plan(engine, queries.ListQuery(project_id="p", limit=10, **tag_filter))
    assert "SCAN tags" not in plan, plan
    assert "SEARCH tags USING COVERING INDEX" in plan, plan
    assert "ix_instances_project_id_deleted_created_at" in plan, plan


def test_a_listing_without_tag_filters_does_not_read_tags(engine: Any) -> None:
    plan = listing_plan(engine, queries.ListQuery(project_id="p", limit=10))
    assert "tags" not in plan, plan


def test_tags_another_request_added_meanwhile_are_kept_not_refused(engine: Any) -> None:
    """Two requests adding the same tag: the second's insert clashes on the
    key, and finds the tag there (no error)."""
    from cirrus.compute import tags

    with engine.begin() as conn:
        tags.instance_tags_create(conn, ["s1"], ["a", "b"])
        assert tags._insert_new(conn, "s1", ["a", "c"]) is None  # "a" clashes
        assert tags.instance_tag_get_by_instance_uuid(conn, "s1") == ["a", "b", "c"]
        assert tags.instance_tag_set(conn, "s1", ["c", "d"]) == ["c", "d"]
        assert tags.instance_tag_get_by_instance_uuid(conn, "s1") == ["c", "d"]
        tags.instance_tag_delete_all(conn, "s1")
