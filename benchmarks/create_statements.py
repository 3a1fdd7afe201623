"""Statements (pg_stat_statements of a fresh database), transactions and CPU
per ``POST /servers`` of the API alone: an in-process cloud with no conductor
(the build cast goes nowhere), build admission off, ``networks: none``, five
creates to warm up, then N measured. For the tree on PYTHONPATH; compare two
trees by running each, alternating (under ``flock /tmp/bench.lock``).

    PYTHONPATH=/path/to/tree python benchmarks/create_statements.py postgresql 200
"""
import asyncio, collections, re, sys, tempfile, time
from pathlib import Path
import sqlalchemy as sa
from cirrus.bootstrap import Cloud
from tests.conftest import Api, make_settings
from tests.databases import PostgresDatabases, SQLiteDatabases
from tests.functional.servers import server_body, upload_image


async def main(kind: str, n: int, dbs, work, settings) -> None:
    cloud = Cloud(settings, roles=())
    await cloud.start()
    try:
        api = Api(cloud)
        async with await api.as_user("demo") as demo:
            image = await upload_image(demo)
            body = server_body(image, networks="none")
            hdr = {"OpenStack-API-Version": "compute 2.37"}
            for _ in range(5):
                r = await demo.post("/compute/v2.1/servers", json=body, headers=hdr)
                assert r.status_code == 202, r.text
            def snap():
                eng = sa.create_engine(cloud.db.engine.url.set(database="postgres"))
                with eng.connect() as c:
                    out = {q: n for q, n in c.execute(sa.text(
                        "SELECT query, calls FROM pg_stat_statements WHERE dbid = "
                        "(SELECT oid FROM pg_database WHERE datname = :d)"),
                        {"d": cloud.db.engine.url.database})}
                eng.dispose()
                return out
            before = snap() if kind == "postgresql" else {}
            seen = collections.Counter(); txs = [0]
            def note(conn, cursor, statement, *a):
                s = re.sub(r"\s+", " ", statement)[:70]
                seen[s] += 1
            sa.event.listen(cloud.db.engine, "before_cursor_execute", note)
            sa.event.listen(cloud.db.engine, "begin", lambda conn: txs.__setitem__(0, txs[0] + 1))
            t0 = time.process_time()
            for _ in range(n):
                r = await demo.post("/compute/v2.1/servers", json=body, headers=hdr)
                assert r.status_code == 202, r.text
            cpu = time.process_time() - t0
            if kind == "postgresql":
                after = snap()
                for q, c in after.items():
                    d = c - before.get(q, 0)
                    if d and "pg_stat_statements" not in q:
                        seen[re.sub(r"\s+", " ", q)[:90]] += d
        print(f"{kind}: {sum(seen.values())/n:.2f} statements/POST (SQLAlchemy-visible), "
              f"{txs[0]/n:.2f} transactions/POST, {cpu/n*1e6:.0f} us CPU/POST (client incl.)")
        for s, c in seen.most_common():
            print(f"  {c/n:5.2f}  {s}")
    finally:
        await cloud.stop()

kind = sys.argv[1]
work = Path(tempfile.mkdtemp(prefix="create6-"))
dbs = PostgresDatabases(work) if kind == "postgresql" else SQLiteDatabases(work)
state = work / "state"; state.mkdir()
settings = make_settings(state, dbs, quota_instances=-1, quota_cores=-1, quota_ram=-1, build_backlog_limit=0)
try:
    asyncio.run(main(kind, int(sys.argv[2]), dbs, work, settings))
finally:
    dbs.drop(settings)
