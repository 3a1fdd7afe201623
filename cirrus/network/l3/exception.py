"""L3 errors, named as neutron-lib names them (``exceptions/l3.py``), each
with its status; the HTTP layer shows the class name as the NeutronError type."""
from __future__ import annotations

from cirrus.exception import Conflict, Invalid, NotFound


class RouterNotFound(NotFound):
    msg_fmt = "Router %(router_id)s could not be found"


class RouterInUse(Conflict):
    msg_fmt = "Router %(router_id)s %(reason)s"


class RouterInterfaceNotFound(NotFound):
    msg_fmt = "Router %(router_id)s does not have an interface with id %(port_id)s"


class RouterInterfaceNotFoundForSubnet(NotFound):
    msg_fmt = "Router %(router_id)s has no interface on subnet %(subnet_id)s"


class RouterInterfaceInUseByFloatingIP(Conflict):
    msg_fmt = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be "
               "deleted, as it is required by one or more floating IPs.")


class RouterExternalGatewayInUseByFloatingIp(Conflict):
    msg_fmt = ("Gateway cannot be updated for router %(router_id)s, since a gateway to "
               "external network %(net_id)s is required by one or more floating IPs.")


class FloatingIPNotFound(NotFound):
    msg_fmt = "Floating IP %(floatingip_id)s could not be found"


class ExternalGatewayForFloatingIPNotFound(NotFound):
    msg_fmt = ("External network %(external_network_id)s is not reachable from subnet "
               "%(subnet_id)s.  Therefore, cannot associate Port %(port_id)s with a "
               "Floating IP.")


class FloatingIPPortAlreadyAssociated(Conflict):
    msg_fmt = ("Cannot associate floating IP %(floating_ip_address)s (%(fip_id)s) with port "
               "%(port_id)s using fixed IP %(fixed_ip)s, as that fixed IP already has a "
               "floating IP on external network %(net_id)s.")


class ServicePortInUse(Conflict):
    msg_fmt = "Port %(port_id)s cannot be deleted directly via the port API: %(reason)s."


class ExternalIpAddressExhausted(Conflict):
    """Neutron answers 400 for this one (a BadRequest subclass there)."""

    code = 400
    msg_fmt = "Unable to find any IP address on external network %(net_id)s."


class RouterInterfaceInUseByRoute(Conflict):
    msg_fmt = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be "
               "deleted, as it is required by one or more routes.")


class InvalidRoutes(Invalid):
    msg_fmt = "Invalid format for routes: %(routes)s, %(reason)s"
