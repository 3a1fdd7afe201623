"""The metadata service's rules as tables: the signature and its secret, the
OpenStack and EC2 trees and paths, the guest HTTP parser, the proxy's port
table and the DHCP route to 169.254.169.254."""
from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.api.metadata.exception import MetadataNotFound
from cirrus.api.metadata.instance import InstanceMetadata, MetadataCache
from cirrus.api.metadata.lookup import lookup
from cirrus.metadata import base, ec2, signature
from cirrus.network.backends import guest_http
from cirrus.network.backends.dhcp import DhcpFiles, dnsmasq_argv
from cirrus.network.backends.metadata_proxy import Asker, askers

UUID = "6f1b8a4e-2d3c-4b5a-9e8f-7a6b5c4d3e2f"
INSTANCE: dict[str, Any] = {
    "id": 42, "uuid": UUID, "display_name": "web", "hostname": "web-1", "project_id": "p1",
    "availability_zone": "nova", "launch_index": 0, "metadata": {"k": "v"},
    "key_name": "mykey", "key_data": "ssh-ed25519 AAAA me@host", "image_ref": "img-1",
    "flavor": {"name": "m1.tiny"}, "reservation_id": "r-abc", "security_groups": ["default"],
    "user_data": base64.b64encode(b"#!/bin/sh\necho hi\n").decode(),
    "system_metadata": {"password_0": "secret", "password_1": ""},
}
VIF: dict[str, Any] = {
    "id": "port-1", "address": "fa:16:3e:00:00:01", "devname": "tapport-1", "type": "bridge",
    "network": {"id": "net-1", "meta": {"mtu": 1450}, "subnets": [
        {"cidr": "fd00::/64", "version": 6, "ips": [{"address": "fd00::5"}], "dns": [],
         "meta": {}},
        {"cidr": "10.0.0.0/24", "version": 4, "ips": [{"address": "10.0.0.5"}],
         "dns": [{"address": "10.0.0.53"}], "meta": {"enable_dhcp": True}}]},
}
MD = InstanceMetadata(INSTANCE, [VIF], ["203.0.113.7"])  # type: ignore[list-item]


# -- the signature ----------------------------------------------------------------------
@pytest.mark.parametrize(("secret", "instance_id", "presented", "valid"), [
    ("s3cret", UUID, signature.sign("s3cret", UUID), True),
    ("s3cret", UUID, signature.sign("other", UUID), False),
    ("s3cret", UUID, signature.sign("s3cret", UUID + "x"), False),
    ("s3cret", UUID, signature.sign("s3cret", UUID).upper(), False),
    ("s3cret", UUID, "", False),
    ("s3cret", UUID, "é" * 64, False),
])
def test_verify(secret: str, instance_id: str, presented: str, valid: bool) -> None:
    assert signature.verify(secret, instance_id, presented) is valid


def test_sign_is_nova_and_neutrons_hmac_sha256() -> None:
    # HMAC-SHA256(key=b"secret", msg=b"instance"), hex, as Neutron's proxy sends it.
    assert signature.sign("secret", "instance") == (
        "fac450cbc556373851e9f5755126936b"
        "598b1749a007d96b7e0b7f1a5cd274e9")


def test_the_configured_secret_wins(tmp_path: Path) -> None:
    settings = SimpleNamespace(state_dir=tmp_path, metadata_proxy_shared_secret="given")
    assert signature.shared_secret(settings) == "given"
    assert not (tmp_path / signature.SECRET_FILE).exists()


def test_an_empty_secret_is_generated_once_and_shared(tmp_path: Path) -> None:
    settings = SimpleNamespace(state_dir=tmp_path / "state", metadata_proxy_shared_secret="")
    first = signature.shared_secret(settings)
    path = tmp_path / "state" / signature.SECRET_FILE
    assert len(first) == 64 and path.read_text() == first
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert signature.shared_secret(settings) == first  # a second process reads it
    assert sorted(p.name for p in path.parent.iterdir()) == [signature.SECRET_FILE]


# -- OpenStack files --------------------------------------------------------------------
@pytest.mark.parametrize(("version", "files"), [
    ("2012-08-10", ["meta_data.json", "user_data"]),
    ("2013-04-04", ["meta_data.json", "password", "user_data"]),
    ("2013-10-17", ["meta_data.json", "password", "user_data", "vendor_data.json"]),
    ("2015-10-15", ["meta_data.json", "network_data.json", "password", "user_data",
                    "vendor_data.json"]),
    ("2016-10-06", ["meta_data.json", "network_data.json", "password", "user_data",
                    "vendor_data.json", "vendor_data2.json"]),
    ("latest", ["meta_data.json", "network_data.json", "password", "user_data",
                "vendor_data.json", "vendor_data2.json"]),
])
def test_files_of_each_version(version: str, files: list[str]) -> None:
    assert base.files_of(version) == files


