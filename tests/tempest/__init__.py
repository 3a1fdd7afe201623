"""Tempest against the all-in-one cloud: ``scripts/tempest`` (see docs/tempest.md).

Not a pytest suite: :mod:`tests.tempest.prepare` runs in cirrus's Python and
readies a running cloud and ``tempest.conf``; :mod:`tests.tempest.summary`
runs in Tempest's virtualenv and judges the subunit stream.
"""
