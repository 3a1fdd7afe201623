"""Thin async wrappers around the Linux networking tools (``ip``, ``nft``,
``dnsmasq``), run inside ``settings.host_netns`` when it is set."""