@pytest.mark.parametrize(("raw", "served"), [
    (None, None), ("", None),
    (base64.b64encode(b"\x00binary").decode(), b"\x00binary"),
    ("not base64!", b"not base64!"),
])
def test_user_data(raw: str | None, served: bytes | None) -> None:
    assert base.user_data({"user_data": raw}) == served


def test_meta_data_without_a_key_or_password() -> None:
    data = base.meta_data({"uuid": UUID}, [], None)
    assert data["hostname"] == UUID and data["meta"] == {} and data["devices"] == []
    assert "public_keys" not in data and "admin_pass" not in data


def test_network_data_links_networks_and_services() -> None:
    data = base.network_data([VIF])  # type: ignore[list-item]
    assert data["links"] == [{"id": "tapport-1", "vif_id": "port-1", "type": "bridge",
                              "ethernet_mac_address": "fa:16:3e:00:00:01", "mtu": 1450}]
    assert [(n["type"], n["ip_address"]) for n in data["networks"]] == [
        ("ipv6", "fd00::5"), ("ipv4_dhcp", "10.0.0.5")]
    assert data["services"] == [{"type": "dns", "address": "10.0.0.53"}]


# -- the EC2 tree -----------------------------------------------------------------------
@pytest.mark.parametrize(("path", "answer"), [
    (["instance-id"], "i-0000002a"),
    (["hostname"], "web-1"),
    (["local-hostname"], "web-1"),
    (["local-ipv4"], "10.0.0.5"),  # the first IPv4 address, not the IPv6 one
    (["public-ipv4"], "203.0.113.7"),
    (["ami-id"], "img-1"),
    (["instance-type"], "m1.tiny"),
    (["reservation-id"], "r-abc"),
    (["security-groups"], "default"),
    (["placement", "availability-zone"], "nova"),
    (["public-keys", "0", "openssh-key"], "ssh-ed25519 AAAA me@host"),
    (["block-device-mapping", "root"], "/dev/vda"),
    (["", "hostname", ""], "web-1"),
    (["nope"], None), (["hostname", "x"], None), ([ec2.NAME], None),
    (["public-keys", "0", ec2.NAME], None), (["public-keys", "1"], None),
])
def test_ec2_walk(path: list[str], answer: str | None) -> None:
    assert ec2.walk(ec2.meta_data(INSTANCE, [VIF], ["203.0.113.7"]), path) == answer  # type: ignore[list-item]


@pytest.mark.parametrize(("instance", "network_info", "floating", "key", "value"), [
    ({"uuid": UUID}, [], [], "public-ipv4", ""),
    ({"uuid": UUID}, [], [], "local-ipv4", ""),
    ({"uuid": UUID}, [], [], "hostname", UUID),
    ({"uuid": UUID, "security_groups": [{"name": "a"}, {"name": "b"}]}, [], [],
     "security-groups", "a\nb"),
    ({"uuid": UUID, "id": 255}, [], [], "instance-id", "i-000000ff"),
])
def test_ec2_defaults(instance: dict[str, Any], network_info: list[Any], floating: list[str],
                      key: str, value: str) -> None:
    assert ec2.meta_data(instance, network_info, floating)[key] == value


def test_an_instance_without_a_key_has_no_public_keys() -> None:
    assert "public-keys" not in ec2.meta_data({"uuid": UUID}, [], [])


@pytest.mark.parametrize(("node", "text"), [
    ({"b": "x", "a": {"c": "y"}}, "a/\nb"),
    ({"0": {ec2.NAME: "0=mykey", "openssh-key": "k"}}, "0=mykey"),
    ({ec2.NAME: "0=mykey", "openssh-key": "k"}, "openssh-key"),
    ({}, ""),
])
def test_ec2_listing(node: ec2.Tree, text: str) -> None:
    assert ec2.listing(node) == text


# -- paths ------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "content_type", "body"), [
    ("", "text/plain; charset=utf-8", "\n".join([*ec2.EC2_VERSIONS, "latest"])),
    ("openstack/", "text/plain; charset=utf-8",
     "\n".join([*base.OPENSTACK_VERSIONS, "latest"])),
    ("openstack/latest/user_data", "application/octet-stream", "#!/bin/sh\necho hi\n"),
    ("openstack/2013-04-04/password", "text/plain; charset=utf-8", "secret"),
    ("openstack/latest/vendor_data2.json", "application/json", "{}"),
    ("latest", "text/plain; charset=utf-8", "meta-data/\nuser-data"),
    ("2009-04-04/user-data", "application/octet-stream", "#!/bin/sh\necho hi\n"),
    ("latest/meta-data/public-keys/", "text/plain; charset=utf-8", "0=mykey"),
    ("1.0/meta-data/public-ipv4", "text/plain; charset=utf-8", "203.0.113.7"),
])
def test_lookup(path: str, content_type: str, body: str) -> None:
    found = lookup(MD, path)
    assert (found.content_type, found.body.decode()) == (content_type, body)


