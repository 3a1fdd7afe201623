"""The metadata API (Nova's nova-api-metadata), mounted at ``/metadata``.

Guests do not call it directly: the metadata proxy on their network's DHCP
host (``network/backends/metadata_proxy.py``) receives their requests to
``169.254.169.254``, names the instance, signs the request and forwards it
here. See ``docs/security.md`` ("The metadata service").
"""
