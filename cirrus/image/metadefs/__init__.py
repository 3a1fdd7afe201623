"""Glance's metadata definitions (``/v2/metadefs``): the catalogue of image,
volume, flavor and server properties that Horizon and the clients read to
offer a user the keys a cloud understands."""
