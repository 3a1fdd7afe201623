"""Sending fuzz cases to the world and checking the properties of issue #18.

Properties, per request: the status is below 500 and the answer takes less
than ``slow`` seconds of CPU; per example (a batch of requests): every listing in
:func:`listings` still answers 200, for the member and the admin. A failure
raises AssertionError naming the request, the response and the server log's
last line, or, in record mode, is kept in :class:`Findings` (one per distinct
failure, with the smallest request that caused it) and the fuzz goes on.
"""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import replace
from typing import Any, Callable
from urllib.parse import quote

from tests.fuzz.factories import SetupError
from tests.fuzz.hostile import Ref, Unique, encode
from tests.fuzz.report import Finding, Findings, Sent, Stats, clip, log_line
from tests.fuzz.strategies import FRESH, SEED, Case
from tests.fuzz.world import World, param_kind



def listings(world: World, services: set[str] | None = None) -> list[tuple[str, str]]:
    """(persona, path) of every listing that must keep answering 200: those of
    ``services`` (all when None), and always the servers' views, which show
    what the network and image services hold too."""
    server = world.seeds["server"]
    both = ["/compute/v2.1/servers/detail", "/compute/v2.1/servers", "/compute/v2.1/flavors/detail",
            "/compute/v2.1/os-keypairs", "/compute/v2.1/os-server-groups",
            "/network/v2.0/networks", "/network/v2.0/subnets", "/network/v2.0/ports",
            "/network/v2.0/security-groups", "/network/v2.0/security-group-rules",
            "/image/v2/images", "/image/v2/metadefs/namespaces", "/identity/v3/auth/projects",
            f"/compute/v2.1/servers/{server}"]
    admin_only = ["/compute/v2.1/servers/detail?all_tenants=1", "/compute/v2.1/os-services",
                  "/compute/v2.1/os-hypervisors/detail", "/identity/v3/projects", "/identity/v3/roles",
                  "/identity/v3/users", "/compute/v2.1/os-server-groups?all_projects=1",
                  "/compute/v2.1/os-aggregates", "/compute/v2.1/os-availability-zone/detail",
                  "/identity/v3/domains", "/identity/v3/groups", "/identity/v3/regions",
                  "/identity/v3/services", "/identity/v3/endpoints", "/identity/v3/policies",
                  "/identity/v3/credentials", "/identity/v3/role_assignments?include_names=1",
                  "/identity/v3/role_inferences"]
    every = ([("member", p) for p in both] + [("admin", p) for p in both]
             + [("admin", p) for p in admin_only])
    always = {"/compute/v2.1/servers/detail", "/compute/v2.1/servers/detail?all_tenants=1",
              f"/compute/v2.1/servers/{server}"}
    return [(who, p) for who, p in every
            if services is None or p in always or p.split("/")[1] in services]


