"""Nova's ``extra_specs_ops``: how a flavor's extra spec value is matched
against what a host (or its aggregates) offers.

A requirement whose first word is an operator compares with it:
``= N`` (at least N), ``== N``, ``!= N``, ``>= N``, ``<= N`` (numbers),
``s== s!= s< s<= s> s>=`` (strings), ``<in> x`` (x is a substring of the
value), ``<all-in> x y`` (every word is in the value), ``<or> a <or> b``
(one of them). Anything else must equal the value exactly.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any


def _number(compare: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def check(value: Any, wanted: Any) -> bool:
        try:
            return compare(float(value), float(wanted))
        except (TypeError, ValueError):
            return False  # Nova raises here and the filter fails the host
    return check


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": _number(operator.ge),
    "==": _number(operator.eq),
    "!=": _number(operator.ne),
    ">=": _number(operator.ge),
    "<=": _number(operator.le),
    "<in>": lambda value, wanted: wanted in value,
    "<all-in>": lambda value, words: all(word in value for word in words),
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<": operator.lt,
    "s<=": operator.le,
    "s>": operator.gt,
    "s>=": operator.ge,
}


def _one_of(value: str, words: list[str]) -> bool:
    """``<or> a <or> b``: the words at even places after the first ``<or>``."""
    return value in words[0::2]


def match(value: str | None, requirement: str) -> bool:
    """Whether ``value`` satisfies ``requirement``."""
    words = requirement.split()
    op = words.pop(0) if words else None
    method = OPERATORS.get(op) if op is not None else None
    if op != "<or>" and method is None:
        return value == requirement
    if value is None or not words:
        return False
    if op == "<or>":
        return _one_of(value, words)
    assert method is not None
    return method(value, words if op == "<all-in>" else words[0])
