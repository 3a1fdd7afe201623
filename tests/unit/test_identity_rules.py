"""The identity service's rules as tables: implied roles, tags, extra user
attributes, credential blobs, application credential auth bodies."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.exception import ValidationError
from cirrus.identity import assignments, auth_schema, credentials, schema
from cirrus.identity.exception import Unauthorized
from cirrus.identity.tokens import TokenData, new_key

RULES = {"a": ["b", "c"], "c": ["d"], "d": ["a"]}  # with a cycle back to a


@pytest.mark.parametrize("role, expected", [
    ("a", [("a", None), ("b", "a"), ("c", "a"), ("d", "c")]),
    ("c", [("c", None), ("d", "c"), ("a", "d"), ("b", "a")]),
    ("b", [("b", None)]),
    ("z", [("z", None)]),
])
def test_implied_roles_are_followed_once_each(role: str, expected: list[Any]) -> None:
    assert sorted(assignments._implied(role, RULES)) == sorted(expected)


@pytest.mark.parametrize("tags, ok", [
    (["a", "b"], True), ([], True), (["a", "a"], True), (["x" * 255], True),
    (["a/b"], False), (["a,b"], False), ([""], False), (["x" * 256], False),
    ([str(i) for i in range(81)], False), ("a", False), ([1], False),
])
def test_project_tags(tags: Any, ok: bool) -> None:
    check = schema.FIELDS["project"]["tags"]
    if ok:
        assert check(tags, "tags") == list(dict.fromkeys(tags))
    else:
        with pytest.raises(ValidationError):
            check(tags, "tags")


@pytest.mark.parametrize("body, extra", [
    ({"name": "u", "project_id": "p"}, {"project_id": "p"}),
    ({"name": "u", "description": "d"}, {"description": "d"}),
    ({"name": "u", "n": 5, "flag": True, "none": None}, {"n": 5, "flag": True, "none": None}),
    ({"name": "u", "id": "x", "links": {}}, None),  # echoed back, never set
])
def test_a_users_extra_attributes(body: dict[str, Any], extra: Any) -> None:
    assert schema.admin_body({"user": body}, "user", True).get("extra") == extra


@pytest.mark.parametrize("body", [
    {"name": "u", "x": {"a": 1}}, {"name": "u", "x": [1]}, {"name": "u", "x": 1.5},
    {"name": "u", "x": 2 ** 64}, {"name": "u", "x": "\x00"},
    {"name": "u", "description": ["d"]},
    {"name": "u", **{f"k{i}": i for i in range(17)}},
])
def test_bad_extra_attributes_are_400(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        schema.admin_body({"user": body}, "user", True)


def test_a_blob_cipher_reads_what_an_older_key_sealed() -> None:
    old, new = new_key(), new_key()
    sealed = credentials.blob_cipher([old]).encrypt(b"secret")
    assert credentials.blob_cipher([new, old]).decrypt(sealed) == b"secret"
    assert b"secret" not in sealed


def test_a_blob_key_is_not_the_token_key() -> None:
    from cryptography.fernet import Fernet, InvalidToken
    key = new_key()
    sealed = credentials.blob_cipher([key]).encrypt(b"x")
    with pytest.raises(InvalidToken):
        Fernet(key.encode()).decrypt(sealed)


APP = {"methods": ["application_credential"]}


@pytest.mark.parametrize("identity, error", [
    ({**APP, "application_credential": {"id": "i", "secret": "s"}}, None),
    ({**APP, "application_credential": {"name": "n", "secret": "s",
                                        "user": {"id": "u"}}}, None),
    ({**APP, "application_credential": {"id": "i"}}, ValidationError),
    ({**APP, "application_credential": {"name": "n", "secret": "s"}}, ValidationError),
    ({**APP, "application_credential": {"secret": 5, "id": "i"}}, ValidationError),
    ({**APP, "application_credential": "x"}, ValidationError),
    ({"methods": ["application_credential", "password"],
      "application_credential": {"id": "i", "secret": "s"},
      "password": {"user": {"id": "u", "password": "p"}}}, Unauthorized),
])
def test_application_credential_auth_bodies(identity: dict[str, Any], error: Any) -> None:
    auth = {"identity": identity}
    if error is None:
        assert auth_schema.auth_request(auth).app_cred is not None
    else:
        with pytest.raises(error):
            auth_schema.auth_request(auth)


@pytest.mark.parametrize("scope, system", [
    ({"system": {"all": True}}, True), ("unscoped", False),
    ({"project": {"id": "p"}}, False),
])
def test_system_scope(scope: Any, system: bool) -> None:
    auth = {"identity": {"methods": ["token"], "token": {"id": "t"}}, "scope": scope}
    assert auth_schema.auth_request(auth).system is system


@pytest.mark.parametrize("scope", [{"system": {"all": False}}, {"system": "all"},
                                   {"system": {"all": True}, "project": {"id": "p"}}])
def test_bad_system_scope_is_400(scope: Any) -> None:
    auth = {"identity": {"methods": ["token"], "token": {"id": "t"}}, "scope": scope}
    with pytest.raises(ValidationError):
        auth_schema.auth_request(auth)


def test_a_tokens_scope_and_credential_survive_its_payload() -> None:
    data = TokenData(user_id="u", expires_at=2.0, issued_at=1.0, audit_id="a", methods=["x"],
                     app_cred_id="c", parent_audit_id="c", system=True)
    again = TokenData.from_payload(data.to_payload())
    assert (again.app_cred_id, again.system, again.audit_chain_id) == ("c", True, "c")
    plain = TokenData.from_payload(TokenData("u", 2.0, 1.0, "a", ["x"]).to_payload())
    assert (plain.app_cred_id, plain.system) == (None, False)
