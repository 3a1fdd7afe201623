"""The security tests' personas: ``tenants`` (tests/conftest.py), built by
:func:`tests.tenants.make_tenants`; the names are re-exported here for the
tests that import them from this module."""
from tests.tenants import PERSONAS, Tenants, make_tenants

__all__ = ["PERSONAS", "Tenants", "make_tenants"]
