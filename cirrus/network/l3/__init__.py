"""L3: routers, external gateways and floating IPs (Neutron's l3 plugin and
L3 agent). The API side stores routers and floating IPs (``routers.py``,
``floatingips.py``); the host side turns each router served by a host into a
``qrouter-<id>`` network namespace with nftables NAT (``agent.py``). The two
meet only in :mod:`cirrus.network.l3.spec`."""