class Fuzzer:
    """Runs examples against a world; strict (raise) or recording."""

    def __init__(self, world: World, *, record: bool = False, slow: float = 2.0,
                 reset_every: int = 150,
                 on_new: Callable[[Finding], None] | None = None) -> None:
        self.world = world
        self.on_new = on_new
        self.record = record
        self.slow = slow
        self.reset_every = reset_every
        self.findings = Findings()
        self.stats = Stats()
        self.dirty = False
        self.since_reset = 0

    # -- one example ---------------------------------------------------------------
    async def example(self, batch: list[Case]) -> None:
        if self.dirty or self.since_reset >= self.reset_every:
            await self.world.rebuild()
            self.stats.rebuilds += 1
            self.dirty, self.since_reset = False, 0
        self.stats.examples += 1
        self.since_reset += 1
        # Hypothesis seeds the global ``random`` alike for every example; the
        # cloud draws MACs from it, which would then repeat from example to
        # example until a port create fails. A process's own sequence goes on.
        random.seed()
        sent: list[Sent] = []
        for case in batch:
            one = await self.send(case)
            if one is None:
                continue
            sent.append(one)
            for finding in self.check(one):
                if finding.kind == "slow" and 400 <= one.status < 500 and \
                        not await self._slow_again(one):
                    continue
                if self.record and finding.kind == "5xx" and finding.key not in self.findings.by_key:
                    finding = await self.simplify(finding)
                self.fail(finding)
        touched = {s.case.target.service for s in sent if s.method != "GET"}
        if not touched:
            return
        broken = await self.broken_listings(touched)
        if broken:
            self.dirty = True
            culprit = await self.bisect(sent)
            for finding in broken:
                finding.trigger = culprit
                if culprit is None:
                    finding.detail += " — after the example's writes: " + "; ".join(
                        f"{s.method} {s.case.target.path} → {s.status}" for s in sent)
                self.fail(finding)

    async def final_check(self) -> None:
        """Every listing answers 200 after the whole run too."""
        for finding in await self.broken_listings():
            self.fail(finding)

    def fail(self, finding: Finding) -> None:
        if self.record:
            if self.findings.add(finding) and self.on_new is not None:
                self.on_new(finding)
            return
        raise AssertionError(finding.report())

    async def simplify(self, finding: Finding) -> Finding:
        """The same failure from a plainer request, where one does it: each
        junk header, path parameter and query item left out in turn (record
        mode's stand-in for Hypothesis's shrinking)."""
        assert finding.trigger is not None
        case = finding.trigger.case
        for plainer in _plainer(case):
            again = await self.send(plainer)
            if again is None:
                continue
            same = [f for f in self.check(again) if f.key == finding.key]
            if same:
                case, finding = plainer, same[0]
        return finding

    # -- requests ------------------------------------------------------------------
    async def render(self, case: Case) -> Sent:
        """The concrete request: ids and serial numbers filled in."""
        serial = self.world.next_serial()
        values: dict[str, str] = {}
        for kind in sorted(_kinds(case.body) | _kinds([v for _, v in case.headers])
                           | _kinds([v for _, v in case.query])):
            values[kind] = await self.world.value(kind)

        def resolve(leaf: Ref | Unique) -> str:
            return values[leaf.kind] if isinstance(leaf, Ref) else leaf.render(serial)

        path = case.target.path
        for name, value in case.params:
            kind = param_kind(case.target, name)
            if value in (SEED, FRESH):
                # A GET's parameter of no known kind (an instance action's
                # request id) is filled with junk; every write route's has a
                # kind (test_every_path_parameter_has_a_kind).
                value = "junk" if kind is None else \
                    await self.world.value(kind, fresh=value == FRESH)
            path = path.replace("{" + name + "}", quote(value, safe="", errors="surrogatepass"))
        if case.query:
            items = [(k, v if isinstance(v, str) else encode(v, resolve).decode())
                     for k, v in case.query]
            path += "?" + "&".join(f"{quote(k, safe='', errors='surrogatepass')}="
                                   f"{quote(v, safe='', errors='surrogatepass')}"
                                   for k, v in items)
        headers: list[tuple[str, bytes]] = []
        names = {k.lower() for k, _ in case.headers}
        if "x-auth-token" not in names:
            headers.append(("X-Auth-Token", self.world.tokens[case.persona].encode()))
        if case.content_type is not None:
            headers.append(("Content-Type", case.content_type.encode("utf-8", "surrogatepass")))
        for name, value in case.headers:
            if isinstance(value, (Ref, Unique)):
                value = resolve(value)
            headers.append((name, value if isinstance(value, bytes)
                            else value.encode("utf-8", "surrogatepass")))
        if case.body is None:
            body = None
        elif isinstance(case.body, bytes):
            body = case.body
        else:
            body = encode(case.body, resolve)
        return Sent(case, case.target.method, path, headers, body)

    async def send(self, case: Case) -> Sent | None:
        try:
            sent = await self.render(case)
        except SetupError as error:
            # A resource the case needs could not be made (an earlier request
            # changed the world): not a finding; start the next example afresh.
            self.stats.skipped += 1
            self.stats.setup_errors.append(str(error)[:300])
            self.dirty = True
            return None
        assert self.world.client is not None
        self.world.errors.drain()
        started, cpu = time.monotonic(), time.process_time()
        resp = await self.world.client.request(sent.method, sent.url, content=sent.body,
                                               headers=sent.headers)
        sent.elapsed = time.monotonic() - started
        sent.cpu = time.process_time() - cpu
        sent.status = resp.status_code
        sent.response = resp.text
        sent.errors = [log_line(r) for r in self.world.errors.drain()]
        self.stats.requests += 1
        self.stats.by_status[sent.status] = self.stats.by_status.get(sent.status, 0) + 1
        if sent.status < 300:
            route = str(case.target)
            self.stats.ok_by_route[route] = self.stats.ok_by_route.get(route, 0) + 1
        return sent

    async def _slow_again(self, sent: Sent) -> bool:
        """Whether a refused request found slow is slow sent once more (a
        refusal changes nothing, so it may be). The CPU measured is the
        process's: a cost paid once beside it — a freshly rebuilt cloud's
        start-up work, a first use — is not the request's (seen in CI: a 400
        at 2.5 s of CPU that Hypothesis, sending it again, did not see again)."""
        assert self.world.client is not None
        cpu = time.process_time()
        await self.world.client.request(sent.method, sent.url, content=sent.body,
                                        headers=sent.headers)
        return time.process_time() - cpu > self.slow

    def check(self, sent: Sent) -> list[Finding]:
        out = []
        route = str(sent.case.target)
        if sent.status >= 500:
            error, frame = self._logged(sent)
            out.append(Finding("5xx", route, sent.status, error, frame, sent))
        # CPU time, not wall time: the machine's other work must not fail the
        # fuzz, and what holds the event loop (a backtracking regex) burns CPU.
        if sent.cpu > self.slow:
            out.append(Finding("slow", route, sent.status, f"took {sent.cpu:.1f}s of CPU "
                               f"(limit {self.slow}s)", "", sent))
        return out

    def _logged(self, sent: Sent) -> tuple[str, str]:
        """The first error logged while the request ran: the cause, where a
        service the API called failed first (the API then logs a RemoteError)."""
        return sent.errors[0] if sent.errors else ("", "")

    # -- listings ------------------------------------------------------------------
    async def broken_listings(self, services: set[str] | None = None) -> list[Finding]:
        """Findings for the listings that do not answer 200 (read concurrently:
        each waits on a database thread)."""
        client = self.world.client
        assert client is not None
        wanted = listings(self.world, services)
        self.world.errors.drain()
        answers = await asyncio.gather(*[
            client.get(path, headers={"X-Auth-Token": self.world.tokens[persona]})
            for persona, path in wanted])
        records = self.world.errors.drain()
        out = []
        for (persona, path), resp in zip(wanted, answers):
            if resp.status_code == 200:
                continue
            mine = [r for r in records if isinstance(r.args, tuple) and len(r.args) == 2
                    and path.split("?")[0] == r.args[1]]
            error, frame = log_line(mine[-1]) if mine else ("", "")
            where = f"GET {path.replace(self.world.seeds['server'], '{seed server}')} as {persona}"
            detail = f"listing answered: {clip(resp.text, 300)}"
            if resp.status_code == 404 and self.world.seeds["server"] in path:
                detail += f"; the seed server in the database: " \
                          f"{await self.world.server_story(self.world.seeds['server'])}"
            out.append(Finding("listing", where, resp.status_code, error, frame, None,
                               detail=detail))
        return out

    async def bisect(self, sent: list[Sent]) -> Sent | None:
        """The one request of an example that, replayed alone on a fresh world,
        breaks a listing; None if none does on its own."""
        suspects = [s for s in sent if s.method != "GET" and (s.status < 300 or s.status >= 500)]
        await self.world.rebuild()
        self.stats.rebuilds += 1
        for suspect in suspects:
            again = await self.send(suspect.case)
            if again is not None and await self.broken_listings():
                return again
        return None


