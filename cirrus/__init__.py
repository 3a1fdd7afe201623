"""cirrus: a compute cloud behind OpenStack-compatible APIs."""

__version__ = "0.1.0"