def test_lookup_meta_data_json() -> None:
    data = json.loads(lookup(MD, "openstack/latest/meta_data.json").body)
    assert data["uuid"] == UUID and data["public_keys"] == {"mykey": "ssh-ed25519 AAAA me@host"}


@pytest.mark.parametrize("path", [
    "nope", "openstack/nope", "openstack/2012-08-10/password", "openstack/latest/x",
    "openstack/latest/meta_data.json/x", "latest/nope", "latest/meta-data/nope",
    "2010-01-01/meta-data/", "latest/user-data/x",
])
def test_lookup_not_found(path: str) -> None:
    with pytest.raises(MetadataNotFound):
        lookup(MD, path)


@pytest.mark.parametrize("path", ["openstack/latest/user_data", "latest/user-data"])
def test_no_user_data_is_not_found(path: str) -> None:
    md = InstanceMetadata({**INSTANCE, "user_data": None}, [])
    with pytest.raises(MetadataNotFound):
        lookup(md, path)
    assert "user-data" not in lookup(md, "latest").body.decode()


# -- the cache --------------------------------------------------------------------------
class CountingDb:
    def __init__(self) -> None:
        self.reads = 0

    async def read(self, fn: Any, uuid: str) -> InstanceMetadata | None:
        self.reads += 1
        return MD if uuid == UUID else None


@pytest.mark.parametrize(("ttl", "advance", "reads"), [
    (15.0, 1.0, 1), (15.0, 15.0, 2), (0.0, 0.0, 2),
])
async def test_cache_keeps_an_instance_for_its_ttl(ttl: float, advance: float,
                                                   reads: int) -> None:
    now = [100.0]
    db = CountingDb()
    cache = MetadataCache(db, ttl, clock=lambda: now[0])  # type: ignore[arg-type]
    assert await cache.get(UUID) is MD
    now[0] += advance
    assert await cache.get(UUID) is MD
    assert db.reads == reads


async def test_cache_forgets_on_invalidate_and_never_keeps_a_miss() -> None:
    db = CountingDb()
    cache = MetadataCache(db, 15.0)  # type: ignore[arg-type]
    await cache.get(UUID)
    cache.invalidate(UUID)
    await cache.get(UUID)
    assert await cache.get("missing") is None and await cache.get("missing") is None
    assert db.reads == 4


# -- the proxy --------------------------------------------------------------------------
@pytest.mark.parametrize(("port", "found"), [
    ({"device_id": "vm1", "device_owner": "compute:nova", "project_id": "p",
      "fixed_ips": [{"ip_address": "10.0.0.5"}, {"ip_address": "fd00::5"}]},
     {"10.0.0.5": Asker("vm1", "p"), "fd00::5": Asker("vm1", "p")}),
    ({"device_id": "r1", "device_owner": "network:router_interface", "project_id": "p",
      "fixed_ips": [{"ip_address": "10.0.0.1"}]}, {}),
    ({"device_id": "", "device_owner": "compute:nova", "project_id": "p",
      "fixed_ips": [{"ip_address": "10.0.0.6"}]}, {}),
    ({"device_id": "vm2", "device_owner": "", "project_id": "p", "fixed_ips": []}, {}),
])
def test_askers(port: dict[str, Any], found: dict[str, Asker]) -> None:
    assert askers([port]) == found


@pytest.mark.parametrize(("head", "method", "target", "length", "keep"), [
    (b"GET /latest HTTP/1.1\r\nHost: 169.254.169.254", "GET", "/latest", 0, True),
    (b"GET /latest HTTP/1.0", "GET", "/latest", 0, False),
    (b"GET / HTTP/1.0\r\nConnection: Keep-Alive", "GET", "/", 0, True),
    (b"POST /openstack/latest/password HTTP/1.1\r\nContent-Length: 12\r\n"
     b"Connection: close", "POST", "/openstack/latest/password", 12, False),
    (b"GET /a?b=c HTTP/1.1", "GET", "/a?b=c", 0, True),
])
def test_parse_head(head: bytes, method: str, target: str, length: int, keep: bool) -> None:
    req, body_length = guest_http.parse_head(head, "10.0.0.5")
    assert (req.method, req.target, body_length, req.keep_alive, req.peer) == (
        method, target, length, keep, "10.0.0.5")


