"""Block storage: a Cinder v3 subset (volumes, types, snapshots, attachments),
its backends, and compute's view of it (:mod:`cirrus.volume.cinder`)."""
