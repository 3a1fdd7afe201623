"""Metadata API route rules: every route needs a request the host's metadata
proxy signed for an instance (:attr:`~cirrus.policy.Level.SIGNED`); no token,
an admin's included, reaches it. Nova has no policy here either: the shared
secret is the check."""
from __future__ import annotations

from cirrus.policy import Level, Rule

S = Level.SIGNED

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/{path:path}"): Rule("metadata:get", S),
    ("POST", "/openstack/{version}/password"): Rule("metadata:password:set", S),
}
