"""What a guest learns about itself: OpenStack and EC2 metadata, built once
for both the config drive (``virt.libvirt.configdrive``) and the metadata
service (``api.metadata``), and the signature that ties a metadata request to
its instance. Pure functions of an instance's rows: no database, no service,
so the virt layer and the API may both import it.
"""
