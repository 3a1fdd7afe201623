"""Checks of single values in compute request bodies (Nova's
``api/validation/parameter_types.py``), shared by every compute resource.

Each returns the value (converted where Nova converts it) or raises
:class:`ValidationError` (400) naming the field. Text must be encodable as
UTF-8: a lone surrogate (``"\\ud800"``), which JSON can carry but no database
or JSON encoder will take back, is refused before it is stored.
"""
from __future__ import annotations

import re
from typing import Any

from cirrus import text as text_rules
from cirrus.exception import ValidationError

MAX_INT = 0x7FFFFFFF  # Nova's db.MAX_INT: integer columns and quota values
_INTEGER_TEXT = re.compile(r"-?[0-9]+")
# Nova's metadata keys (parameter_types.metadata's patternProperties).
METADATA_KEY = re.compile(r"[a-zA-Z0-9\-_:. ]{1,255}")


def bad(field: str, reason: str) -> ValidationError:
    return ValidationError(field=field, reason=reason)


def encodable(value: str, field: str) -> str:
    """``value`` if UTF-8 can encode it (no lone surrogates)."""
    if not text_rules.encodable(value):
        raise bad(field, "contains a lone surrogate (not valid Unicode text)")
    return value


def text(value: Any, field: str, *, min_len: int = 0, max_len: int = 255) -> str:
    """A string of ``min_len``..``max_len`` characters."""
    if not isinstance(value, str):
        raise bad(field, f"{_short(value)} is not of type 'string'")
    if not min_len <= len(value) <= max_len:
        raise bad(field, f"length must be between {min_len} and {max_len}")
    return encodable(value, field)


def integer(value: Any, field: str, *, minimum: int, maximum: int = MAX_INT) -> int:
    """An integer, or a string of ASCII digits (Nova's ``['integer', 'string']``
    with pattern ``^-?[0-9]+$``), within ``minimum``..``maximum``."""
    if isinstance(value, str) and len(value) <= 20 and _INTEGER_TEXT.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(field, f"{_short(value)} is not an integer")
    if not minimum <= value <= maximum:
        raise bad(field, f"{_short(value)} must be between {minimum} and {maximum}")
    return value


# Nova's parameter_types.boolean: the booleans and exactly these spellings.
TRUE_TEXT = frozenset(("True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes"))
FALSE_TEXT = frozenset(("False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no"))


def boolean(value: Any, field: str) -> bool:
    """A boolean, or one of Nova's spellings of one (``"True"``, ``"on"``, ``"0"``…)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in TRUE_TEXT | FALSE_TEXT:
        return value in TRUE_TEXT
    raise bad(field, f"{_short(value)} is not of type 'boolean'")


# oslo's strict bool_from_string, which Nova's boolean query parameters use.
QUERY_TRUE = frozenset(("1", "t", "true", "on", "y", "yes"))
QUERY_FALSE = frozenset(("0", "f", "false", "off", "n", "no"))


def query_boolean(value: str, field: str) -> bool:
    """A boolean query parameter (any case; 400 for anything else)."""
    lowered = value.strip().lower()
    if lowered not in QUERY_TRUE | QUERY_FALSE:
        raise bad(field, f"{_short(value)} is not a boolean")
    return lowered in QUERY_TRUE


def metadata(value: Any, field: str = "metadata", *, max_items: int | None = None
             ) -> dict[str, str]:
    """Nova's metadata object: keys of 1–255 of ``[a-zA-Z0-9-_:. ]``, values
    strings of at most 255 characters."""
    if not isinstance(value, dict):
        raise bad(field, "must be an object")
    for key, item in value.items():
        if not METADATA_KEY.fullmatch(key):
            raise bad(field, f"{_short(key)} is not a valid metadata key (1 to 255 of "
                             f"letters, digits, space and -_:.)")
        text(item, f"{field}/{key}", max_len=255)
    return dict(value)


def _short(value: Any) -> str:
    """A value for an error message, cut short (a client may send megabytes)."""
    try:
        shown = repr(value)
    except ValueError:  # an integer of more digits than Python will print
        return "a very large integer"
    return shown if len(shown) <= 60 else shown[:57] + "..."
