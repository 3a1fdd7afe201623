"""``GET /v2/images`` query parameters, checked as Glance's RequestDeserializer does.

Anything malformed is 400: a limit that is not a non-negative integer (or is
beyond any database's LIMIT), unknown sort keys or directions, old and new sort
syntax mixed, an unknown visibility or member status, and filter values the
database cannot compare (NUL characters).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from starlette.datastructures import QueryParams

from cirrus.image import exception as exc
from cirrus.image import schema

DEFAULT_LIMIT = 25           # Glance's limit_param_default
MAX_LIMIT = 1000             # Glance's api_limit_max: larger limits are cut to it
FILTERS = ("name", "status", "visibility", "owner", "disk_format", "container_format")
SORT_KEYS = ("name", "status", "created_at", "updated_at", "size", "id", "owner",
             "disk_format", "container_format", "visibility", "min_disk", "min_ram")
SORT_DIRS = ("asc", "desc")
# Parameters that are not image properties: the rest of a query filters on
# properties, by exact value (Glance: ``?image_type=backup&instance_uuid=…``).
# Glance's base and read-only attributes are kept out, as Glance keeps them.
NOT_PROPERTIES = frozenset((*FILTERS, "limit", "marker", "sort", "sort_key", "sort_dir",
                            "member_status", "tag", "id", "checksum", "created_at", "updated_at",
                            "size", "size_min", "size_max", "virtual_size", "min_disk", "min_ram",
                            "protected", "os_hidden", "os_hash_algo", "os_hash_value", "tags",
                            "direct_url", "self", "file", "schema", "stores", "location",
                            "deleted", "deleted_at"))
FILTER_VISIBILITIES = (*schema.VISIBILITIES, "all")
MEMBER_STATUSES = (*schema.MEMBER_STATUSES, "all")


@dataclass(frozen=True)
class ListQuery:
    """What a listing asks for."""

    filters: dict[str, str] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    member_status: str = "accepted"
    limit: int = DEFAULT_LIMIT
    marker: str | None = None
    sort: list[tuple[str, str]] = field(default_factory=lambda: [("created_at", "desc")])
    # Glance lists hidden images (``os_hidden``) only when asked for, and then only them.
    hidden: bool = False
    size_min: int | None = None
    size_max: int | None = None


def parse(params: QueryParams) -> ListQuery:
    """The listing ``params`` ask for; 400 for anything malformed."""
    filters = {key: _value(key, params[key]) for key in FILTERS if params.get(key)}
    if filters.get("visibility", "all") not in FILTER_VISIBILITIES:
        raise exc.InvalidImage(reason=f"Invalid visibility value: {filters['visibility']}")
    member_status = params.get("member_status", "accepted")
    if member_status not in MEMBER_STATUSES:
        raise exc.InvalidImage(reason=f"Invalid status: {schema.shown(member_status)}")
    marker = params.get("marker")
    properties = {key: _value(key, value) for key, value in params.items()
                  if key not in NOT_PROPERTIES}
    return ListQuery(filters=filters, tags=[_value("tag", t) for t in params.getlist("tag")],
                     properties=properties,
                     member_status=member_status, limit=_limit(params.get("limit")),
                     marker=None if marker is None else _value("marker", marker),
                     sort=_sort(params), hidden=_boolean("os_hidden", params.get("os_hidden")),
                     **_sizes(params))


def _value(key: str, value: str) -> str:
    if not schema.storable(value):
        raise exc.InvalidImage(reason=f"Invalid value for the '{key}' parameter.")
    return value


def _boolean(key: str, raw: str | None) -> bool:
    if raw is None:
        return False
    if raw.lower() not in ("true", "false"):
        raise exc.InvalidImage(reason=f"Invalid value for the '{key}' parameter: expected "
                                      "true or false.")
    return raw.lower() == "true"


def _sizes(params: QueryParams) -> dict[str, int | None]:
    """``size`` (exact), ``size_min`` and ``size_max`` (inclusive) as bounds."""
    bounds: dict[str, int | None] = {"size_min": None, "size_max": None}
    for key in ("size", "size_min", "size_max"):
        if key not in params:
            continue
        try:
            value = int(params[key])
        except ValueError:
            raise exc.InvalidImage(reason=f"Invalid value for the '{key}' parameter: "
                                          "expected an integer.") from None
        low, high = bounds["size_min"], bounds["size_max"]
        if key != "size_max":
            bounds["size_min"] = value if low is None else max(value, low)
        if key != "size_min":
            bounds["size_max"] = value if high is None else min(value, high)
    return bounds


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    try:
        limit = int(raw)
    except ValueError:  # also an integer of more than 4,300 digits
        raise exc.InvalidImage(reason="limit param must be an integer") from None
    if limit < 0:
        raise exc.InvalidImage(reason="limit param must be positive")
    if limit >= 2**63:
        raise exc.InvalidImage(reason="limit param is too large")
    return min(limit, MAX_LIMIT) or DEFAULT_LIMIT


def _sort(params: QueryParams) -> list[tuple[str, str]]:
    """Glance's two syntaxes: ``sort=k1:asc,k2`` or ``sort_key=k1&sort_dir=asc``."""
    if "sort" in params:
        if "sort_key" in params or "sort_dir" in params:
            raise exc.InvalidImage(reason="Old and new sorting syntax cannot be combined")
        pairs = []
        for part in params["sort"].split(","):
            key, _, direction = part.partition(":")
            pairs.append((key.strip(), direction.strip() or "desc"))
    else:
        keys = [k.strip() for k in params.getlist("sort_key")] or ["created_at"]
        dirs = [d.strip() for d in params.getlist("sort_dir")] or ["desc"]
        if len(dirs) > 1 and len(dirs) != len(keys):
            raise exc.InvalidImage(reason="Number of sort dirs does not match the number "
                                          "of sort keys")
        pairs = list(zip(keys, dirs if len(dirs) > 1 else dirs * len(keys)))
    for key, direction in pairs:
        if key not in SORT_KEYS:
            raise exc.InvalidImage(reason=f"Invalid sort key: {schema.shown(key)}. It must be "
                                          "one of the following: " + ", ".join(SORT_KEYS) + ".")
        if direction not in SORT_DIRS:
            raise exc.InvalidImage(reason=f"Invalid sort direction: {schema.shown(direction)}")
    return pairs