@pytest.mark.parametrize(("head", "status"), [
    (b"GET", 400), (b"GET /a HTTP/1.1 extra", 400), (b"BREW /pot HTTP/1.1", 405),
    (b"GET /a SPDY/3", 400), (b"GET http://evil/ HTTP/1.1", 400),
    (b"GET //evil.example/x HTTP/1.1", 400), (b"GET /../compute/v2.1 HTTP/1.1", 400),
    (b"GET /openstack/./latest HTTP/1.1", 400), (b"GET /a\x7f HTTP/1.1", 400),
    (b"GET / HTTP/1.1\r\nno colon here", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 411),
    (b"POST / HTTP/1.1\r\nContent-Length: x", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: -1", 413),
    (b"POST / HTTP/1.1\r\nContent-Length: 999999999", 413),
])
def test_parse_head_refuses(head: bytes, status: int) -> None:
    with pytest.raises(guest_http.BadRequest) as caught:
        guest_http.parse_head(head, "10.0.0.5")
    assert caught.value.status == status


@pytest.mark.parametrize(("resp", "keep", "head_only", "raw"), [
    (guest_http.GuestResponse(200, b"hi"), True, False,
     b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
     b"Connection: keep-alive\r\n\r\nhi"),
    (guest_http.GuestResponse(404, b"no", "application/json"), False, True,
     b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
     b"Connection: close\r\n\r\n"),
])
def test_render(resp: guest_http.GuestResponse, keep: bool, head_only: bool, raw: bytes) -> None:
    assert guest_http.render(resp, keep, head_only) == raw


# -- DHCP -------------------------------------------------------------------------------
SUBNET = {"id": "s", "ip_version": 4, "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1",
          "enable_dhcp": True, "ipv6_ra_mode": None, "ipv6_address_mode": None,
          "dns_nameservers": [], "host_routes": []}
ROUTE = {"destination": "192.168.0.0/16", "nexthop": "10.0.0.254"}


@pytest.mark.parametrize(("metadata", "routes", "option"), [
    (True, [], "169.254.169.254/32,10.0.0.1,0.0.0.0/0,10.0.0.1"),
    (True, [ROUTE], "169.254.169.254/32,10.0.0.1,192.168.0.0/16,10.0.0.254,0.0.0.0/0,10.0.0.1"),
    (False, [ROUTE], "192.168.0.0/16,10.0.0.254,0.0.0.0/0,10.0.0.1"),
    (False, [], None),
])
def test_metadata_route_in_option_121(tmp_path: Path, metadata: bool, routes: list[Any],
                                      option: str | None) -> None:
    argv = dnsmasq_argv({"mtu": 1450}, [{**SUBNET, "host_routes": routes}],
                        DhcpFiles(tmp_path), "brq1", "me", metadata)
    found = [a.split("classless-static-route,", 1)[1] for a in argv
             if "classless-static-route" in a]
    assert found == ([option] if option else [])


def test_a_routed_subnet_reaches_metadata_through_the_dhcp_address(tmp_path: Path) -> None:
    """The router holds the gateway; the proxy listens on the bridge, whose
    address there is the network's DHCP port's (HostView.dhcp_subnets)."""
    routed = {**SUBNET, "dhcp_server_ip": "10.0.0.2"}
    argv = dnsmasq_argv({"mtu": 1450}, [routed], DhcpFiles(tmp_path), "brq1", "me", True)
    assert "--dhcp-option=tag:subnet-s,option:router,10.0.0.1" in argv
    assert ("--dhcp-option=tag:subnet-s,option:classless-static-route,"
            "169.254.169.254/32,10.0.0.2,0.0.0.0/0,10.0.0.1") in argv


# -- the floating IP behind public-ipv4 ----------------------------------------------------
def test_public_ipv4_is_the_ports_floating_ip(conn: Any) -> None:
    from cirrus.api.metadata.instance import floating_addresses
    from cirrus.context import RequestContext
    from cirrus.network import networks as net_db
    from cirrus.network import ports as port_db
    from cirrus.network.models import floatingips

    ctx = RequestContext(user_id="u", project_id="p", roles=["admin"])
    net = net_db.create_network(conn, ctx, {"name": "n", "project_id": "p"})
    net_db.create_subnet(conn, ctx, {"network_id": net["id"], "cidr": "10.5.0.0/24"})
    fixed, floating, other = (port_db.create_port(conn, ctx, {
        "network_id": net["id"], "project_id": "p"}, "fa:16:3e:00:00:00") for _ in range(3))
    conn.execute(floatingips.insert().values(
        id="fip-1", project_id="p", floating_ip_address="203.0.113.9",
        floating_network_id=net["id"], floating_port_id=floating["id"],
        fixed_port_id=fixed["id"], fixed_ip_address="10.5.0.2", status="ACTIVE"))
    assert floating_addresses(conn, [fixed["id"]]) == ["203.0.113.9"]
    assert floating_addresses(conn, [other["id"]]) == []
    assert floating_addresses(conn, []) == []
