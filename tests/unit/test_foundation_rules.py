"""Tokens, passwords, policy and configuration rules."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from cirrus import policy
from cirrus.config import Settings, load_settings
from cirrus.context import RequestContext, new_request_id
from cirrus.exception import Forbidden
from cirrus.identity.exception import Unauthorized
from cirrus.identity.passwords import hash_password, verify_password
from cirrus.identity.tokens import TokenData, TokenProvider, new_audit_id, new_key
from cirrus.utils import Supervisor


def token(provider: TokenProvider, ttl: float = 60) -> str:
    now = time.time()
    return provider.issue(TokenData(user_id="u", expires_at=now + ttl, issued_at=now,
                                    audit_id=new_audit_id(), methods=["password"],
                                    project_id="p", roles=["member"]))


def test_token_round_trip() -> None:
    provider = TokenProvider([new_key()])
    data = provider.open(token(provider))
    assert (data.user_id, data.project_id, data.roles) == ("u", "p", ["member"])


def test_expired_token_is_rejected() -> None:
    provider = TokenProvider([new_key()])
    with pytest.raises(Unauthorized, match="expired"):
        provider.open(token(provider, ttl=-1))


def test_token_from_another_key_or_tampered_is_rejected() -> None:
    mine, theirs = TokenProvider([new_key()]), TokenProvider([new_key()])
    with pytest.raises(Unauthorized):
        mine.open(token(theirs))
    good = token(mine)
    with pytest.raises(Unauthorized):
        mine.open(good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB"))


def test_rotated_keys_still_open_old_tokens() -> None:
    old = new_key()
    issued = token(TokenProvider([old]))
    assert TokenProvider([new_key(), old]).open(issued).user_id == "u"


def test_password_hashes_are_salted_and_verify() -> None:
    a, b = hash_password("secret"), hash_password("secret")
    assert a != b
    assert verify_password("secret", a) and not verify_password("Secret", a)
    assert not verify_password("secret", None) and not verify_password("x", "garbage")


@pytest.mark.parametrize("rounds, n", [(14, 16384), (4, 16)])
def test_a_hash_carries_its_cost_and_verifies_at_it(rounds: int, n: int) -> None:
    stored = hash_password("secret", rounds)
    assert stored.split("$")[1] == str(n)
    assert verify_password("secret", stored) and not verify_password("secreT", stored)


def test_the_default_cost_is_the_interactive_one() -> None:
    assert Settings().password_hash_rounds == 14
    assert hash_password("secret").split("$")[1] == "16384"


@pytest.mark.parametrize("roles, project, action, allowed", [
    (["member"], "p1", "compute:server:create", True),
    (["member"], "p2", "compute:server:create", False),
    (["reader"], "p1", "compute:server:get", True),
    (["reader"], "p1", "compute:server:create", False),
    (["member"], "p1", "compute:flavor:manage", False),
    (["admin"], "p2", "compute:flavor:manage", True),
    ([], "p1", "compute:server:get", False),
])
def test_policy(roles: list[str], project: str, action: str, allowed: bool) -> None:
    ctx = RequestContext(user_id="u", project_id="p1", roles=roles)
    assert policy.check(ctx, action, {"project_id": project}) is allowed
    if not allowed:
        with pytest.raises(Forbidden):
            policy.enforce(ctx, action, {"project_id": project})


def test_config_precedence_file_env_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('computes = 3\nbind = "127.0.0.1:9000"\nquota_instances = 7\n')
    s = load_settings(cfg, env={"CIRRUS_COMPUTES": "5", "CIRRUS_VIF_PLUGGING_IS_FATAL": "false"},
                      overrides={"computes": 9, "state_dir": tmp_path})
    assert (s.computes, s.port, s.quota_instances, s.vif_plugging_is_fatal) == (9, 9000, 7, False)
    assert s.database_url == f"sqlite:///{tmp_path / 'cirrus.db'}"
    assert s.public_url == "http://127.0.0.1:9000"


def test_config_rejects_unknown_keys_and_bad_values(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("no_such_setting = 1\n")
    with pytest.raises(ValueError, match="no_such_setting"):
        load_settings(cfg, env={})
    with pytest.raises(ValueError):
        load_settings(None, env={"CIRRUS_COMPUTES": "many"})


def test_default_settings() -> None:
    s = Settings()
    assert s.transport_url == "inprocess://" and s.database_url.startswith("sqlite:///")


def test_request_ids_are_random_uuid4s() -> None:
    """``req-`` and a version-4 UUID in its canonical form, a new one each time."""
    import uuid

    ids = {new_request_id() for _ in range(2000)}
    assert len(ids) == 2000
    for rid in ids:
        assert rid.startswith("req-")
        parsed = uuid.UUID(rid[4:])
        assert (str(parsed), parsed.version, parsed.variant) == (rid[4:], 4, uuid.RFC_4122)
    assert RequestContext().request_id != RequestContext().request_id


def test_context_crosses_the_bus_as_a_dict() -> None:
    ctx = RequestContext(user_id="u", project_id="p", domain_id="d", roles=["member"],
                         user_name="un", project_name="pn", auth_token="secret")
    back = RequestContext.from_dict(ctx.to_dict())
    assert back == RequestContext(user_id="u", project_id="p", domain_id="d", roles=["member"],
                                  request_id=ctx.request_id, user_name="un", project_name="pn")
    assert back.roles is not ctx.roles
    assert RequestContext.from_dict({}).roles == []


def test_a_context_without_a_request_id_gets_one() -> None:
    """A message from an older peer may carry none: the context still has an id."""
    assert RequestContext.from_dict({}).request_id.startswith("req-")
    assert RequestContext.from_dict({"request_id": "req-x"}).request_id == "req-x"


async def test_a_supervisor_ends_its_own_tasks_and_no_other() -> None:
    own, other = Supervisor(), Supervisor()
    started: list[str] = []
    ended: list[str] = []

    async def forever(name: str) -> None:
        started.append(name)
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    mine = [own.spawn(forever(f"own-{n}"), f"own-{n}") for n in range(2)]
    theirs = other.spawn(forever("other"), "other")
    while len(started) < 3:  # each inside its try
        await asyncio.sleep(0)
    await own.stop()
    assert sorted(ended) == ["own-0", "own-1"]  # each awaited to its end
    assert all(t.cancelled() for t in mine) and not theirs.done()
    await other.stop()
    assert theirs.cancelled()


async def test_a_supervisor_forgets_tasks_that_end() -> None:
    tasks = Supervisor()
    await tasks.spawn(asyncio.sleep(0), "short")
    assert len(tasks) == 0
    await tasks.stop()  # nothing left to end
