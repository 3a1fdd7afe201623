"""Network errors, named as Neutron and Nova name them, each with its status."""
from __future__ import annotations

from cirrus.exception import CirrusException, Conflict, Forbidden, Invalid, NotFound


class ResourceNotFound(NotFound):
    msg_fmt = "The resource could not be found."


class NetworkNotFound(NotFound):
    msg_fmt = "Network %(net_id)s could not be found."


class SubnetNotFound(NotFound):
    msg_fmt = "Subnet %(subnet_id)s could not be found."


class PortNotFound(NotFound):
    msg_fmt = "Port %(port_id)s could not be found."


class SecurityGroupNotFound(NotFound):
    msg_fmt = "Security group %(id)s does not exist"


class SecurityGroupRuleNotFound(NotFound):
    msg_fmt = "Security group rule %(id)s does not exist"


class BadRequest(Invalid):
    error_type = "HTTPBadRequest"
    msg_fmt = "%(reason)s"


class InvalidInput(Invalid):
    msg_fmt = "Invalid input for operation: %(reason)s"


class NetworkAmbiguous(Conflict):
    msg_fmt = "Multiple possible networks found, use a Network ID to be more specific."


class PortInUse(Conflict):
    msg_fmt = "Port %(port_id)s is still in use."


class PortNotUsable(Conflict):
    msg_fmt = "Port %(port_id)s not usable for instance %(instance)s."


class NetworkInUse(Conflict):
    msg_fmt = "Unable to complete operation on network %(net_id)s. There are one or more ports still in use on the network."


class SubnetInUse(Conflict):
    msg_fmt = "Unable to complete operation on subnet %(subnet_id)s: One or more ports have an IP allocation from this subnet."


class SecurityGroupRuleExists(Conflict):
    msg_fmt = "Security group rule already exists. Rule id is %(rule_id)s."


class SecurityGroupInUse(Conflict):
    msg_fmt = "Security Group %(id)s in use."


class IpAddressGenerationFailure(Conflict):
    msg_fmt = "No more IP addresses available on network %(net_id)s."


class IpAddressAlreadyAllocated(Conflict):
    msg_fmt = "IP address %(ip)s already allocated in subnet %(subnet_id)s"


class MacAddressInUse(Conflict):
    msg_fmt = "Unable to complete operation for network %(net_id)s. The mac address %(mac)s is in use."


class ExternalNetworkAttachForbidden(Forbidden):
    msg_fmt = "It is not allowed to create an interface on external network %(network_uuid)s"


class NoUniqueMatch(Conflict):
    msg_fmt = "Multiple security groups found matching '%(name)s'. Use an ID to be more specific."


class SecurityGroupCannotBeApplied(Invalid):
    msg_fmt = "Network requires port_security_enabled and subnet associated in order to apply security groups."


class OverQuota(Conflict):
    msg_fmt = "Quota exceeded for resources: ['%(resource)s']."


class PortLimitExceeded(Forbidden):
    """Nova's name for the port quota reached by a server create (403 there)."""

    msg_fmt = "Maximum number of ports exceeded"


class NoMoreFixedIps(Conflict):
    """Nova's name for a network with no address left for an instance. cirrus's
    IPAM says so with Neutron's IpAddressGenerationFailure; this name stays so a
    backend that raises it aborts the build as seed 004 does."""

    msg_fmt = "No fixed IP addresses available for network: %(net)s"


class FixedIpLimitExceeded(Forbidden):
    """Nova's name for the project's fixed-IP quota reached by a build (cirrus
    has no such quota yet; the port quota is PortLimitExceeded)."""

    msg_fmt = "Maximum number of fixed IPs exceeded"


class NoMoreNetworks(CirrusException):
    """Nova's name for no network left to give an instance (seed 004 aborts on it)."""

    msg_fmt = "No more available networks."


class NetworkError(CirrusException):
    msg_fmt = "%(reason)s"


class PolicyNotAuthorized(Forbidden):
    """Neutron's answer to a caller who may see a thing but not do this to it."""

    msg_fmt = "(rule:%(action)s) is disallowed by policy"


class InvalidAllocationPool(Invalid):
    msg_fmt = "The allocation pool %(pool)s is not valid."


class OutOfBoundsAllocationPool(Invalid):
    msg_fmt = "The allocation pool %(pool)s spans beyond the subnet cidr %(subnet_cidr)s."


class OverlappingAllocationPools(Conflict):
    msg_fmt = "Found overlapping allocation pools: %(pool_1)s %(pool_2)s for subnet %(subnet_cidr)s."


class GatewayConflictWithAllocationPools(Conflict):
    msg_fmt = "Gateway ip %(ip_address)s conflicts with allocation pool %(pool)s."


class FixedIpAlreadyInUse(Invalid):
    """Nova's error for a requested fixed IP some port holds (400 at ``POST /servers``)."""

    msg_fmt = "Fixed IP address %(address)s is already in use on instance %(instance_uuid)s."


class InvalidFixedIp(Invalid):
    """A requested fixed IP no subnet of the network can give (400 at the API)."""

    msg_fmt = "%(reason)s"


class VlanIdInUse(Conflict):
    msg_fmt = ("Unable to create the network. The VLAN %(vlan_id)s on physical network "
               "%(physical_network)s is in use.")


class TunnelIdInUse(Conflict):
    msg_fmt = "Unable to create the network. The tunnel ID %(tunnel_id)s is in use."


class FlatNetworkInUse(Conflict):
    msg_fmt = ("Unable to create the flat network. Physical network %(physical_network)s "
               "is in use.")


class NoNetworkAvailable(CirrusException):
    """Every segmentation id of the tenant ranges is taken (Neutron's
    ResourceExhausted: 503, the operator widens the ranges)."""

    code = 503
    msg_fmt = "Unable to create the network. No tenant network is available for allocation."


class AgentNotFound(NotFound):
    msg_fmt = "Agent %(id)s could not be found."


class SubnetPoolNotFound(NotFound):
    msg_fmt = "Subnet pool %(subnetpool_id)s could not be found."


class SubnetPoolInUse(Conflict):
    msg_fmt = "Unable to complete operation on subnet pool %(subnetpool_id)s: One or more subnets are allocated from it."


class TagNotFound(NotFound):
    msg_fmt = "Tag %(tag)s could not be found."


class PortSecurityPortHasSecurityGroup(Conflict):
    msg_fmt = ("Port has security group associated. Cannot disable port security or ip "
               "address until security group is removed")


class AddressPairAndPortSecurityRequired(Conflict):
    msg_fmt = "Port Security must be enabled in order to have allowed address pairs on a port."


class SecurityGroupDefaultAlreadyExists(Conflict):
    msg_fmt = "Default security group already exists."


class SecurityGroupInvalidPortRange(Invalid):
    msg_fmt = "For TCP/UDP protocols, port_range_min must be <= port_range_max"


class SecurityGroupInvalidPortValue(Invalid):
    msg_fmt = "Invalid value for port %(port)s"


class SecurityGroupInvalidIcmpValue(Invalid):
    msg_fmt = "Invalid value for ICMP %(field)s (%(attr)s) %(value)s. It must be 0 to 255."


class SecurityGroupMissingIcmpType(Invalid):
    msg_fmt = ("ICMP code (port-range-max) %(value)s is provided but ICMP type "
               "(port-range-min) is missing.")
