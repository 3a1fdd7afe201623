"""``/extensions``: the v2.1 API's extension list (Nova's ``extension_info``).

Since microversions replaced extensions the list is fixed: Nova answers every
v2.1 cloud with the same 99 entries, in alias order, whatever it has enabled;
clients (novaclient, Tempest) read it to find what the API knows.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, reply
from cirrus.exception import NotFound

# Every entry carries the same namespace, date and (no) links in Nova.
NAMESPACE = "http://docs.openstack.org/compute/ext/fake_xml"
UPDATED = "2014-12-03T00:00:00Z"

# (alias, name, description), as Nova lists them.
EXTENSIONS: tuple[tuple[str, str, str], ...] = (
    ('NMN', 'Multinic', 'Multiple network support.'),
    ('OS-DCF', 'DiskConfig', 'Disk Management Extension.'),
    ('OS-EXT-AZ', 'ExtendedAvailabilityZone', 'Extended Availability Zone support.'),
    ('OS-EXT-IMG-SIZE', 'ImageSize', 'Adds image size to image listings.'),
    ('OS-EXT-IPS', 'ExtendedIps', 'Adds type parameter to the ip list.'),
    ('OS-EXT-IPS-MAC', 'ExtendedIpsMac', 'Adds mac address parameter to the ip list.'),
    ('OS-EXT-SRV-ATTR', 'ExtendedServerAttributes', 'Extended Server Attributes support.'),
    ('OS-EXT-STS', 'ExtendedStatus', 'Extended Status support.'),
    ('OS-FLV-DISABLED', 'FlavorDisabled', 'Support to show the disabled status of a flavor.'),
    ('OS-FLV-EXT-DATA', 'FlavorExtraData', 'Provide additional data for flavors.'),
    ('OS-SCH-HNT', 'SchedulerHints', 'Pass arbitrary key/value pairs to the scheduler.'),
    ('OS-SRV-USG', 'ServerUsage', 'Adds launched_at and terminated_at on Servers.'),
    ('os-access-ips', 'AccessIPs', 'Access IPs support.'),
    ('os-admin-actions', 'AdminActions',
     'Enable admin-only server actions\n\n    Actions include: resetNetwork, '
     'injectNetworkInfo, os-resetState\n    '),
    ('os-admin-password', 'AdminPassword', 'Admin password management support.'),
    ('os-agents', 'Agents', 'Agents support.'),
    ('os-aggregates', 'Aggregates', 'Admin-only aggregate administration.'),
    ('os-assisted-volume-snapshots', 'AssistedVolumeSnapshots', 'Assisted volume snapshots.'),
    ('os-attach-interfaces', 'AttachInterfaces', 'Attach interface support.'),
    ('os-availability-zone', 'AvailabilityZone',
     '1. Add availability_zone to the Create Server API.\n       2. Add availability '
     'zones describing.\n    '),
    ('os-baremetal-ext-status', 'BareMetalExtStatus',
     'Add extended status in Baremetal Nodes v2 API.'),
    ('os-baremetal-nodes', 'BareMetalNodes', 'Admin-only bare-metal node administration.'),
    ('os-block-device-mapping', 'BlockDeviceMapping', 'Block device mapping boot support.'),
    ('os-block-device-mapping-v2-boot', 'BlockDeviceMappingV2Boot',
     'Allow boot with the new BDM data format.'),
    ('os-cell-capacities', 'CellCapacities', 'Adding functionality to get cell capacities.'),
    ('os-cells', 'Cells',
     'Enables cells-related functionality such as adding neighbor cells,\n    '
     'listing neighbor cells, and getting the capabilities of the local cell.\n    '),
    ('os-certificates', 'Certificates', 'Certificates support.'),
    ('os-cloudpipe', 'Cloudpipe',
     'Adds actions to create cloudpipe instances.\n\n    When running with the Vlan '
     'network mode, you need a mechanism to route\n    from the public Internet to '
     'your vlans.  This mechanism is known as a\n    cloudpipe.\n\n    At the time '
     'of creating this class, only OpenVPN is supported.  Support for\n    a SSH '
     'Bastion host is forthcoming.\n    '),
    ('os-cloudpipe-update', 'CloudpipeUpdate',
     'Adds the ability to set the vpn ip/port for cloudpipe instances.'),
    ('os-config-drive', 'ConfigDrive', 'Config Drive Extension.'),
    ('os-console-auth-tokens', 'ConsoleAuthTokens', 'Console token authentication support.'),
    ('os-console-output', 'ConsoleOutput', 'Console log output support, with tailing ability.'),
    ('os-consoles', 'Consoles', 'Interactive Console support.'),
    ('os-create-backup', 'CreateBackup', 'Create a backup of a server.'),
    ('os-create-server-ext', 'Createserverext', 'Extended support to the Create Server v1.1 API.'),
    ('os-deferred-delete', 'DeferredDelete', 'Instance deferred delete.'),
    ('os-evacuate', 'Evacuate', 'Enables server evacuation.'),
    ('os-extended-evacuate-find-host', 'ExtendedEvacuateFindHost',
     'Enables server evacuation without target host. Scheduler will select one to '
     'target.'),
    ('os-extended-floating-ips', 'ExtendedFloatingIps',
     'Adds optional fixed_address to the add floating IP command.'),
    ('os-extended-hypervisors', 'ExtendedHypervisors', 'Extended hypervisors support.'),
    ('os-extended-networks', 'ExtendedNetworks', 'Adds additional fields to networks.'),
    ('os-extended-quotas', 'ExtendedQuotas',
     'Adds ability for admins to delete quota and optionally force the update Quota '
     'command.'),
    ('os-extended-rescue-with-image', 'ExtendedRescueWithImage',
     'Allow the user to specify the image to use for rescue.'),
    ('os-extended-services', 'ExtendedServices', 'Extended services support.'),
    ('os-extended-services-delete', 'ExtendedServicesDelete',
     'Extended services deletion support.'),
    ('os-extended-status', 'ExtendedStatus', 'Extended Status support.'),
    ('os-extended-volumes', 'ExtendedVolumes', 'Extended Volumes support.'),
    ('os-fixed-ips', 'FixedIPs', 'Fixed IPs support.'),
    ('os-flavor-access', 'FlavorAccess', 'Flavor access support.'),
    ('os-flavor-extra-specs', 'FlavorExtraSpecs', 'Flavors extra specs support.'),
    ('os-flavor-manage', 'FlavorManage', 'Flavor create/delete API support.'),
    ('os-flavor-rxtx', 'FlavorRxtx', 'Support to show the rxtx status of a flavor.'),
    ('os-flavor-swap', 'FlavorSwap', 'Support to show the swap status of a flavor.'),
    ('os-floating-ip-dns', 'FloatingIpDns', 'Floating IP DNS support.'),
    ('os-floating-ip-pools', 'FloatingIpPools', 'Floating IPs support.'),
    ('os-floating-ips', 'FloatingIps', 'Floating IPs support.'),
    ('os-floating-ips-bulk', 'FloatingIpsBulk', 'Bulk handling of Floating IPs.'),
    ('os-fping', 'Fping', 'Fping Management Extension.'),
    ('os-hide-server-addresses', 'HideServerAddresses',
     'Support hiding server addresses in certain states.'),
    ('os-hosts', 'Hosts', 'Admin-only host administration.'),
    ('os-hypervisor-status', 'HypervisorStatus', 'Show hypervisor status.'),
    ('os-hypervisors', 'Hypervisors', 'Admin-only hypervisor administration.'),
    ('os-instance-actions', 'InstanceActions',
     'View a log of actions and events taken on an instance.'),
    ('os-instance_usage_audit_log', 'OSInstanceUsageAuditLog', 'Admin-only Task Log Monitoring.'),
    ('os-keypairs', 'Keypairs', 'Keypair Support.'),
    ('os-lock-server', 'LockServer', 'Enable lock/unlock server actions.'),
    ('os-migrate-server', 'MigrateServer', 'Enable migrate and live-migrate server actions.'),
    ('os-migrations', 'Migrations', 'Provide data on migrations.'),
    ('os-multiple-create', 'MultipleCreate',
     'Allow multiple create in the Create Server v2.1 API.'),
    ('os-networks', 'Networks', 'Admin-only Network Management Extension.'),
    ('os-networks-associate', 'NetworkAssociationSupport', 'Network association support.'),
    ('os-pause-server', 'PauseServer', 'Enable pause/unpause server actions.'),
    ('os-personality', 'Personality', 'Personality support.'),
    ('os-preserve-ephemeral-rebuild', 'PreserveEphemeralOnRebuild',
     'Allow preservation of the ephemeral partition on rebuild.'),
    ('os-quota-class-sets', 'QuotaClasses', 'Quota classes management support.'),
    ('os-quota-sets', 'Quotas', 'Quotas management support.'),
    ('os-rescue', 'Rescue', 'Instance rescue mode.'),
    ('os-security-group-default-rules', 'SecurityGroupDefaultRules',
     'Default rules for security group support.'),
    ('os-security-groups', 'SecurityGroups', 'Security group support.'),
    ('os-server-diagnostics', 'ServerDiagnostics',
     'Allow Admins to view server diagnostics through server action.'),
    ('os-server-external-events', 'ServerExternalEvents', 'Server External Event Triggers.'),
    ('os-server-group-quotas', 'ServerGroupQuotas', 'Adds quota support to server groups.'),
    ('os-server-groups', 'ServerGroups', 'Server group support.'),
    ('os-server-list-multi-status', 'ServerListMultiStatus',
     'Allow to filter the servers by a set of status values.'),
    ('os-server-password', 'ServerPassword', 'Server password support.'),
    ('os-server-sort-keys', 'ServerSortKeys', 'Add sorting support in get Server v2 API.'),
    ('os-server-start-stop', 'ServerStartStop', 'Start/Stop instance compute API support.'),
    ('os-services', 'Services', 'Services support.'),
    ('os-shelve', 'Shelve', 'Instance shelve mode.'),
    ('os-simple-tenant-usage', 'SimpleTenantUsage', 'Simple tenant usage extension.'),
    ('os-suspend-server', 'SuspendServer', 'Enable suspend/resume server actions.'),
    ('os-tenant-networks', 'OSTenantNetworks', 'Tenant-based Network Management Extension.'),
    ('os-used-limits', 'UsedLimits', 'Provide data on limited resources that are being used.'),
    ('os-used-limits-for-admin', 'UsedLimitsForAdmin',
     'Provide data to admin on limited resources used by other tenants.'),
    ('os-user-data', 'UserData', 'Add user_data to the Create Server API.'),
    ('os-user-quotas', 'UserQuotas', 'Project user quota support.'),
    ('os-virtual-interfaces', 'VirtualInterfaces', 'Virtual interface support.'),
    ('os-volume-attachment-update', 'VolumeAttachmentUpdate',
     'Support for updating a volume attachment.'),
    ('os-volumes', 'Volumes', 'Volumes support.'),
)


class ExtensionNotFound(NotFound):
    msg_fmt = "The resource could not be found."


def _view(alias: str, name: str, description: str) -> dict[str, object]:
    return {"alias": alias, "description": description, "links": [], "name": name,
            "namespace": NAMESPACE, "updated": UPDATED}


BY_ALIAS = {alias: _view(alias, name, description) for alias, name, description in EXTENSIONS}


async def index(request: Request) -> Response:
    context(request)
    return reply({"extensions": list(BY_ALIAS.values())})


async def show(request: Request) -> Response:
    context(request)
    found = BY_ALIAS.get(request.path_params["alias"])
    if found is None:
        raise ExtensionNotFound()
    return reply({"extension": found})


ROUTES = [
    Route("/v2.1/extensions", index, methods=["GET"]),
    Route("/v2.1/extensions/{alias}", show, methods=["GET"]),
]
