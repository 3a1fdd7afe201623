"""Network segments: what joins a network's bridges across hosts (Neutron's
ml2 type drivers ``local``, ``flat``, ``vlan`` and ``vxlan``).

A network has one segment, stored on its row (``network_type``,
``physical_network``, ``segmentation_id``). Projects' networks get the
deployment's tenant type (a VNI from ``vni_ranges`` for ``vxlan``); admins may
name a segment (the ``provider`` extension). A unique index over the three
columns is the guard against two networks on one segment: a candidate that
loses a race is the next one tried. A flat network is stored with
segmentation id 0 (the untagged segment of its physical network) so the same
index allows one per physical network; the API shows it as null.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

import sqlalchemy as sa

from cirrus.network import exception as exc
from cirrus.network.models import networks

T = TypeVar("T")
Range = tuple[int, int]

VLAN_MAX = 4094
VNI_MAX = 2 ** 24 - 1
FLAT_ID = 0  # the stored segmentation id of a flat network
ALLOCATION_ATTEMPTS = 64


class NetworkType(str, enum.Enum):
    LOCAL = "local"  # a bridge on each host, not joined to the others
    FLAT = "flat"  # the physical network's interface itself
    VLAN = "vlan"  # a VLAN on the physical network's interface
    VXLAN = "vxlan"  # a VXLAN tunnel mesh between the hosts' local_ip


# Bytes the encapsulation takes from the underlay's MTU: outer IPv4 (20),
# UDP (8), VXLAN (8) headers and the inner Ethernet header (14).
OVERHEAD = {NetworkType.VXLAN: 50}
PROVIDER_KEYS = ("provider:network_type", "provider:physical_network",
                 "provider:segmentation_id")


@dataclass(frozen=True)
class Segment:
    network_type: NetworkType
    physical_network: str = ""
    segmentation_id: int | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Segment":
        """The segment stored on a network row."""
        return cls(NetworkType(row.get("network_type") or "local"),
                   row.get("physical_network") or "", row.get("segmentation_id"))

    def view(self) -> dict[str, Any]:
        """The ``provider:*`` attributes an admin sees."""
        shown = None if self.network_type in (NetworkType.LOCAL, NetworkType.FLAT) \
            else self.segmentation_id
        return {"provider:network_type": self.network_type.value,
                "provider:physical_network": self.physical_network or None,
                "provider:segmentation_id": shown}


@dataclass(frozen=True)
class SegmentConfig:
    """The deployment's segmentation settings, parsed once."""

    tenant_type: NetworkType = NetworkType.LOCAL
    vni_ranges: tuple[Range, ...] = ((1, 1000),)
    vlan_ranges: Mapping[str, tuple[Range, ...]] = field(default_factory=dict)
    flat_networks: frozenset[str] = frozenset()
    physnet_mtu: int = 1500

    @classmethod
    def from_settings(cls, settings: Any) -> "SegmentConfig":
        """Raises ValueError on a malformed setting (the service refuses to start)."""
        tenant = (settings.tenant_network_types or "").split(",")[0].strip()
        if not tenant:
            tenant = "vxlan" if settings.local_ip else "local"
        if tenant not in (NetworkType.LOCAL, NetworkType.VXLAN, NetworkType.VLAN):
            raise ValueError(f"tenant_network_types: {tenant!r} is not local, vlan or vxlan")
        flats = frozenset(p.strip() for p in settings.flat_networks.split(",") if p.strip())
        config = cls(NetworkType(tenant), parse_ranges(settings.vni_ranges, VNI_MAX),
                     parse_vlan_ranges(settings.network_vlan_ranges), flats,
                     int(settings.global_physnet_mtu))
        if not config.ranges_for(config.tenant_type, "")[1] and tenant != NetworkType.LOCAL:
            raise ValueError(f"tenant_network_types {tenant}: no range to allocate from "
                             f"(vni_ranges, network_vlan_ranges)")
        return config

    def max_mtu(self, segment: Segment) -> int:
        return self.physnet_mtu - OVERHEAD.get(segment.network_type, 0)

    def ranges_for(self, kind: NetworkType, physnet: str) -> tuple[str, tuple[Range, ...]]:
        """(physical network, ranges) a ``kind`` segment is allocated from:
        the VNI ranges, or the VLAN ranges of ``physnet`` (none named: the
        first physical network with a range)."""
        if kind == NetworkType.VXLAN:
            return "", self.vni_ranges
        if physnet:
            return physnet, self.vlan_ranges.get(physnet, ())
        for name, ranges in self.vlan_ranges.items():
            if ranges:
                return name, ranges
        return "", ()


