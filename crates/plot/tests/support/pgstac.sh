#!/usr/bin/env bash
# A private pgstac + STAC API for the tests and the scale benchmark.
#
#   pgstac.sh start DIR   initdb a cluster in DIR, start postgres on a unix socket in DIR and a
#                         free 127.0.0.1 port, `pypgstac migrate`, start stac-fastapi-pgstac under
#                         uvicorn on another free 127.0.0.1 port (transactions extension on), wait
#                         until /conformance answers, then write DIR/env (STAC_API_URL, PGSTAC_DSN).
#   pgstac.sh stop DIR    kill the API and postgres (and reap them); DIR stays for the caller.
#   pgstac.sh check       exit 0 when everything needed is installed, else print why and exit 3.
#   pgstac.sh start-pg DIR  only the PostgreSQL part (no pgstac, no API; for toolgate's own
#                         session state tables): writes DIR/env with PG_DSN.
#   pgstac.sh check-pg    exit 0 when PostgreSQL is installed, else print why and exit 3.
#
# The server is stac-fastapi-pgstac: it is the reference STAC API on pgstac (maintained with
# pgstac by the same people, released against each pgstac version), installs from PyPI into the
# test venv like the other Python test clients, and has the Transactions extension. rustac's
# server would need its pgstac feature built with this workspace's tree of crates.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$(dirname "$0")/../../../.." && pwd)"
VENV="${TOOLGATE_TEST_VENV:-$ROOT/.tools/venv}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"

check() {
  local missing=()
  [ -x "$PGBIN/initdb" ] || missing+=("PostgreSQL 15 ($PGBIN/initdb)")
  ls /usr/share/postgresql/15/extension/postgis.control >/dev/null 2>&1 ||
    missing+=("PostGIS (Debian package postgresql-15-postgis-3)")
  [ -x "$VENV/bin/pypgstac" ] || missing+=("pypgstac in $VENV")
  "$VENV/bin/python" -c 'import stac_fastapi.pgstac.app, uvicorn' 2>/dev/null ||
    missing+=("stac-fastapi-pgstac + uvicorn in $VENV")
  if [ ${#missing[@]} -gt 0 ]; then
    echo "not installed: ${missing[*]} (bash .ci/install-test-clients installs them)"
    exit 3
  fi
}

free_port() {
  local py="$VENV/bin/python"; [ -x "$py" ] || py=python3
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# postgres refuses to run as root: as root, the cluster belongs to the `postgres` user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

check_pg() {
  if [ ! -x "$PGBIN/initdb" ]; then
    echo "not installed: PostgreSQL 15 ($PGBIN/initdb) (bash .ci/install-test-clients installs it)"
    exit 3
  fi
  command -v python3 >/dev/null || { echo "not installed: python3"; exit 3; }
}

# initdb + start postgres in DIR; prints the DSN. No parallel query by default
# (PGSTAC_PARALLEL_WORKERS): on two cores shared with the API, starting workers for a search
# costs more than they save (at 10^5 plots a text search took 76 ms with them, 36 ms without).
# No JIT by default (PGSTAC_JIT): a broad search's plan costs more than jit_above_cost, and
# compiling it took ~57 ms of a 140 ms query at 10^6 (text search p99 171 ms with it, 87 without).
start_postgres() {
  local dir="$1"
  local data="$dir/pgdata" sock="$dir/sock"
  mkdir -p "$data" "$sock"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir" "$data" "$sock"; chmod 755 "$dir"; fi
  as_pg "$PGBIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1
  local pgport; pgport="$(free_port)"
  as_pg "$PGBIN/pg_ctl" -D "$data" -l "$dir/postgres.log" -w -t 60 \
    -o "-k $sock -p $pgport -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=${PGSTAC_SHARED_BUFFERS:-128MB} -c max_parallel_workers_per_gather=${PGSTAC_PARALLEL_WORKERS:-0} -c jit=${PGSTAC_JIT:-off}" \
    start >/dev/null
  echo "postgresql://postgres@127.0.0.1:$pgport/postgres"
}

start_pg() {
  local dir="$1"
  check_pg
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local dsn; dsn="$(start_postgres "$dir")"
  printf 'PG_DSN=%s\n' "$dsn" >"$dir/env"
  echo "$dsn"
}

start() {
  local dir="$1"
  check
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local dsn; dsn="$(start_postgres "$dir")"
  local pgport="${dsn##*:}"; pgport="${pgport%%/*}"
  "$VENV/bin/pypgstac" migrate --dsn "$dsn" >"$dir/migrate.log" 2>&1
  local apiport; apiport="$(free_port)"
  (
    cd "$dir"
    export PGUSER=postgres PGPASSWORD=x PGHOST=127.0.0.1 PGPORT="$pgport" PGDATABASE=postgres
    export ENABLE_TRANSACTIONS_EXTENSIONS="${PGSTAC_TRANSACTIONS:-true}"
    # Items are hydrated (merged with their collection's base item) by the API in Python, not
    # by pgstac's PL/pgSQL: at 10^6 items a 50-match search took 31 ms in the database with
    # hydration and `fields` applied there, 9 ms without (stac-fastapi-pgstac's documented
    # USE_API_HYDRATE setting; PGSTAC_API_HYDRATE=false restores the default).
    export USE_API_HYDRATE="${PGSTAC_API_HYDRATE:-true}"
    export TOOLGATE_ASSET_DIR="$dir/assets"
    # Every search extension (filter: CQL2; pagination: the `next` link), plus Transactions,
    # plus the same-origin asset store of stac_api_app.py.
    exec "$VENV/bin/python" -m uvicorn stac_api_app:create_app --factory --app-dir "$HERE" --host 127.0.0.1 --port "$apiport" \
      --log-level warning
  ) >"$dir/api.log" 2>&1 &
  echo $! >"$dir/api.pid"
  local url="http://127.0.0.1:$apiport/"
  for _ in $(seq 1 300); do
    if "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1]+'conformance', timeout=2)" "$url" 2>/dev/null; then
      printf 'STAC_API_URL=%s\nPGSTAC_DSN=%s\n' "$url" "$dsn" >"$dir/env"
      echo "$url"
      return 0
    fi
    if ! kill -0 "$(cat "$dir/api.pid")" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "the STAC API did not start; its log:" >&2
  tail -20 "$dir/api.log" >&2
  stop "$dir"
  exit 1
}

stop() {
  local dir="$1"
  if [ -f "$dir/api.pid" ]; then
    local pid; pid="$(cat "$dir/api.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/api.pid"
  fi
  if [ -f "$dir/pgdata/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$dir/pgdata" -m immediate -w stop >/dev/null 2>&1 || true
  fi
}

case "${1:-}" in
  start) start "${2:?usage: pgstac.sh start DIR}" ;;
  start-pg) start_pg "${2:?usage: pgstac.sh start-pg DIR}" ;;
  check-pg) check_pg ;;
  stop) stop "${2:?usage: pgstac.sh stop DIR}" ;;
  check) check ;;
  *) echo "usage: pgstac.sh start DIR | start-pg DIR | stop DIR | check | check-pg" >&2; exit 2 ;;
esac
