"""The request context every service call carries: who asks, for which project."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TypedDict


# The variant digit of a random UUID: 10xx in its top bits.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def new_request_id() -> str:
    """``req-`` and a random (version 4) UUID, formatted from the same 16 random
    bytes ``uuid.uuid4`` reads, without building a UUID object (every context
    the services make for themselves gets one)."""
    h = os.urandom(16).hex()
    return f"req-{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


class ContextDict(TypedDict, total=False):
    """A context as it crosses the bus (any key may be missing)."""

    user_id: str | None
    project_id: str | None
    domain_id: str | None
    roles: list[str]
    request_id: str
    user_name: str | None
    project_name: str | None
    global_request_id: str | None


@dataclass
class RequestContext:
    """Identity of the caller, as established by the token middleware.

    It crosses the bus as a plain dict (:meth:`to_dict` / :meth:`from_dict`).
    """

    user_id: str | None = None
    project_id: str | None = None
    domain_id: str | None = None
    roles: list[str] = field(default_factory=list)
    request_id: str = field(default_factory=new_request_id)
    auth_token: str | None = None
    user_name: str | None = None
    project_name: str | None = None
    # Set by the API for admins asking about other projects' resources.
    all_tenants: bool = False
    # Set only for a metadata request signed for this instance (the metadata
    # service's caller is a guest, not a user).
    instance_id: str | None = None
    # The caller's X-OpenStack-Request-ID (oslo.context's): the id of the
    # request that started this one in another service, carried on to every
    # service this request's work reaches, and on every log line.
    global_request_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    def to_dict(self) -> ContextDict:
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "domain_id": self.domain_id,
            "roles": list(self.roles),
            "request_id": self.request_id,
            "user_name": self.user_name,
            "project_name": self.project_name,
            "global_request_id": self.global_request_id,
        }

    @classmethod
    def from_dict(cls, data: ContextDict) -> "RequestContext":
        # Every RPC delivery makes one: keyword arguments, no dict built for them.
        return cls(user_id=data.get("user_id"), project_id=data.get("project_id"),
                   domain_id=data.get("domain_id"), roles=list(data.get("roles") or ()),
                   request_id=data.get("request_id") or new_request_id(),
                   user_name=data.get("user_name"), project_name=data.get("project_name"),
                   global_request_id=data.get("global_request_id"))

    def elevated(self) -> "RequestContext":
        """An admin copy, for internal work done on the caller's behalf."""
        roles = self.roles if self.is_admin else [*self.roles, "admin"]
        return RequestContext(user_id=self.user_id, project_id=self.project_id,
                              domain_id=self.domain_id, roles=roles,
                              request_id=self.request_id, auth_token=self.auth_token,
                              user_name=self.user_name, project_name=self.project_name,
                              global_request_id=self.global_request_id)


def admin_context() -> RequestContext:
    """A context for the services themselves (periodic tasks, bootstrap)."""
    return RequestContext(roles=["admin"])
