"""Who may read and change network tags and quotas: Neutron's rules with the
secure-RBAC defaults (a project's tags are its resources'; another project's
are not there; quotas are set by admins only)."""
from __future__ import annotations

from tests.functional.test_network import NET
from tests.functional.test_network_tags import make_resources
from tests.security.conftest import Tenants


async def test_tags_of_another_project_and_of_a_shared_network(tenants: Tenants) -> None:
    t = tenants
    ids = await make_resources(t.member)
    for collection, rid in ids.items():
        base = f"{NET}/{collection}/{rid}/tags"
        assert (await t.member.put(f"{base}/mine")).status_code == 201
        for method in ("GET", "PUT", "DELETE"):
            assert (await t.other.request(method, f"{base}/mine")).status_code == 404
        assert (await t.other.put(base, json={"tags": []})).status_code == 404
        # A reader of the project sees the tags and changes none.
        assert (await t.reader.get(base)).json() == {"tags": ["mine"]}
        assert (await t.reader.put(f"{base}/x")).status_code == 403
    shared = (await t.admin.post(f"{NET}/networks", json={"network": {
        "name": "shared", "shared": True}})).json()["network"]
    base = f"{NET}/networks/{shared['id']}/tags"
    assert (await t.admin.put(f"{base}/cloud")).status_code == 201
    assert (await t.other.get(base)).json() == {"tags": ["cloud"]}
    assert (await t.other.put(f"{base}/mine")).status_code == 403
    assert (await t.other.delete(base)).status_code == 403
    assert (await t.admin.get(base)).json() == {"tags": ["cloud"]}


async def test_quotas_are_read_by_their_project_and_set_by_admins(tenants: Tenants) -> None:
    t = tenants
    demo = t.project["demo"]
    url = f"{NET}/quotas/{demo}"
    assert (await t.reader.get(url)).status_code == 200
    assert (await t.reader.get(f"{url}/details")).status_code == 200
    for path in (url, f"{url}/details", f"{url}/default"):
        assert (await t.other.get(path)).status_code == 403, path
    for client in (t.member, t.reader, t.other):
        assert (await client.put(url, json={"quota": {"port": 1}})).status_code == 403
        assert (await client.delete(url)).status_code == 403
        assert (await client.get(f"{NET}/quotas")).status_code == 403
    assert (await t.admin.get(url)).json()["quota"]["port"] == 500
    assert (await t.admin.put(url, json={"quota": {"port": 9}})).status_code == 200
    # The other project's limits are its own.
    assert (await t.other.get(f"{NET}/quotas/{t.project['other']}")).json()["quota"]["port"] == 500
    assert (await t.member.get(url)).json()["quota"]["port"] == 9