def parse_ranges(text: str, maximum: int) -> tuple[Range, ...]:
    """``"MIN:MAX,MIN:MAX"`` → ranges; raises ValueError when malformed."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, sep, high = part.partition(":")
        if not sep or not low.strip().isdigit() or not high.strip().isdigit():
            raise ValueError(f"range {part!r} is not MIN:MAX")
        first, last = int(low), int(high)
        if not 1 <= first <= last <= maximum:
            raise ValueError(f"range {part!r} is not within 1:{maximum}")
        out.append((first, last))
    return tuple(out)


def parse_vlan_ranges(text: str) -> dict[str, tuple[Range, ...]]:
    """``"physnet1:100:199,physnet2"`` → {physnet: ranges} (a bare name: a
    physical network for provider networks only)."""
    out: dict[str, tuple[Range, ...]] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, span = part.partition(":")
        if not name:
            raise ValueError(f"network_vlan_ranges: {part!r} names no physical network")
        out[name] = out.get(name, ()) + (parse_ranges(span, VLAN_MAX) if span else ())
    return out


def first_free(ranges: tuple[Range, ...], used: set[int]) -> int | None:
    """The lowest id of ``ranges`` not in ``used``, or None when all are."""
    for low, high in ranges:
        for candidate in range(low, high + 1):
            if candidate not in used:
                return candidate
    return None


def _prohibited(key: str, kind: str) -> exc.InvalidInput:
    return exc.InvalidInput(reason=f"{key} prohibited for {kind} provider network")


def requested_segment(config: SegmentConfig, values: Mapping[str, Any]) -> Segment | None:
    """The segment named by ``provider:*`` attributes, checked against the
    settings (400 naming the attribute); None when none is given."""
    kind = values.get("provider:network_type")
    physnet = values.get("provider:physical_network")
    seg_id = values.get("provider:segmentation_id")
    if kind is None:
        if physnet is not None or seg_id is not None:
            raise exc.InvalidInput(reason="provider:network_type required")
        return None
    if kind not in {t.value for t in NetworkType}:
        raise exc.InvalidInput(reason=f"network_type value '{kind}' not supported")
    network_type = NetworkType(kind)
    label = {NetworkType.VLAN: "VLAN", NetworkType.VXLAN: "VXLAN"}.get(network_type, kind)
    if network_type in (NetworkType.LOCAL, NetworkType.VXLAN) and physnet is not None:
        raise _prohibited("provider:physical_network", label)
    if network_type in (NetworkType.LOCAL, NetworkType.FLAT) and seg_id is not None:
        raise _prohibited("provider:segmentation_id", label)
    if network_type == NetworkType.FLAT:
        if physnet is None:
            raise exc.InvalidInput(reason="provider:physical_network required for flat provider network")
        if physnet not in config.flat_networks and "*" not in config.flat_networks:
            raise exc.InvalidInput(reason=f"physical_network '{physnet}' unknown for flat provider network")
        return Segment(network_type, physnet, FLAT_ID)
    if network_type == NetworkType.VLAN:
        if physnet is None:
            raise exc.InvalidInput(reason="provider:physical_network required for VLAN provider network")
        if physnet not in config.vlan_ranges:
            raise exc.InvalidInput(reason=f"physical_network '{physnet}' unknown for VLAN provider network")
        if seg_id is not None and not 1 <= seg_id <= VLAN_MAX:
            raise exc.InvalidInput(reason=f"provider:segmentation_id out of range (1 through {VLAN_MAX})")
    if network_type == NetworkType.VXLAN and seg_id is not None and not 1 <= seg_id <= VNI_MAX:
        raise exc.InvalidInput(reason=f"provider:segmentation_id out of range (1 through {VNI_MAX})")
    return Segment(network_type, physnet or "", seg_id)


def _in_use(segment: Segment) -> exc.CirrusException:
    if segment.network_type == NetworkType.VLAN:
        return exc.VlanIdInUse(vlan_id=segment.segmentation_id,
                               physical_network=segment.physical_network)
    if segment.network_type == NetworkType.FLAT:
        return exc.FlatNetworkInUse(physical_network=segment.physical_network)
    return exc.TunnelIdInUse(tunnel_id=segment.segmentation_id)


def _used_ids(conn: sa.Connection, network_type: NetworkType, physnet: str) -> set[int]:
    return {r.segmentation_id for r in conn.execute(
        sa.select(networks.c.segmentation_id).where(
            networks.c.network_type == network_type.value,
            networks.c.physical_network == physnet,
            networks.c.segmentation_id.is_not(None)))}


def allocate(conn: sa.Connection, config: SegmentConfig, requested: Segment | None,
             insert: Callable[[Segment], T]) -> T:
    """Run ``insert(segment)`` (the network row's insert) with the requested
    segment, or the tenant type's first free one, in a savepoint each try.

    Raises VlanIdInUse / TunnelIdInUse / FlatNetworkInUse (409) for a taken
    requested segment, NoNetworkAvailable (503) when the ranges are exhausted.
    """
    if requested is not None and (requested.segmentation_id is not None
                                  or requested.network_type == NetworkType.LOCAL):
        try:
            with conn.begin_nested():
                return insert(requested)
        except sa.exc.IntegrityError:
            raise _in_use(requested) from None
    kind = requested.network_type if requested is not None else config.tenant_type
    if kind == NetworkType.LOCAL:
        return insert(Segment(kind))
    physnet, ranges = config.ranges_for(kind, requested.physical_network if requested else "")
    used = _used_ids(conn, kind, physnet)
    for _ in range(ALLOCATION_ATTEMPTS):
        candidate = first_free(ranges, used)
        if candidate is None:
            break
        try:
            with conn.begin_nested():
                return insert(Segment(kind, physnet, candidate))
        except sa.exc.IntegrityError:
            # Taken by a concurrent creation: skip it and whatever else was
            # committed meanwhile (a burst of creations would otherwise walk
            # the range one loss at a time).
            used |= {candidate} | _used_ids(conn, kind, physnet)
    raise exc.NoNetworkAvailable()


def check_mtu(config: SegmentConfig, segment: Segment, mtu: int) -> None:
    """400 when ``mtu`` does not fit the segment's underlay."""
    limit = config.max_mtu(segment)
    if mtu > limit:
        raise exc.InvalidInput(reason=f"Requested MTU is too big, maximum is {limit}")
