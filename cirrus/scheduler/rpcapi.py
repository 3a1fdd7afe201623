"""Client side of the scheduler's RPC API (topic ``scheduler``)."""
from __future__ import annotations

from typing import Any

from cirrus.context import RequestContext
from cirrus.rpc import RPCClient, Transport
from cirrus.scheduler.selection import Selection

TOPIC = "scheduler"


class SchedulerAPI:
    def __init__(self, transport: Transport, timeout: float = 60.0) -> None:
        self.client = RPCClient(transport, TOPIC, timeout=timeout)

    async def select_destinations(self, ctx: RequestContext,
                                  request_spec: dict[str, Any]) -> Selection:
        """Hosts for each instance of ``request_spec``, resources already claimed.

        Raises NoValidHost (with the filter report in its message).
        """
        selection: Selection = await self.client.call(ctx, "select_destinations",
                                                      request_spec=request_spec)
        return selection
