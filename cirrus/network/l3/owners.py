"""The ``device_owner`` of the ports L3 owns (neutron-lib's constants)."""
from __future__ import annotations

ROUTER_INTERFACE = "network:router_interface"
ROUTER_GATEWAY = "network:router_gateway"
FLOATINGIP = "network:floatingip"
DHCP = "network:dhcp"
# Ports only the L3 API may delete (Neutron's ``prevent_l3_port_deletion``).
L3_OWNERS = (ROUTER_INTERFACE, ROUTER_GATEWAY, FLOATINGIP)
