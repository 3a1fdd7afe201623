"""The personas the security tests rely on are what they claim to be."""
from tests.security.conftest import Tenants


async def test_each_persona_has_the_scope_and_roles_it_claims(tenants: Tenants) -> None:
    expected = {"admin": ("admin", "admin"), "member": ("demo", "member"),
                "reader": ("demo", "reader"), "other": ("other", "member"),
                "norole": (None, None), "unscoped": (None, None)}
    for persona, (project, role) in expected.items():
        resp = await tenants.admin.get("/identity/v3/auth/tokens",
                                       headers={"X-Subject-Token": tenants.tokens[persona]})
        assert resp.status_code == 200, (persona, resp.text)
        token = resp.json()["token"]
        assert (token.get("project") or {}).get("name") == project, persona
        roles = {r["name"] for r in token.get("roles", [])}
        assert (role in roles) if role else not roles, (persona, roles)
