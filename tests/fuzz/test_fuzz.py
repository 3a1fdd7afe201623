"""Issue #18's fuzzer in CI: every write API of the four services, thousands of
hostile requests from a fixed seed; no answer ≥ 500, every listing still 200.

Runs on SQLite only (its own world, not the two-backend ``cloud`` fixture).
The tables the fuzz relies on are checked first, so that a new route without
a fuzz entry fails here rather than going unfuzzed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import campaign
from tests.fuzz.bodies import BODIES
from tests.fuzz.hostile import Ref
from tests.fuzz.known import KNOWN
from tests.fuzz.routes import write_targets
from tests.fuzz.strategies import _paths
from tests.fuzz.world import KINDS, param_kind


def test_every_write_route_has_an_example() -> None:
    routes = {t.key for t in write_targets()}
    missing = sorted(routes - set(BODIES))
    assert not missing, ("write routes with no example in tests/fuzz/bodies.py (see "
                         f"docs/fuzzing.md, 'Adding a route'): {missing}")
    stale = sorted(set(BODIES) - routes)
    assert not stale, f"examples in tests/fuzz/bodies.py for routes that do not exist: {stale}"


def test_every_path_parameter_has_a_kind() -> None:
    unknown = [(str(t), p) for t in write_targets() for p in t.params if param_kind(t, p) is None]
    assert not unknown, ("path parameters the world cannot fill (add them to COLLECTION_KINDS "
                         f"or NAMED_KINDS in tests/fuzz/world.py): {unknown}")


def test_every_ref_in_the_examples_names_a_kind() -> None:
    def refs(tree: object) -> set[str]:
        return {leaf.kind for leaf in (_get(tree, p) for p in _paths(tree)) if isinstance(leaf, Ref)}

    def _get(tree: object, path: tuple) -> object:
        for step in path:
            tree = tree[step]  # type: ignore[index]
        return tree
    used = set()
    for examples in BODIES.values():
        for example in examples:
            used |= refs(example.body) | refs(dict(example.headers))
    for batch in KNOWN:
        for case in batch:
            used |= refs(case.body) | refs(dict(case.headers))
    assert used <= set(KINDS), sorted(used - set(KINDS))


def test_no_request_breaks_the_cloud(tmp_path: Path) -> None:
    options = campaign.Options.from_env()
    fuzzer = campaign.run(tmp_path, options)
    print("\nfuzz:", fuzzer.stats.summary())
    if options.record:
        assert not fuzzer.findings, (f"{len(fuzzer.findings)} distinct failures:\n\n"
                                     + fuzzer.findings.text())
    if fuzzer.stats.requests < options.examples:
        pytest.fail(f"only {fuzzer.stats.requests} requests were sent: {fuzzer.stats.summary()}")


def test_every_example_is_accepted(tmp_path: Path) -> None:
    """The seeds are valid requests, so that the mutations start from paths
    that reach deep into each service, not from a 400 at the door."""
    # An action may find the server busy with the previous one: 409 is an answer.
    # A DELETE's target is made fresh: a new server is still building, when
    # Nova refuses to change its tags (409).
    # A live migration's abort and force-complete name one that is running;
    # the fuzz world runs none, so its example is checked as far as the lookup.
    busy = {"POST /compute/v2.1/servers/{server_id}/action": 409,
            "POST /compute/v2.1/servers/{server_id}/os-interface": 409,
            "DELETE /compute/v2.1/servers/{server_id}/tags": 409,
            "DELETE /compute/v2.1/servers/{server_id}/migrations/{migration_id}": 404,
            "POST /compute/v2.1/servers/{server_id}/migrations/{migration_id}/action": 404,
            # Volume user messages come only from failures; the world has none.
            "DELETE /volume/v3/{project_id}/messages/{message_id}": 404,
            # A transfer's auth key is shown once, to its maker: the example
            # cannot know it, and is checked as far as the key.
            "POST /volume/v3/{project_id}/os-volume-transfer/{transfer_id}/accept": 400,
            "POST /volume/v3/{project_id}/volume-transfers/{transfer_id}/accept": 400,
            # Every legacy image task would fetch a URL, which no cirrus host may.
            "POST /image/v2/tasks": 400}
    refused = [(route, status, answer) for route, status, answer
               in campaign.examples_as_sent(tmp_path)
               if not (200 <= status < 300 or busy.get(route) == status)]
    assert not refused, "\n".join(f"{r} → {s}: {a}" for r, s, a in refused)