def _plainer(case: Case) -> list[Case]:
    """Variants of ``case`` with one thing fewer each: a header, a query item,
    a junk path parameter (back to the seed)."""
    def without(note: str) -> tuple[str, ...]:
        return tuple(m for m in case.mutations if not m.startswith(note))
    out = [replace(case, headers=case.headers[:i] + case.headers[i + 1:],
                   mutations=without(f"header {name}:"))
           for i, (name, _) in enumerate(case.headers)]
    out += [replace(case, query=case.query[:i] + case.query[i + 1:])
            for i in range(len(case.query))]
    deleted = case.target.params[-1] if case.target.method == "DELETE" and case.params else None
    for i, (name, value) in enumerate(case.params):
        if value not in (SEED, FRESH):
            seed = FRESH if name == deleted else SEED
            out.append(replace(case, params=case.params[:i] + ((name, seed),) + case.params[i + 1:],
                               mutations=without(f"path {name}=")))
    return out


def _kinds(tree: Any) -> set[str]:
    if isinstance(tree, Ref):
        return {tree.kind}
    if isinstance(tree, dict):
        return set().union(*(_kinds(v) for v in tree.values())) if tree else set()
    if isinstance(tree, (list, tuple)):
        return set().union(*(_kinds(v) for v in tree)) if tree else set()
    return set()

