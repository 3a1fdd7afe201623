"""Settings: one TOML file, then ``CIRRUS_*`` environment variables, then flags.

A :class:`Settings` object is built once by the CLI (or a test) and passed down;
nothing reads configuration from a global.
"""
from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

DEFAULT_PORT = 8774
ENV_PREFIX = "CIRRUS_"


def default_state_dir() -> Path:
    """The per-user data directory (``$XDG_DATA_HOME/cirrus``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "cirrus"


@dataclass
class Settings:
    """Every tunable of a cirrus deployment. See docs/configuration.md."""

    state_dir: Path = field(default_factory=default_state_dir)
    bind: str = f"127.0.0.1:{DEFAULT_PORT}"
    # The URL clients are told to use (catalog, version documents); defaults to bind.
    public_url: str = ""
    database_url: str = ""  # default: sqlite file in state_dir
    # Check that each write unit declared one statement sends one write
    # (cirrus/db/onestatement.py): for tests, it wraps every such unit.
    db_check_units: bool = False
    transport_url: str = "inprocess://"
    computes: int = 1
    # This process's compute host name (``cirrus compute --host``); when empty,
    # ``cirrus up`` simulates ``computes`` hosts named compute1…computeN.
    compute_host: str = ""
    compute_driver: str = "fake"
    # Host networking: "noop" (fake hosts) or "linuxbridge" (real bridges,
    # dnsmasq, nftables). Empty: linuxbridge with the libvirt driver, else noop.
    network_backend: str = ""
    # The network namespace where this host's bridges, taps, dnsmasq and
    # libvirtd live; empty = the process's own.
    host_netns: str = ""
    region: str = "RegionOne"
    # The first start of a state dir makes a default image and gives the demo
    # project a network (cirrus/first_run.py); each once. ``cirrus up --no-defaults``.
    bootstrap_defaults: bool = True
    # Where the tiny guest is looked for as that image (empty: ~/.cache/cirrus/tiny,
    # where ``cirrus image build-tiny`` builds it).
    tiny_guest_dir: str = ""
    log_level: str = "INFO"
    # "text" (the default) or "json": one JSON object per line with the request
    # id, the global request id, the project and the instance (cirrus/log.py).
    log_format: str = "text"
    # Where this process serves its Prometheus metrics (GET /metrics), HOST:PORT
    # or PORT (on 127.0.0.1); empty or 0: none. Apart from the public API: see
    # docs/security.md, "Metrics". ``cirrus up``'s API workers take the next ports.
    metrics_listen: str = ""

    # identity
    token_expiration: int = 3600
    admin_password: str = "admin"
    demo_password: str = "demo"
    # log2 of the scrypt cost of new password hashes (Keystone's
    # password_hash_rounds). Only the tests lower it, to log their personas in
    # quickly; a deployment keeps 14 or raises it.
    password_hash_rounds: int = 14

    # api
    # ``cirrus up``: processes serving the API beside the engine's (0: one process for
    # all; -1: one on Linux with two cores or more, else 0)
    api_workers: int = -1
    max_body_bytes: int = 1 << 20
    max_image_bytes: int = 16 << 30

    # compute
    max_concurrent_builds: int = 10
    # creates wait while this many instances wait to build (0: no limit), at most this long
    build_backlog_limit: int = 50
    build_backlog_wait: float = 10.0
    # servers one POST /servers may create (min_count above: 400; max_count cut to it)
    max_instances_per_request: int = 1000
    network_allocate_retries: int = 0
    vif_plugging_timeout: float = 300.0
    vif_plugging_is_fatal: bool = True
    default_access_ip_network_name: str = ""
    # volumes (issue 20): how long a build waits for a boot volume to be made
    # (attempts × interval, Nova's block_device_allocate_retries), and whether
    # a volume may attach to a server in another availability zone.
    block_device_allocate_retries: int = 60
    block_device_allocate_retries_interval: float = 3.0
    cross_az_attach: bool = True
    default_availability_zone: str = "nova"
    instance_build_timeout: float = 600.0
    sync_power_state_interval: float = 600.0
    heal_instance_info_cache_interval: float = 60.0
    fake_host_vcpus: int = 16
    fake_host_memory_mb: int = 32768
    fake_host_disk_gb: int = 1024
    fake_spawn_delay: float = 0.0
    # Seconds the fake driver takes to copy a guest's disk for a snapshot, as a
    # real hypervisor does (0: at once).
    fake_snapshot_delay: float = 0.0
    # Seconds a deleted server stays SOFT_DELETED (restorable) before its host
    # reclaims it; 0: DELETE deletes at once (Nova's reclaim_instance_interval).
    reclaim_instance_interval: float = 0.0
    # Whether rescue, rebuild (and create) answers carry the admin password
    # (Nova's [api]enable_instance_password).
    enable_instance_password: bool = True

    # libvirt driver
    libvirt_uri: str = "qemu:///system"
    # "kvm", "qemu" (TCG) or "auto": kvm when a probe guest runs under it.
    libvirt_virt_type: str = "auto"
    # Guest disks, config drives and console logs; empty: <state_dir>/instances.
    instances_path: str = ""
    # Seconds a guest gets to honour an ACPI power-off before it is destroyed.
    shutdown_timeout: float = 60.0
    # Give every guest a config drive (else one only when asked; the metadata
    # service serves the same files to guests without one).
    force_config_drive: bool = True
    # Shelved servers: offloaded at once (0), never (-1) or by a periodic task
    # after this many seconds (Nova's [DEFAULT]shelved_offload_time).
    shelved_offload_time: int = 0

    # The image service as compute hosts reach it (Nova's [glance] options):
    # identity URL (empty: public_url + /identity), service credentials
    # (password empty: admin_password), image endpoint (empty: the catalog's).
    glance_auth_url: str = ""
    glance_username: str = "admin"
    glance_password: str = ""
    glance_project_name: str = "admin"
    glance_endpoint_override: str = ""
    # The per-host image cache (Nova's [image_cache]): seconds between passes
    # (0: every 60 s, -1: never), whether unused bases are removed, and how
    # long after its last use a base may go.
    image_cache_manager_interval: float = 2400.0
    remove_unused_base_images: bool = True
    remove_unused_original_minimum_age_seconds: float = 86400.0

    # serial consoles (Nova's [serial_console] and [consoleauth])
    serial_console_enabled: bool = True
    # host:port of the websocket proxy the API process runs; empty: the API's
    # host and a free port (so clouds side by side never collide).
    serialproxy_bind: str = ""
    # What clients are told (ws://…/); empty: from where the proxy listens.
    serial_console_base_url: str = ""
    console_token_ttl: int = 600

    # moves (resize, migrate, live migration, evacuation)
    # A resize may stay on the instance's host (Nova's default: False).
    allow_resize_to_same_host: bool = False
    # Seconds after which a resize waiting for a confirm is confirmed (0: never).
    resize_confirm_window: float = 0.0
    # libvirt: where a live migration goes; %s is the destination host (Nova's
    # live_migration_uri; empty: qemu+<live_migration_scheme>://%s/system).
    live_migration_uri: str = ""
    live_migration_scheme: str = "tcp"
    # Send the guest's memory through libvirtd's own connection (Nova's
    # live_migration_tunnelled): needed between network namespaces with no route.
    live_migration_tunnelled: bool = False
    # libvirt: this host's address for incoming live migrations (Nova's
    # live_migration_inbound_addr): the source's libvirtd and QEMU connect
    # there instead of to the host name; also the host_ip it reports.
    live_migration_inbound_addr: str = ""

    # scheduler
    max_attempts: int = 3
    cpu_allocation_ratio: float = 16.0
    ram_allocation_ratio: float = 1.5
    disk_allocation_ratio: float = 1.0
    ram_weight_multiplier: float = 1.0
    cpu_weight_multiplier: float = 1.0
    disk_weight_multiplier: float = 1.0
    # Nova's IoOpsWeigher multiplier (Nova's default -1.0: fewer builds in
    # progress win). 0 here: the host index has no num_io_ops dimension yet,
    # so a non-zero value makes every decision a full scan. See
    # docs/configuration.md.
    io_ops_weight_multiplier: float = 0.0
    # Nova's IoOpsFilter limit (opt-in filter): hosts with this many builds
    # in progress or more are filtered out.
    max_io_ops_per_host: int = 8
    host_subset_size: int = 1
    scheduler_cache_seconds: float = 1.0
    # Comma-separated filter names (Nova's enabled_filters); empty: the default
    # set (every filter but the aggregate ones). See docs/configuration.md.
    enabled_filters: str = ""

    # service frame
    # SIGTERM: new builds are refused (503) at once, those in flight get this
    # many seconds to finish, then the rest go to ERROR and the services stop.
    shutdown_grace_period: float = 30.0
    report_interval: float = 10.0
    service_down_time: float = 60.0

    # quotas (per project defaults)
    quota_instances: int = 10
    quota_cores: int = 20
    quota_ram: int = 51200
    quota_key_pairs: int = 100
    quota_server_groups: int = 10
    quota_server_group_members: int = 10
    quota_networks: int = 100
    quota_subnets: int = 100
    quota_ports: int = 500
    quota_security_groups: int = 10
    quota_security_group_rules: int = 100

    # block storage (Cinder's options; docs/volumes.md)
    volume_backend: str = "file"     # "file": raw/qcow2 files; "nbd": those files exported
    volume_format: str = "raw"       # file and nbd backends: "raw" or "qcow2"
    # The volumes' files; empty: <state_dir>/volumes. Every process that
    # attaches volumes (API, computes) must see the same directory.
    volumes_path: str = ""
    # nbd backend: the volume host's address its exports listen on and
    # compute hosts connect to.
    volume_nbd_address: str = "127.0.0.1"
    # Seconds between the volume service's checks of its NBD exports.
    volume_export_check_interval: float = 5.0
    quota_volumes: int = 10
    quota_snapshots: int = 10
    quota_gigabytes: int = 1000
    quota_per_volume_gigabytes: int = -1
    # Seconds a volume may stay creating/deleting before the sweep fails it.
    volume_stuck_timeout: float = 600.0
    volume_sweep_interval: float = 60.0

    # network
    base_mac: str = "fa:16:3e:00:00:00"
    auto_allocate_cidr: str = "10.0.0.0/24"
    # Segmentation (Neutron's ml2 options; docs/configuration.md, "Tenant networks
    # across hosts"). The type of a network a project creates: "local" (a bridge
    # per host, not joined) or "vxlan"; empty: vxlan when local_ip is set.
    tenant_network_types: str = ""
    # VNIs tenant networks take, "MIN:MAX[,MIN:MAX…]" ([ml2_type_vxlan] vni_ranges).
    vni_ranges: str = "1:1000"
    # Physical networks VLAN provider networks may use, "physnet[:MIN:MAX],…"
    # ([ml2_type_vlan] network_vlan_ranges), and flat ones ([ml2_type_flat]).
    network_vlan_ranges: str = ""
    flat_networks: str = ""
    # MTU of the underlay; a network's MTU is this less its overlay's overhead.
    global_physnet_mtu: int = 1500
    # This host's underlay address, the VXLAN tunnels' local end ([vxlan] local_ip).
    local_ip: str = ""
    # "physnet:interface,…": the host interface of each physical network
    # ([linux_bridge] physical_interface_mappings).
    physical_interface_mappings: str = ""
    # This host may serve DHCP for networks spanning hosts (one host per network).
    dhcp_agent: bool = True
    dns_domain: str = "openstacklocal."  # the domain of ports' dns_assignment FQDNs

    # metadata service (Nova's [api] metadata options, Neutron's metadata agent)
    # HMAC key of X-Instance-ID-Signature between the host proxies and the API
    # (Nova's [neutron]metadata_proxy_shared_secret); empty: a random one kept
    # in STATE_DIR/metadata_proxy_secret, shared by this machine's processes.
    metadata_proxy_shared_secret: str = ""
    # Seconds an instance's metadata is served from memory (Nova's [api]
    # metadata_cache_expiration); 0: read it for every request.
    metadata_cache_expiration: float = 15.0
    # Serve 169.254.169.254 to the guests of each network this host serves DHCP
    # for, with a DHCP route to it (Neutron's enable_isolated_metadata).
    enable_isolated_metadata: bool = True
    # Where the host proxies send the guests' requests; empty: public_url/metadata.
    metadata_url: str = ""

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir)
        if self.log_format not in ("text", "json"):
            raise ValueError(f"log_format must be text or json, not {self.log_format!r}")
        if not self.network_backend:
            self.network_backend = "linuxbridge" if self.compute_driver == "libvirt" else "noop"
        if not self.instances_path:
            self.instances_path = str(self.state_dir / "instances")
        if not self.database_url:
            self.database_url = f"sqlite:///{self.state_dir / 'cirrus.db'}"
        if self.api_workers < 0:
            self.api_workers = default_api_workers()
        if not self.public_url:
            host, port = split_bind(self.bind)
            self.public_url = f"http://{host}:{port}"

    @property
    def host(self) -> str:
        return split_bind(self.bind)[0]

    @property
    def port(self) -> int:
        return split_bind(self.bind)[1]


def default_api_workers() -> int:
    """One API worker where it can run beside the engine: Linux (fork, pidfds)
    with a second core; none elsewhere."""
    return 1 if sys.platform == "linux" and (os.cpu_count() or 1) >= 2 else 0


def split_bind(bind: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (or ``":PORT"`` or ``"HOST"``) → (host, port)."""
    host, sep, port = bind.rpartition(":")
    if not sep:
        return bind or "127.0.0.1", DEFAULT_PORT
    return host.strip("[]") or "127.0.0.1", int(port)


def _coerce(kind: Any, value: Any) -> Any:
    if isinstance(value, str):
        if kind in (bool, "bool"):
            return value.strip().lower() in ("1", "true", "yes", "on")
        if kind in (int, "int"):
            return int(value)
        if kind in (float, "float"):
            return float(value)
        if kind in (Path, "Path"):
            return Path(value).expanduser()
    return value


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge file < environment < overrides (flags) into a :class:`Settings`.

    Raises ``ValueError`` for unknown keys in the file or unparseable values.
    """
    env = os.environ if env is None else env
    known = {f.name: f for f in fields(Settings)}
    values: dict[str, Any] = {}
    path = config_file or env.get(ENV_PREFIX + "CONFIG")
    if path:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"unknown configuration key {key!r} in {path}")
            values[key] = value
    for name in known:
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = raw
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    typed = {k: _coerce(known[k].type, v) for k, v in values.items()}
    return Settings(**typed)
