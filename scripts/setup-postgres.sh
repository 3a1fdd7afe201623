#!/usr/bin/env bash
# Install PostgreSQL from Debian and run a cluster on loopback without systemd,
# with a `cirrus` role that may create databases. Idempotent. Prints the URL.
# A failure here is reported and tolerated: the PostgreSQL tests then skip.
# fsync=off: a throwaway test cluster (production keeps fsync and synchronous_commit on,
# docs/deployment.md). pg_stat_statements: statement costs for docs/performance.md.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive
PGDATA=${CIRRUS_PGDATA:-/var/lib/cirrus-postgres}
URL="postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus"

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql) \
        >/tmp/cirrus-postgres-install.log 2>&1 || {
        echo "setup-postgres: install failed (see /tmp/cirrus-postgres-install.log)" >&2; exit 0; }
fi
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { su postgres -s /bin/sh -c "$*"; }
if ! as_pg "$BIN/pg_isready -h 127.0.0.1 -p 5432 -q"; then
    if [ ! -f "$PGDATA/PG_VERSION" ]; then
        mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA"
        as_pg "$BIN/initdb -D $PGDATA -A trust -U postgres" >/tmp/cirrus-postgres-init.log 2>&1
    fi
    mkdir -p /var/run/postgresql && chown postgres:postgres /var/run/postgresql
    as_pg "$BIN/pg_ctl -D $PGDATA -l /tmp/cirrus-postgres.log -w -o \"-c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c shared_preload_libraries=pg_stat_statements\" start" \
        >/dev/null 2>&1 || { echo "setup-postgres: start failed (see /tmp/cirrus-postgres.log)" >&2; exit 0; }
fi
as_pg "psql -h 127.0.0.1 -U postgres -tc \"SELECT 1 FROM pg_roles WHERE rolname='cirrus'\"" | grep -q 1 || \
    as_pg "psql -h 127.0.0.1 -U postgres -c \"CREATE ROLE cirrus LOGIN CREATEDB PASSWORD 'cirrus'\"" >/dev/null
as_pg "psql -h 127.0.0.1 -U postgres -tc \"SELECT 1 FROM pg_database WHERE datname='cirrus'\"" | grep -q 1 || \
    as_pg "psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE cirrus OWNER cirrus'" >/dev/null
# Statement counts for benchmarks/boot.py (benchmarks/_statements.py) and docs/performance.md.
as_pg "psql -h 127.0.0.1 -U postgres -d cirrus -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'" \
    >/dev/null 2>&1 || true
python3 -m pip install --quiet --disable-pip-version-check 'psycopg[binary]' >/dev/null 2>&1 || true
echo "PostgreSQL ready: $URL"
