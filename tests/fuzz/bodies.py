"""A valid example request for every write route: the seeds the fuzzer mutates.

Keyed by (method, path format) exactly as the route tables spell them
(``routes.write_targets``); a write route without an entry fails CI. The
bodies follow the OpenStack API references and what cirrus's functional tests
send. ``Ref("network")`` is the id of the fuzz world's network (world.py),
``Unique(...)`` a value made unique per request so that creates do not all
collide on one name or CIDR.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.fuzz.hostile import Ref, Unique

JSON = "application/json"
PATCH = "application/openstack-images-v2.1-json-patch"
OCTETS = "application/octet-stream"
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIFMkQfqhDn/1qkWgIz7BhMlAAQPRa2LJGsgunIx3ar5 fuzz"


@dataclass(frozen=True)
class Example:
    """One valid request to a route.

    ``body`` is a JSON tree (None: no body; bytes: sent as is); ``params``
    fixes path parameters to literals (``/os-services/enable``); ``query`` is
    the query string the route needs (a value that is a JSON tree is sent as
    its JSON text, Refs filled in); ``persona``
    is who may make the request (world.PERSONAS): the fuzz sends it mostly as
    that persona, sometimes as another.
    """
    body: Any = None
    content_type: str | None = JSON
    headers: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    persona: str = "member"
    query: tuple[tuple[str, Any], ...] = ()


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


NO_BODY = Example(content_type=None)
ADMIN_NO_BODY = Example(content_type=None, persona="admin")

SERVER = {"name": "fuzz-vm", "imageRef": Ref("boot_image"), "flavorRef": "1", "networks": "auto"}
PASSWORD_AUTH = {"auth": {
    "identity": {"methods": ["password"], "password": {"user": {
        "name": "demo", "domain": {"id": "default"}, "password": "demo"}}},
    "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}}
TOKEN_AUTH = {"auth": {"identity": {"methods": ["token"], "token": {"id": Ref("token")}},
                       "scope": {"project": {"id": Ref("demo_project")}}}}
PORT_FIXED_IP = {"subnet_id": Ref("subnet"), "ip_address": Unique("10.77.0.{o}")}

COMPUTE: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", "/compute/v2.1/servers"): (
        Example({"server": SERVER}),
        Example({"server": {**SERVER, "networks": [{"uuid": Ref("network")}],
                            "metadata": {"role": "web"}, "key_name": Ref("keypair"),
                            "security_groups": [{"name": "default"}], "min_count": 1,
                            "max_count": 2, "availability_zone": "nova",
                            "user_data": "IyEvYmluL3NoCmVjaG8gaGk=", "accessIPv4": "192.0.2.1",
                            "OS-DCF:diskConfig": "AUTO", "return_reservation_id": True}}),
        Example({"server": {**SERVER, "networks": [{"port": Ref("free_port")}],
                            "description": "d", "tags": ["a", "b"], "hostname": "vm-1",
                            "block_device_mapping_v2": [{
                                "source_type": "image", "destination_type": "local",
                                "uuid": Ref("boot_image"), "boot_index": 0,
                                "delete_on_termination": True}]}},
                headers=v("2.90")),
        Example({"server": {**SERVER, "networks": [{"uuid": Ref("network"),
                                                   "fixed_ip": Unique("10.77.0.{o}")}],
                            "personality": [{"path": "/etc/motd", "contents": "aGk="}],
                            "adminPass": "secret", "config_drive": True}}),
    ),
    ("PUT", "/compute/v2.1/servers/{server_id}"): (
        Example({"server": {"name": "fz-renamed", "accessIPv4": "192.0.2.9"}}),
        Example({"server": {"description": "d", "accessIPv6": "2001:db8::9",
                            "OS-DCF:diskConfig": "MANUAL", "hostname": "fz-host"}},
                headers=v("2.90")),
    ),
    ("DELETE", "/compute/v2.1/servers/{server_id}"): (NO_BODY,),
    ("PUT", "/compute/v2.1/servers/{server_id}/tags"): (
        Example({"tags": ["fz-a", "fz-b", Ref("server_tag")]}, headers=v("2.26")),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/tags"): (
        Example(content_type=None, headers=v("2.26")),),
    ("PUT", "/compute/v2.1/servers/{server_id}/tags/{tag}"): (
        Example(params={"tag": "fz-tag"}, content_type=None, headers=v("2.26")),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/tags/{tag}"): (
        Example(content_type=None, headers=v("2.26")),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/os-server-password"): (NO_BODY,),
    ("POST", "/compute/v2.1/servers/{server_id}/action"): (
        Example({"os-getConsoleOutput": {"length": 10}}),
        Example({"reboot": {"type": "SOFT"}}),
        Example({"os-stop": None}),
        Example({"os-start": None}),
    ),
    ("POST", "/compute/v2.1/servers/{server_id}/metadata"): (
        Example({"metadata": {"a": "1", "b": "2"}}),),
    ("PUT", "/compute/v2.1/servers/{server_id}/metadata"): (
        Example({"metadata": {"c": "3"}}),),
    ("PUT", "/compute/v2.1/servers/{server_id}/metadata/{key}"): (
        Example({"meta": {"color": "blue"}}, params={"key": "color"}),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/metadata/{key}"): (NO_BODY,),
    ("DELETE", "/compute/v2.1/images/{image_id}"): (NO_BODY,),
    ("POST", "/compute/v2.1/images/{image_id}/metadata"): (
        Example({"metadata": {"a": "1", "b": "2"}}),),
    ("PUT", "/compute/v2.1/images/{image_id}/metadata"): (  # keeps the PATCH example's property
        Example({"metadata": {"os_distro": "tiny", "c": "3"}}),),
    ("PUT", "/compute/v2.1/images/{image_id}/metadata/{key}"): (
        Example({"meta": {"color": "blue"}}, params={"key": "color"}),),
    ("DELETE", "/compute/v2.1/images/{image_id}/metadata/{key}"): (NO_BODY,),
    ("POST", "/compute/v2.1/servers/{server_id}/os-interface"): (
        Example({"interfaceAttachment": {"net_id": Ref("network")}}),
        Example({"interfaceAttachment": {"port_id": Ref("free_port")}}),
        Example({"interfaceAttachment": {"net_id": Ref("network"), "fixed_ips": [
            {"ip_address": Unique("10.77.0.{o}")}]}}),
    ),
    ("DELETE", "/compute/v2.1/servers/{server_id}/os-interface/{port_id}"): (NO_BODY,),
    ("POST", "/compute/v2.1/servers/{server_id}/os-volume_attachments"): (
        Example({"volumeAttachment": {"volumeId": Ref("available_volume")}}),
        Example({"volumeAttachment": {"volumeId": Ref("available_volume"), "tag": "data",
                                      "delete_on_termination": True}}, headers=v("2.79")),
    ),
    ("PUT", "/compute/v2.1/servers/{server_id}/os-volume_attachments/{volume_id}"): (
        Example({"volumeAttachment": {"volumeId": Ref("attached_volume"),
                                      "delete_on_termination": True}}, headers=v("2.85")),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/os-volume_attachments/{volume_id}"): (
        NO_BODY,),
    ("POST", "/compute/v2.1/flavors"): (
        Example({"flavor": {"name": Unique("fz-flavor-{n}"), "ram": 512, "vcpus": 1, "disk": 1,
                            "id": Unique("fz-{n}"), "OS-FLV-EXT-DATA:ephemeral": 0, "swap": 0,
                            "rxtx_factor": 1.0, "os-flavor-access:is_public": True}}, persona="admin"),
        Example({"flavor": {"name": Unique("fz-flavor-{n}"), "ram": 1024, "vcpus": 2,
                            "disk": 10, "description": "fuzz"}}, headers=v("2.55"), persona="admin"),
    ),
    ("PUT", "/compute/v2.1/flavors/{flavor_id}"): (
        Example({"flavor": {"description": "updated"}}, headers=v("2.55"), persona="admin"),),
    ("DELETE", "/compute/v2.1/flavors/{flavor_id}"): (ADMIN_NO_BODY,),
    ("POST", "/compute/v2.1/flavors/{flavor_id}/os-extra_specs"): (
        Example({"extra_specs": {"hw:cpu_policy": "shared", "hw:numa_nodes": "1"}}, persona="admin"),),
    ("PUT", "/compute/v2.1/flavors/{flavor_id}/os-extra_specs/{key}"): (
        Example({"hw:mem_page_size": "large"}, params={"key": "hw:mem_page_size"}, persona="admin"),),
    ("DELETE", "/compute/v2.1/flavors/{flavor_id}/os-extra_specs/{key}"): (ADMIN_NO_BODY,),
    ("POST", "/compute/v2.1/flavors/{flavor_id}/action"): (
        Example({"addTenantAccess": {"tenant": Unique("fz-project-{n}")}}, persona="admin"),),
    ("POST", "/compute/v2.1/os-aggregates"): (
        Example({"aggregate": {"name": Unique("fz-agg-{n}")}}, persona="admin"),
        Example({"aggregate": {"name": Unique("fz-agg-{n}"), "availability_zone":
                               Unique("fz-az-{n}")}}, headers=v("2.41"), persona="admin"),
    ),
    ("PUT", "/compute/v2.1/os-aggregates/{aggregate_id}"): (
        Example({"aggregate": {"name": Unique("fz-agg-{n}")}}, persona="admin"),),
    ("POST", "/compute/v2.1/os-aggregates/{aggregate_id}/action"): (
        Example({"set_metadata": {"metadata": {"ssd": "true", "fz": None}}}, persona="admin"),
        Example({"add_host": {"host": "compute1"}}, persona="admin"),
        Example({"remove_host": {"host": "compute1"}}, persona="admin"),
    ),
    ("DELETE", "/compute/v2.1/os-aggregates/{aggregate_id}"): (ADMIN_NO_BODY,),
    # the security group proxies (2.1–2.35)
    ("POST", "/compute/v2.1/os-security-groups"): (
        Example({"security_group": {"name": Unique("fz-csg-{n}"), "description": "fuzz"}}),),
    ("PUT", "/compute/v2.1/os-security-groups/{security_group_id}"): (
        Example({"security_group": {"name": Unique("fz-csg-{n}"), "description": "renamed"}}),),
    ("DELETE", "/compute/v2.1/os-security-groups/{security_group_id}"): (NO_BODY,),
    ("POST", "/compute/v2.1/os-security-group-rules"): (
        Example({"security_group_rule": {"parent_group_id": Ref("security_group"),
                                         "ip_protocol": "tcp", "from_port": 22, "to_port": 22,
                                         "cidr": "10.0.0.0/8"}}),),
    ("DELETE", "/compute/v2.1/os-security-group-rules/{rule_id}"): (NO_BODY,),
    # the block storage proxies (2.1–2.35)
    ("POST", "/compute/v2.1/os-volumes"): (
        Example({"volume": {"size": 1, "display_name": "fz-cvol", "display_description": "d",
                            "metadata": {"k": "v"}}}),
        Example({"volume": {"size": "1", "snapshot_id": Ref("volume_snapshot")}}),
    ),
    ("DELETE", "/compute/v2.1/os-volumes/{volume_id}"): (NO_BODY,),
    ("POST", "/compute/v2.1/os-assisted-volume-snapshots"): (
        Example({"snapshot": {"volume_id": Ref("attached_volume"), "create_info": {
            "snapshot_id": Unique("00000000-0000-4000-8000-{n:012d}"), "type": "qcow2",
            "new_file": "volume.snap"}}}, persona="admin"),),
    ("DELETE", "/compute/v2.1/os-assisted-volume-snapshots/{snapshot_id}"): (
        Example(content_type=None, persona="admin", query=(
            ("delete_info", {"volume_id": Ref("attached_volume"), "type": "qcow2",
                             "file_to_merge": None, "merge_target_file": "volume"}),
        )),),
    ("POST", "/compute/v2.1/os-snapshots"): (
        Example({"snapshot": {"volume_id": Ref("volume"), "force": True,
                              "display_name": "fz-csnap"}}),),
    ("DELETE", "/compute/v2.1/os-snapshots/{snapshot_id}"): (NO_BODY,),
    ("PUT", "/compute/v2.1/os-hosts/{host_name}"): (
        Example({"status": "enable"}, persona="admin"),),
    ("POST", "/compute/v2.1/servers/{server_id}/remote-consoles"): (
        Example({"remote_console": {"protocol": "serial", "type": "serial"}}, headers=v("2.6")),),
    ("DELETE", "/compute/v2.1/servers/{server_id}/migrations/{migration_id}"): (
        Example(content_type=None, persona="admin", headers=v("2.24")),),
    ("POST", "/compute/v2.1/servers/{server_id}/migrations/{migration_id}/action"): (
        Example({"force_complete": None}, persona="admin", headers=v("2.22")),),
    ("POST", "/compute/v2.1/os-keypairs"): (
        Example({"keypair": {"name": Unique("fz-key-{n}"), "public_key": PUBLIC_KEY}}),
        Example({"keypair": {"name": Unique("fz-key-{n}"), "type": "ssh",
                             "public_key": PUBLIC_KEY}}, headers=v("2.2")),
    ),
    ("DELETE", "/compute/v2.1/os-keypairs/{name}"): (NO_BODY,),
    ("POST", "/compute/v2.1/os-server-groups"): (
        Example({"server_group": {"name": "g", "policies": ["affinity"]}}),
        Example({"server_group": {"name": "h", "policy": "anti-affinity",
                                  "rules": {"max_server_per_host": 2}}}, headers=v("2.64")),
    ),
    ("DELETE", "/compute/v2.1/os-server-groups/{group_id}"): (NO_BODY,),
    ("PUT", "/compute/v2.1/os-services/{service_id}"): (
        Example({"status": "enabled"}, headers=v("2.53"), persona="admin"),
        Example({"status": "disabled", "disabled_reason": "fuzz"}, headers=v("2.53"), persona="admin"),
        Example({"forced_down": False}, headers=v("2.53"), persona="admin"),
        Example({"host": "compute2", "binary": "nova-compute"}, params={"service_id": "enable"},
                persona="admin"),
    ),
    ("DELETE", "/compute/v2.1/os-services/{service_id}"): (
        Example(content_type=None, headers=v("2.53"), persona="admin"),),
    ("PUT", "/compute/v2.1/os-quota-sets/{project_id}"): (
        Example({"quota_set": {"instances": 20, "cores": 40, "ram": 65536, "key_pairs": 50}},
                persona="admin"),
        Example({"quota_set": {"server_groups": 5, "force": True, "metadata_items": 128}},
                persona="admin"),
    ),
    ("DELETE", "/compute/v2.1/os-quota-sets/{project_id}"): (ADMIN_NO_BODY,),
    ("PUT", "/compute/v2.1/os-quota-class-sets/{class_name}"): (
        Example({"quota_class_set": {"instances": 20, "cores": 40, "fixed_ips": "-1"}},
                persona="admin"),
        Example({"quota_class_set": {"server_groups": 5, "server_group_members": 10}},
                headers=v("2.57"), persona="admin"),
    ),
    ("POST", "/compute/v2.1/os-server-external-events"): (
        Example({"events": [{"name": "network-vif-plugged", "server_uuid": Ref("server"),
                             "tag": Ref("free_port"), "status": "completed"}]}, persona="admin"),
        Example({"events": [{"name": "network-changed", "server_uuid": Ref("server")}]},
                persona="admin"),
    ),
}

NETWORK: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", "/network/v2.0/networks"): (
        Example({"network": {"name": "fz-net", "admin_state_up": True, "mtu": 1450,
                             "description": "d", "port_security_enabled": True}}),
        Example({"network": {"name": "fz-shared", "shared": True, "router:external": False,
                             "provider:network_type": "vxlan",
                             "availability_zone_hints": ["nova"]}}, persona="admin"),
    ),
    ("PUT", "/network/v2.0/networks/{id}"): (
        Example({"network": {"name": "fz-net2", "description": "x", "mtu": 1400}}),),
    ("DELETE", "/network/v2.0/networks/{id}"): (NO_BODY,),
    ("POST", "/network/v2.0/subnets"): (
        Example({"subnet": {"network_id": Ref("network"), "cidr": Unique("10.{a}.{b}.0/24"),
                            "ip_version": 4, "name": "fz-sub",
                            "gateway_ip": Unique("10.{a}.{b}.1"), "enable_dhcp": True,
                            "dns_nameservers": ["192.0.2.53"],
                            "allocation_pools": [{"start": Unique("10.{a}.{b}.10"),
                                                  "end": Unique("10.{a}.{b}.100")}],
                            "host_routes": [{"destination": "192.168.0.0/24",
                                             "nexthop": Unique("10.{a}.{b}.2")}]}}),
        Example({"subnet": {"network_id": Ref("network"), "cidr": Unique("fd00:{h}{l}::/64"),
                            "ip_version": 6, "ipv6_address_mode": "slaac",
                            "ipv6_ra_mode": "slaac"}}),
    ),
    ("PUT", "/network/v2.0/subnets/{id}"): (
        Example({"subnet": {"name": "fz-sub2", "dns_nameservers": ["192.0.2.54"],
                            "enable_dhcp": True, "gateway_ip": "10.77.0.1"}}),
        Example({"subnet": {"allocation_pools": [{"start": "10.77.0.20", "end": "10.77.0.240"}],
                            "host_routes": [{"destination": "192.168.9.0/24",
                                             "nexthop": "10.77.0.3"}]}}),
    ),
    ("DELETE", "/network/v2.0/subnets/{id}"): (NO_BODY,),
    ("POST", "/network/v2.0/ports"): (
        Example({"port": {"network_id": Ref("network"), "name": "fz-port"}}),
        Example({"port": {"network_id": Ref("network"), "name": "fz-port",
                          "admin_state_up": True, "fixed_ips": [PORT_FIXED_IP],
                          "mac_address": Unique("fa:16:3e:7f:{h}:{l}"),
                          "allowed_address_pairs": [{"ip_address": "10.77.0.250",
                                                     "mac_address": "fa:16:3e:00:00:01"}],
                          "security_groups": [Ref("security_group")],
                          "binding:vnic_type": "normal", "description": "d",
                          "port_security_enabled": True, "dns_name": "host",
                          "extra_dhcp_opts": [{"opt_name": "mtu", "opt_value": "1450"}]}}),
        Example({"port": {"network_id": Ref("network"), "device_id": Ref("server"),
                          "device_owner": "compute:nova", "binding:host_id": "compute1",
                          "binding:profile": {}}}, persona="admin"),
    ),
    ("PUT", "/network/v2.0/ports/{id}"): (
        Example({"port": {"name": "fz-port2", "fixed_ips": [PORT_FIXED_IP],
                          "security_groups": [Ref("security_group")]}}),
        Example({"port": {"allowed_address_pairs": [{"ip_address": "10.77.0.0/28"}],
                          "mac_address": Unique("fa:16:3e:7e:{h}:{l}"),
                          "admin_state_up": False, "port_security_enabled": True}}),
    ),
    ("DELETE", "/network/v2.0/ports/{id}"): (NO_BODY,),
    ("POST", "/network/v2.0/security-groups"): (
        Example({"security_group": {"name": "fz-sg", "description": "d", "stateful": True}}),),
    ("PUT", "/network/v2.0/security-groups/{id}"): (
        Example({"security_group": {"name": "fz-sg2", "description": "x"}}),),
    ("DELETE", "/network/v2.0/security-groups/{id}"): (NO_BODY,),
    ("POST", "/network/v2.0/security-group-rules"): (
        Example({"security_group_rule": {
            "security_group_id": Ref("security_group"), "direction": "ingress",
            "ethertype": "IPv4", "protocol": "tcp", "port_range_min": 80,
            "port_range_max": 443, "remote_ip_prefix": Unique("10.{a}.{b}.0/24"),
            "description": "web"}}),
        Example({"security_group_rule": {
            "security_group_id": Ref("security_group"), "direction": "egress",
            "ethertype": "IPv6", "protocol": "icmp", "remote_group_id": Ref("security_group")}}),
    ),
    ("DELETE", "/network/v2.0/security-group-rules/{id}"): (NO_BODY,),
    ("PUT", "/network/v2.0/quotas/{project_id}"): (
        Example({"quota": {"port": 600, "network": "20", "router": -1, "check_limit": True}},
                persona="admin"),
        Example({"quota": {"security_group": 5, "force": True}}, persona="admin"),
    ),
    ("DELETE", "/network/v2.0/quotas/{project_id}"): (ADMIN_NO_BODY,),
    ("POST", "/network/v2.0/routers"): (
        Example({"router": {"name": "fz-router", "admin_state_up": True, "description": "d"}}),
        Example({"router": {"name": "fz-edge", "external_gateway_info": {
            "network_id": Ref("external_network")}}}),
        Example({"router": {"name": "fz-edge2", "external_gateway_info": {
            "network_id": Ref("external_network"), "enable_snat": False,
            "external_fixed_ips": [{"ip_address": Unique("198.18.{a}.{b}")}]}}}, persona="admin"),
    ),
    ("PUT", "/network/v2.0/routers/{id}"): (
        Example({"router": {"name": "fz-router2", "admin_state_up": False}}),
        Example({"router": {"routes": [], "external_gateway_info": {}}}),
    ),
    ("DELETE", "/network/v2.0/routers/{id}"): (NO_BODY,),
    ("PUT", "/network/v2.0/routers/{id}/add_router_interface"): (
        Example({"subnet_id": Ref("free_subnet")}),),
    ("PUT", "/network/v2.0/routers/{id}/remove_router_interface"): (
        Example({"subnet_id": Ref("attached_subnet")}),),
    ("PUT", "/network/v2.0/routers/{id}/add_extraroutes"): (
        Example({"router": {"routes": []}}),),
    ("PUT", "/network/v2.0/routers/{id}/remove_extraroutes"): (
        Example({"router": {"routes": [{"destination": "192.168.3.0/24",
                                        "nexthop": "100.64.0.9"}]}}),),
    ("POST", "/network/v2.0/floatingips"): (
        Example({"floatingip": {"floating_network_id": Ref("external_network"),
                                "description": "d"}}),),
    ("PUT", "/network/v2.0/floatingips/{id}"): (
        Example({"floatingip": {"description": "x", "port_id": None}}),),
    ("DELETE", "/network/v2.0/floatingips/{id}"): (NO_BODY,),
    ("POST", "/network/v2.0/subnetpools"): (
        Example({"subnetpool": {"name": Unique("fz-pool-{n}"), "prefixes": [Unique("10.{o}.0.0/16")],
                                "default_prefixlen": 24}}),),
    ("PUT", "/network/v2.0/subnetpools/{id}"): (
        Example({"subnetpool": {"description": "x", "max_prefixlen": 28}}),),
    ("DELETE", "/network/v2.0/subnetpools/{id}"): (NO_BODY,),
    ("PUT", "/network/v2.0/agents/{id}"): (
        Example({"agent": {"admin_state_up": True, "description": "x"}}, persona="admin"),),
    ("DELETE", "/network/v2.0/agents/{id}"): (ADMIN_NO_BODY,),
}
# Tags of each taggable network resource (standard-attr-tag, tag-creation).
for _collection in ("networks", "subnets", "ports", "security-groups", "routers", "floatingips",
                    "subnetpools"):
    _tags = f"/network/v2.0/{_collection}/{{id}}/tags"
    NETWORK[("PUT", _tags)] = (Example({"tags": ["fz-a", "fz-b"]}),)
    NETWORK[("POST", _tags)] = (Example({"tags": ["fz-c"]}),)
    NETWORK[("DELETE", _tags)] = (NO_BODY,)
    NETWORK[("PUT", _tags + "/{tag}")] = (Example(params={"tag": "fz-tag"}, content_type=None),)
    NETWORK[("DELETE", _tags + "/{tag}")] = (NO_BODY,)
# Bulk creates (the same routes as one create: a second example each).
NETWORK[("POST", "/network/v2.0/networks")] += (
    Example({"networks": [{"name": "fz-bulk-1", "tags": ["b"]}, {"name": "fz-bulk-2"}]}),)
NETWORK[("POST", "/network/v2.0/ports")] += (
    Example({"ports": [{"network_id": Ref("network"), "name": "fz-bulk-port", "tags": ["b"]},
                       {"network_id": Ref("network"), "dns_name": "fz-host",
                        "port_security_enabled": False, "security_groups": []}]}),)

IMAGE: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", "/image/v2/images"): (
        Example({"name": "fz-image", "disk_format": "raw", "container_format": "bare",
                 "visibility": "private", "min_ram": 0, "min_disk": 0, "tags": ["a"],
                 "protected": False, "os_distro": "tiny", "hw_disk_bus": "virtio"}),),
    ("PATCH", "/image/v2/images/{image_id}"): (
        Example([{"op": "add", "path": "/color", "value": "blue"},
                 {"op": "replace", "path": "/name", "value": "fz-renamed"}], content_type=PATCH),
        Example([{"op": "replace", "path": "/min_ram", "value": 128},
                 {"op": "add", "path": "/tags", "value": ["x", "y"]},
                 {"op": "remove", "path": "/os_distro"}], content_type=PATCH),
    ),
    ("DELETE", "/image/v2/images/{image_id}"): (NO_BODY,),
    ("PUT", "/image/v2/images/{image_id}/file"): (
        Example(b"\x00fuzz-image-bytes" * 64, content_type=OCTETS),),
    ("PUT", "/image/v2/images/{image_id}/tags/{tag}"): (Example(params={"tag": "fz-tag"},
                                                               content_type=None),),
    ("DELETE", "/image/v2/images/{image_id}/tags/{tag}"): (NO_BODY,),
    ("POST", "/image/v2/images/{image_id}/members"): (Example({"member": Ref("project")}),),
    ("PUT", "/image/v2/images/{image_id}/members/{member}"): (
        Example({"status": "accepted"}, persona="other"),),
    ("DELETE", "/image/v2/images/{image_id}/members/{member}"): (NO_BODY,),
    ("POST", "/image/v2/images/{image_id}/actions/deactivate"): (Example(content_type=None),),
    ("POST", "/image/v2/images/{image_id}/actions/reactivate"): (Example(content_type=None),),
    ("PUT", "/image/v2/images/{image_id}/stage"): (Example(b"fuzz-staged" * 64,
                                                           content_type=OCTETS),),
    ("POST", "/image/v2/images/{image_id}/import"): (
        Example({"method": {"name": "glance-direct"}, "all_stores": True}),),
    ("POST", "/image/v2/tasks"): (
        Example({"type": "import", "input": {"import_from": "http://example.com/fz.qcow2",
                                             "import_from_format": "qcow2",
                                             "image_properties": {"disk_format": "qcow2"}}},
                persona="admin"),),
}

_NS = "/image/v2/metadefs/namespaces/{namespace}"
_PROPERTY = {"title": "Fuzz", "type": "string", "enum": ["a", "b"], "default": "a",
             "description": "d", "readonly": False}
METADEFS: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", "/image/v2/metadefs/namespaces"): (Example({
        "namespace": Unique("fz-ns-new-{n}"), "display_name": "Fuzz", "description": "d",
        "visibility": "public", "protected": False,
        "resource_type_associations": [{"name": "OS::Nova::Flavor", "prefix": "fz:"}],
        "properties": {"fz-p": _PROPERTY}, "objects": [{"name": "fz-o", "required": ["fz-p"],
                                                        "properties": {"fz-p": _PROPERTY}}],
        "tags": [{"name": "fz-t"}]}, persona="admin"),),
    ("PUT", _NS): (Example({"namespace": "fz-seed-ns", "visibility": "public",
                            "description": "changed"}, persona="admin"),),
    ("DELETE", _NS): (ADMIN_NO_BODY,),
    ("POST", f"{_NS}/objects"): (Example({"name": Unique("fz-object-new-{n}"), "description": "d",
                                          "properties": {"fz-p": _PROPERTY}}, persona="admin"),),
    ("PUT", f"{_NS}/objects/{{name}}"): (Example({"name": "seed-object", "description": "d2"},
                                                 persona="admin"),),
    ("DELETE", f"{_NS}/objects"): (ADMIN_NO_BODY,),
    ("DELETE", f"{_NS}/objects/{{name}}"): (ADMIN_NO_BODY,),
    ("POST", f"{_NS}/properties"): (Example({"name": Unique("fz-prop-new-{n}"), **_PROPERTY},
                                            persona="admin"),),
    ("PUT", f"{_NS}/properties/{{name}}"): (Example({"name": "seed-prop", **_PROPERTY},
                                                    persona="admin"),),
    ("DELETE", f"{_NS}/properties"): (ADMIN_NO_BODY,),
    ("DELETE", f"{_NS}/properties/{{name}}"): (ADMIN_NO_BODY,),
    ("POST", f"{_NS}/tags"): (Example({"tags": [{"name": Unique("fz-tag-new-{n}")}]},
                                      headers={"X-Openstack-Append": "True"}, persona="admin"),),
    ("POST", f"{_NS}/tags/{{name}}"): (Example(params={"name": "fz-tag-made"}, content_type=None,
                                               persona="admin"),),
    ("PUT", f"{_NS}/tags/{{name}}"): (Example({"name": "seed-tag"}, persona="admin"),),
    ("DELETE", f"{_NS}/tags"): (ADMIN_NO_BODY,),
    ("DELETE", f"{_NS}/tags/{{name}}"): (ADMIN_NO_BODY,),
    ("POST", f"{_NS}/resource_types"): (Example({"name": Unique("fz-rt-{n}"), "prefix": "fz_",
                                                 "properties_target": "image"}, persona="admin"),),
    ("DELETE", f"{_NS}/resource_types/{{name}}"): (ADMIN_NO_BODY,),
}

IDENTITY: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", "/identity/v3/auth/tokens"): (Example(PASSWORD_AUTH), Example(TOKEN_AUTH)),
    ("DELETE", "/identity/v3/auth/tokens"): (
        Example(content_type=None, headers={"X-Subject-Token": Ref("fresh_token")}),),
    ("POST", "/identity/v3/projects"): (
        Example({"project": {"name": Unique("fz-project-{n}"), "description": "d",
                             "enabled": True, "domain_id": "default"}}, persona="admin"),),
    ("PATCH", "/identity/v3/projects/{id}"): (
        Example({"project": {"description": "changed", "enabled": True}}, persona="admin"),),
    ("DELETE", "/identity/v3/projects/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/users"): (
        Example({"user": {"name": Unique("fz-user-{n}"), "password": "pw", "enabled": True,
                          "domain_id": "default", "default_project_id": Ref("project"),
                          "email": "fz@example.org", "description": "d"}}, persona="admin"),),
    ("PATCH", "/identity/v3/users/{id}"): (
        Example({"user": {"email": "fz2@example.org", "enabled": True, "password": "pw2"}},
                persona="admin"),),
    ("DELETE", "/identity/v3/users/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/roles"): (
        Example({"role": {"name": Unique("fz-role-{n}"), "description": "d"}}, persona="admin"),),
    ("PATCH", "/identity/v3/roles/{id}"): (
        Example({"role": {"name": Unique("fz-role-{n}")}}, persona="admin"),),
    ("DELETE", "/identity/v3/roles/{id}"): (ADMIN_NO_BODY,),
    ("PUT", "/identity/v3/{target}/{tid}/users/{uid}/roles/{rid}"): (ADMIN_NO_BODY,),
    ("DELETE", "/identity/v3/{target}/{tid}/users/{uid}/roles/{rid}"): (ADMIN_NO_BODY,),
    **{(method, f"/identity/v3/{where}/{who}/roles/{{rid}}"): (ADMIN_NO_BODY,)
       for method in ("PUT", "DELETE")
       for where, who in (("{target}/{tid}", "groups/{gid}"), ("system", "users/{uid}"),
                          ("system", "groups/{gid}"))},
    ("POST", "/identity/v3/domains"): (
        Example({"domain": {"name": Unique("fz-domain-{n}"), "description": "d",
                            "enabled": True}}, persona="admin"),),
    ("PATCH", "/identity/v3/domains/{id}"): (
        Example({"domain": {"description": "changed"}}, persona="admin"),),
    ("DELETE", "/identity/v3/domains/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/groups"): (
        Example({"group": {"name": Unique("fz-group-{n}"), "description": "d",
                           "domain_id": "default"}}, persona="admin"),),
    ("PATCH", "/identity/v3/groups/{id}"): (
        Example({"group": {"description": "changed"}}, persona="admin"),),
    ("DELETE", "/identity/v3/groups/{id}"): (ADMIN_NO_BODY,),
    ("PUT", "/identity/v3/groups/{id}/users/{uid}"): (ADMIN_NO_BODY,),
    ("DELETE", "/identity/v3/groups/{id}/users/{uid}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/regions"): (
        Example({"region": {"description": "d", "parent_region_id": Ref("region")}},
                persona="admin"),),
    ("PUT", "/identity/v3/regions/{id}"): (
        Example({"region": {"description": "d"}}, persona="admin"),),
    ("PATCH", "/identity/v3/regions/{id}"): (
        Example({"region": {"description": "changed"}}, persona="admin"),),
    ("DELETE", "/identity/v3/regions/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/services"): (
        Example({"service": {"type": "fz-type", "name": "fz", "description": "d",
                             "enabled": True}}, persona="admin"),),
    ("PATCH", "/identity/v3/services/{id}"): (
        Example({"service": {"description": "changed"}}, persona="admin"),),
    ("DELETE", "/identity/v3/services/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/endpoints"): (
        Example({"endpoint": {"service_id": Ref("catalog_service"), "interface": "public",
                              "url": "http://fz.example", "region_id": Ref("region"),
                              "enabled": True}}, persona="admin"),),
    ("PATCH", "/identity/v3/endpoints/{id}"): (
        Example({"endpoint": {"url": "http://fz2.example"}}, persona="admin"),),
    ("DELETE", "/identity/v3/endpoints/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/policies"): (
        Example({"policy": {"type": "application/json", "blob": "{}"}}, persona="admin"),),
    ("PATCH", "/identity/v3/policies/{id}"): (
        Example({"policy": {"blob": "{\"a\": 1}"}}, persona="admin"),),
    ("DELETE", "/identity/v3/policies/{id}"): (ADMIN_NO_BODY,),
    ("POST", "/identity/v3/credentials"): (
        Example({"credential": {"user_id": Ref("demo_user"), "type": "totp", "blob": "fz"}}),),
    ("PATCH", "/identity/v3/credentials/{id}"): (Example({"credential": {"blob": "fz2"}}),),
    ("DELETE", "/identity/v3/credentials/{id}"): (NO_BODY,),
    ("POST", "/identity/v3/users/{id}/application_credentials"): (
        Example({"application_credential": {"name": Unique("fz-app-{n}"), "description": "d",
                                            "roles": [{"name": "member"}]}}),),
    ("DELETE", "/identity/v3/users/{id}/application_credentials/{cid}"): (NO_BODY,),
    ("POST", "/identity/v3/users/{id}/password"): (
        Example({"user": {"original_password": "fz", "password": "fz-new"}}),),
    ("PUT", "/identity/v3/projects/{id}/tags"): (
        Example({"tags": ["fz-a", "fz-b"]}, persona="admin"),),
    ("DELETE", "/identity/v3/projects/{id}/tags"): (ADMIN_NO_BODY,),
    ("PUT", "/identity/v3/projects/{id}/tags/{tag}"): (
        Example(params={"tag": "fz-tag"}, content_type=None, persona="admin"),),
    ("DELETE", "/identity/v3/projects/{id}/tags/{tag}"): (ADMIN_NO_BODY,),
    ("PUT", "/identity/v3/roles/{prior}/implies/{implied}"): (ADMIN_NO_BODY,),
    ("DELETE", "/identity/v3/roles/{prior}/implies/{implied}"): (ADMIN_NO_BODY,),
}

def vol(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"volume {version}"}


_P = "/volume/v3/{project_id}"
_V, _S = f"{_P}/volumes/{{volume_id}}", f"{_P}/snapshots/{{snapshot_id}}"
_T, _A = f"{_P}/types/{{type_id}}", f"{_P}/attachments/{{attachment_id}}"
_Q = f"{_P}/os-quota-sets/{{target_project_id}}"
CONNECTOR = {"host": "fz-host", "ip": "127.0.0.1", "initiator": "iqn.fz", "multipath": False}
ADMIN_VOLUME_ACTION = Example({"os-reset_status": {"status": "available"}}, persona="admin")

VOLUME: dict[tuple[str, str], tuple[Example, ...]] = {
    ("POST", f"{_P}/volumes"): (
        Example({"volume": {"size": 1, "name": "fz-vol", "description": "d",
                            "metadata": {"k": "v"}, "volume_type": "__DEFAULT__"}}),
        Example({"volume": {"size": 1, "imageRef": Ref("boot_image")}}),
        Example({"volume": {"snapshot_id": Ref("volume_snapshot")}}),
        Example({"volume": {"source_volid": Ref("volume"), "size": 2}}),
    ),
    ("PUT", _V): (Example({"volume": {"name": "fz-renamed", "description": "x"}}),),
    ("DELETE", _V): (NO_BODY,),
    ("POST", f"{_V}/action"): (
        Example({"os-extend": {"new_size": 2}}),
        Example({"os-set_bootable": {"bootable": True}}),
        Example({"os-update_readonly_flag": {"readonly": False}}),
        Example({"os-reserve": None}),
        Example({"os-initialize_connection": {"connector": CONNECTOR}}),
        Example({"os-attach": {"instance_uuid": Ref("server"), "mountpoint": "/dev/vdb"}}),
        Example({"os-detach": {}}),
        Example({"os-retype": {"new_type": Ref("plain_volume_type"),
                                "migration_policy": "never"}}),
        ADMIN_VOLUME_ACTION,
    ),
    ("POST", f"{_V}/metadata"): (Example({"metadata": {"k2": "v2"}}),),
    ("PUT", f"{_V}/metadata"): (Example({"metadata": {"k": "v"}}),),
    ("PUT", f"{_V}/metadata/{{key}}"): (Example({"meta": {"k": "v3"}}, params={"key": "k"}),),
    ("DELETE", f"{_V}/metadata/{{key}}"): (NO_BODY,),
    ("POST", f"{_T}/encryption"): (
        Example({"encryption": {"provider": "luks", "control_location": "front-end",
                                "cipher": "aes-xts-plain64", "key_size": 256}}, persona="admin"),),
    ("PUT", f"{_T}/encryption/{{encryption_id}}"): (
        Example({"encryption": {"key_size": "128", "control_location": "back-end"}},
                persona="admin"),),
    ("DELETE", f"{_T}/encryption/{{encryption_id}}"): (ADMIN_NO_BODY,),
    ("POST", f"{_P}/snapshots"): (
        Example({"snapshot": {"volume_id": Ref("volume"), "name": "fz-snap", "force": True,
                              "metadata": {"k": "v"}}}),),
    ("PUT", _S): (Example({"snapshot": {"name": "fz-snap2"}}),),
    ("DELETE", _S): (NO_BODY,),
    ("POST", f"{_S}/action"): (
        Example({"os-reset_status": {"status": "available"}}, persona="admin"),),
    ("POST", f"{_S}/metadata"): (Example({"metadata": {"k2": "v2"}}),),
    ("PUT", f"{_S}/metadata"): (Example({"metadata": {"k": "v"}}),),
    ("PUT", f"{_S}/metadata/{{key}}"): (Example({"meta": {"k": "v3"}}, params={"key": "k"}),),
    ("DELETE", f"{_S}/metadata/{{key}}"): (NO_BODY,),
    ("POST", f"{_P}/types"): (
        Example({"volume_type": {"name": Unique("fz-type-{n}"), "description": "d",
                                 "os-volume-type-access:is_public": True,
                                 "extra_specs": {"k": "v"}}}, persona="admin"),),
    ("PUT", _T): (Example({"volume_type": {"description": "changed"}}, persona="admin"),),
    ("DELETE", _T): (ADMIN_NO_BODY,),
    ("POST", f"{_T}/extra_specs"): (Example({"extra_specs": {"k": "v2"}}, persona="admin"),),
    ("PUT", f"{_T}/extra_specs/{{key}}"): (
        Example({"k": "v3"}, params={"key": "k"}, persona="admin"),),
    ("DELETE", f"{_T}/extra_specs/{{key}}"): (ADMIN_NO_BODY,),
    ("POST", f"{_T}/action"): (
        Example({"addProjectAccess": {"project": Ref("project")}}, persona="admin",
                params={"type_id": "fz-private-type"}),),
    ("POST", f"{_P}/attachments"): (
        Example({"attachment": {"volume_uuid": Ref("fresh_volume"), "instance_uuid": Ref("server"),
                                "connector": CONNECTOR, "mode": "rw"}}, headers=vol("3.44")),),
    ("PUT", _A): (Example({"attachment": {"connector": CONNECTOR}}, headers=vol("3.44")),),
    ("DELETE", _A): (Example(content_type=None, headers=vol("3.44")),),
    ("POST", f"{_A}/action"): (Example({"os-complete": None}, headers=vol("3.44")),),
    ("PUT", _Q): (Example({"quota_set": {"volumes": 20, "gigabytes": 1000}}, persona="admin"),),
    ("DELETE", _Q): (ADMIN_NO_BODY,),
    ("DELETE", f"{_P}/messages/{{message_id}}"): (Example(content_type=None, headers=vol("3.3")),),
    **{key: examples for coll, headers in (("os-volume-transfer", {}),
                                           ("volume-transfers", vol("3.57")))
       for key, examples in {
           ("POST", f"{_P}/{coll}"): (Example({"transfer": {
               "volume_id": Ref("fresh_volume"), "name": "fz-transfer"}}, headers=headers),),
           ("DELETE", f"{_P}/{coll}/{{transfer_id}}"): (
               Example(content_type=None, headers=headers),),
           ("POST", f"{_P}/{coll}/{{transfer_id}}/accept"): (Example(
               {"accept": {"auth_key": "0123456789abcdef"}}, headers=headers),),
       }.items()},
    ("POST", f"{_P}/group_types"): (Example({"group_type": {
        "name": Unique("fz-gtype-{n}"), "description": "d", "is_public": True,
        "group_specs": {"k": "v"}}}, persona="admin", headers=vol("3.11")),),
    ("PUT", f"{_P}/group_types/{{group_type_id}}"): (Example(
        {"group_type": {"description": "changed"}}, persona="admin", headers=vol("3.11")),),
    ("DELETE", f"{_P}/group_types/{{group_type_id}}"): (Example(
        content_type=None, persona="admin", headers=vol("3.11")),),
    ("POST", f"{_P}/group_types/{{group_type_id}}/group_specs"): (Example(
        {"group_specs": {"k": "v2"}}, persona="admin", headers=vol("3.11")),),
    ("PUT", f"{_P}/group_types/{{group_type_id}}/group_specs/{{key}}"): (Example(
        {"k": "v3"}, params={"key": "k"}, persona="admin", headers=vol("3.11")),),
    ("DELETE", f"{_P}/group_types/{{group_type_id}}/group_specs/{{key}}"): (Example(
        content_type=None, persona="admin", headers=vol("3.11")),),
    ("POST", f"{_P}/qos-specs"): (Example({"qos_specs": {
        "name": Unique("fz-qos-{n}"), "consumer": "back-end", "iops": "10"}}, persona="admin"),),
    ("PUT", f"{_P}/qos-specs/{{qos_id}}"): (Example({"qos_specs": {"iops": "20"}},
                                                   persona="admin"),),
    ("DELETE", f"{_P}/qos-specs/{{qos_id}}"): (ADMIN_NO_BODY,),
    ("PUT", f"{_P}/qos-specs/{{qos_id}}/delete_keys"): (Example({"keys": ["iops"]},
                                                               persona="admin"),),
    ("PUT", f"{_P}/os-services/{{action}}"): (
        Example({"host": "cirrus@file", "binary": "cinder-volume", "disabled_reason": "fz"},
                persona="admin"),
        Example({"host": "cirrus@file", "binary": "cinder-volume"}, params={"action": "enable"},
                persona="admin"),),
    ("PUT", f"{_P}/os-quota-class-sets/{{class_name}}"): (
        Example({"quota_class_set": {"volumes": 10000, "snapshots": 10000}}, persona="admin"),),
}

BODIES: dict[tuple[str, str], tuple[Example, ...]] = {**COMPUTE, **NETWORK, **IMAGE, **METADEFS,
                                                       **IDENTITY,
                                                       **VOLUME}
