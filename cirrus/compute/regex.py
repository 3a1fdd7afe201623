"""Regular expressions from clients (``GET /servers?name=…&ip=…&ip6=…``),
matched in time linear in the text.

Nova matches these filters with Python's ``re`` (and the database's REGEXP),
a backtracking engine: ``^(a+)+$`` against 30 × ``a`` + ``!`` takes tens of
seconds, and a listing filtered by it holds the event loop the whole time.
RE2 accepts the same syntax minus what needs backtracking (back-references,
look-around) and never takes longer than the text times the pattern's size.
A pattern RE2 cannot compile, or a malformed one, is a 400 — as Nova's
query schema (``format: regex``) answers for a malformed one.
"""
from __future__ import annotations

import functools
from typing import Callable

import re2

from cirrus.exception import ValidationError

# Long enough for any address or name pattern; the compiled program stays small.
MAX_PATTERN_LENGTH = 255
_METACHARACTERS = frozenset(".^$*+?{}[]\\|()")

Matcher = Callable[[str], bool]


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a client's bad pattern is a 400, not a log line
    options.never_capture = True  # groups are never read: cheaper matching
    # A pattern whose program needs more is refused; with the cache below, what
    # clients' patterns can hold is bounded (RE2's lazy DFA lives within it).
    options.max_mem = 1 << 20
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=64)
def compile_filter(field: str, pattern: str, *, anchored: bool = False) -> Matcher:
    """A predicate for ``re.search(pattern, text)`` (``re.match`` when
    ``anchored``), in linear time. :class:`ValidationError` (400) when the
    pattern is too long, malformed, or needs backtracking."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValidationError(field=field, reason=f"the pattern is longer than "
                                                  f"{MAX_PATTERN_LENGTH} characters")
    if not _METACHARACTERS.intersection(pattern):
        # A pattern without metacharacters matches itself: a substring test.
        return (lambda text: text.startswith(pattern)) if anchored else \
            (lambda text: pattern in text)
    try:
        re2.compile(pattern, _OPTIONS)  # for the error's reason; a Set only says no
        matcher = re2.Set.MatchSet(_OPTIONS) if anchored else re2.Set.SearchSet(_OPTIONS)
        matcher.Add(pattern)
        matcher.Compile()
    except (re2.error, UnicodeError) as error:
        raise ValidationError(field=field, reason=f"{pattern!r} is not a regular expression "
                                                  f"cirrus accepts ({_reason(error)}); "
                                                  f"back-references and look-around are "
                                                  f"not supported") from None
    # A Set answers match-or-not in one call, without building a match
    # object: half the cost of search() per text.
    match = matcher.Match
    return lambda text: match(text) is not None


def _reason(error: Exception) -> str:
    detail = error.args[0] if error.args else error
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
