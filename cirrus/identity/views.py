"""Keystone v3 bodies of the identity resources, from their rows."""
from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from cirrus.identity.http import base

COLLECTION = {"project": "projects", "user": "users", "role": "roles", "domain": "domains",
              "group": "groups"}


def link(request: Request, collection: str, ident: str) -> dict[str, str]:
    return {"self": f"{base(request)}/{collection}/{ident}"}


def view(request: Request, kind: str, row: dict[str, Any]) -> dict[str, Any]:
    """A domain, project, user, group or role as Keystone shows it."""
    out = {"id": row["id"], "name": row["name"],
           "links": link(request, COLLECTION[kind], row["id"])}
    if kind == "project" and "parent_id" not in row:  # a domain, through the project API
        return {**out, "enabled": row["enabled"], "domain_id": None, "parent_id": None,
                "description": row.get("description") or "", "is_domain": True,
                "tags": [], "options": {}}
    if kind in ("project", "user", "domain"):
        out["enabled"] = row["enabled"]
    if kind in ("project", "user", "group", "role"):
        out["domain_id"] = row["domain_id"]
    if kind in ("project", "domain"):
        out["description"] = row.get("description") or ""
    if kind in ("group", "role"):
        out["description"] = row.get("description")
    if kind == "user" and row.get("extra"):
        # As Keystone shows the attributes it keeps without knowing them.
        out.update({k: v for k, v in json.loads(row["extra"]).items() if k not in out})
    if kind == "project":
        out.update({"is_domain": False, "parent_id": row["parent_id"] or row["domain_id"],
                    "tags": row.get("tags", []), "options": {}})
    if kind == "domain":
        out.update({"tags": [], "options": {}})
    if kind == "user":
        out.update({"default_project_id": row["default_project_id"], "email": row["email"],
                    "password_expires_at": None, "options": {}})
    if kind == "role":
        out.update({"options": {}})
    return out


def role_ref(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    """A role as an inference rule names it."""
    return {"id": row["id"], "name": row["name"], "links": link(request, "roles", row["id"])}
