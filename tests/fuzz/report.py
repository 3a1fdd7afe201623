"""What a fuzz run reports: the requests as sent, the failures they caused,
one per distinct fault, and the run's counts."""
from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.strategies import Case

SHOW = 600  # characters of a body shown in a report


@dataclass
class Sent:
    """A request as sent and what came back."""
    case: Case
    method: str
    url: str
    headers: list[tuple[str, bytes]]
    body: bytes | None
    status: int = 0
    response: str = ""
    elapsed: float = 0.0
    cpu: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)  # (last line, where)

    @property
    def size(self) -> int:
        return len(self.body or b"") + len(self.url) + sum(len(v) for _, v in self.headers)

    def describe(self) -> str:
        lines = [f"{self.method} {clip(self.url, 300)} as {self.case.persona}"]
        junk_token = any(k.lower() == "x-auth-token" for k, _ in self.case.headers)
        for name, value in self.headers:
            if name.lower() == "x-auth-token" and not junk_token:
                continue  # the persona's own token
            lines.append(f"  {name}: {clip(value.decode('utf-8', 'backslashreplace'), 200)}")
        if self.body is not None:
            lines.append(f"  body: {clip(self.body.decode('utf-8', 'backslashreplace'), SHOW)}")
        lines.append(f"  mutations: {'; '.join(self.case.mutations) or 'none (the valid example)'}")
        lines.append(f"  → {self.status} in {self.elapsed:.2f}s ({self.cpu:.2f}s CPU): "
                     f"{clip(self.response, SHOW)}")
        lines += [f"  server log: {last}" + (f"  ({where})" if where else "")
                  for last, where in self.errors]
        return "\n".join(lines)


def _printable(text: str) -> str:
    """``text`` with lone surrogates (a hostile key, say) written as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text)} chars]"


def log_line(record: logging.LogRecord) -> tuple[str, str]:
    """(the exception's last line, where it was raised) of a logged error:
    the innermost frame in cirrus, and the innermost of all if that is elsewhere."""
    if not record.exc_info or record.exc_info[1] is None:
        return record.getMessage(), ""
    exc_type, exc, tb = record.exc_info
    last = traceback.format_exception_only(exc_type, exc)[-1].strip().splitlines()[0]
    frames = [(_module(f.filename), f) for f in traceback.extract_tb(tb)]
    ours = [(m, f) for m, f in frames if m.startswith("cirrus/")]
    where = []
    for module, frame in ours[-1:] + ([frames[-1]] if frames and frames[-1] not in ours[-1:] else []):
        where.append(f"{module}:{frame.lineno} in {frame.name}")
    return clip(last, 300), " ← ".join(reversed(where))


def _module(filename: str) -> str:
    """``cirrus/api/wsgi.py`` for a cirrus file, ``json/decoder.py`` for the stdlib."""
    parts = filename.split("/")
    if "cirrus" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("cirrus"):])
    return "/".join(parts[-2:])


@dataclass
class Finding:
    kind: str          # "5xx", "slow", "listing"
    where: str         # the route, or the listing and who read it
    status: int
    error: str         # the exception's last line from the server log
    frame: str         # where it was raised
    trigger: Sent | None
    detail: str = ""
    count: int = 1
    routes: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.routes.add(self.where)

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two failures one: a 5xx is its exception and where it was
        raised (one bug seen from many routes is one finding); a listing
        failure, the listing and the exception; a slow answer, its route."""
        if self.kind == "5xx" and self.frame:
            return (self.kind, self.error.split(":")[0], self.frame.split(" ← ")[-1])
        if self.kind == "slow":
            return (self.kind, self.where)
        listing = self.where.rsplit(" as ", 1)[0]  # the member's and the admin's are one
        return (self.kind, listing, str(self.status), self.frame or self.error.split(":")[0])

    def report(self) -> str:
        lines = [f"[{self.kind}] {self.where} → {self.status}"]
        if len(self.routes) > 1:
            lines.append(f"  also from: {', '.join(sorted(self.routes - {self.where}))}")
        if self.error:
            lines.append(f"  error: {self.error}" + (f"  ({self.frame})" if self.frame else ""))
        if self.detail:
            lines.append(f"  {self.detail}")
        if self.trigger is not None:
            lines.append("  triggered by: " + self.trigger.describe().replace("\n", "\n  "))
        return _printable("\n".join(lines))


class Findings:
    """Distinct failures, each with the smallest request seen to cause it."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, ...], Finding] = {}

    def add(self, finding: Finding) -> bool:
        """Keep ``finding``; True if it is a new kind of failure."""
        known = self.by_key.get(finding.key)
        if known is None:
            self.by_key[finding.key] = finding
            return True
        known.count += 1
        known.routes |= finding.routes
        if finding.trigger is not None and (known.trigger is None
                                            or finding.trigger.size < known.trigger.size):
            finding.count, finding.routes = known.count, known.routes
            self.by_key[finding.key] = finding
        return False

    def __len__(self) -> int:
        return len(self.by_key)

    def sorted(self) -> list[Finding]:
        return sorted(self.by_key.values(), key=lambda f: (f.where.split()[1] if " " in f.where
                                                          else f.where, f.kind, f.frame))

    def text(self) -> str:
        return "\n\n".join(f.report() + f"\n  seen {f.count}×" for f in self.sorted())

    def write(self, path: Path) -> None:
        path.write_text(self.text() + "\n")


@dataclass
class Stats:
    examples: int = 0
    requests: int = 0
    rebuilds: int = 0
    skipped: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    ok_by_route: dict[str, int] = field(default_factory=dict)
    setup_errors: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> str:
        classes: dict[str, int] = {}
        for status, n in self.by_status.items():
            classes[f"{status // 100}xx"] = classes.get(f"{status // 100}xx", 0) + n
        return (f"{self.requests} requests in {self.examples} examples, "
                f"{time.monotonic() - self.started:.0f}s, {self.rebuilds} rebuilds, "
                f"{self.skipped} not sendable; "
                f"statuses {dict(sorted(classes.items()))}")
