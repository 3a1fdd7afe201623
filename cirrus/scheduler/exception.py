"""Scheduler errors."""
from __future__ import annotations

from cirrus.exception import CirrusException


class NoValidHost(CirrusException):
    """No host passed the filters (or every claim failed). Becomes the fault."""

    code = 500
    msg_fmt = "No valid host was found. %(reason)s"
