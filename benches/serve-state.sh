#!/usr/bin/env bash
# What `serve --state postgres://…` costs (issue 21; not in CI):
#   benches/serve-state.sh [REQUESTS=500] [ENTRIES=10000]
# Starts a private PostgreSQL (crates/plot/tests/support/pgstac.sh start-pg) and the release
# binary twice on one demo catalogue — without --state and with it — and times, per instance,
# REQUESTS sequential `GET /api/state` (a read: one catch-up round trip) and `POST /api/select`
# (a change: catch-up, append + NOTIFY, apply) over one keep-alive connection: p50/p99 in ms.
# Then it writes ENTRIES more selections through the --state instance and times a restart
# (start to the first answer, every entry replayed). Needs PostgreSQL and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS="${1:-500}"
ENTRIES="${2:-10000}"
HELPER=crates/plot/tests/support/pgstac.sh
BIN=target/release/toolgate
export CARGO_INCREMENTAL=0
cargo build -q --release -p toolgate --ignore-rust-version -j2
bash "$HELPER" check-pg
WORK="$(mktemp -d "${TMPDIR:-/tmp}/serve-state.XXXXXX")"
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  bash "$HELPER" stop "$WORK/pg" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
DSN="$(bash "$HELPER" start-pg "$WORK/pg")"
export TOOLGATE_TOKEN=serve-state-bench-token-0123456789
mkdir -p "$WORK/cat"
# The demo catalogue, written where both instances read it (its folder name is the store id).
TOOLGATE_DATA_DIR="$WORK/data0" "$BIN" catalog search --text alpha >/dev/null
cp -r "$WORK/data0/demo-store" "$WORK/cat/demo"

start() { # NAME [ARGS…] → prints the address
  local name="$1"; shift
  TOOLGATE_DATA_DIR="$WORK/data-$name" "$BIN" serve --port 0 --surface debrief --store "$WORK/cat/demo" "$@" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 1 300); do
    if grep -q '^Workbench:' "$WORK/$name.out" 2>/dev/null; then
      sed -n 's#^Workbench: http://\([^/]*\)/.*#\1#p' "$WORK/$name.out"; return 0
    fi
    sleep 0.05
  done
  cat "$WORK/$name.err" >&2; exit 1
}

measure() { # ADDR N LABEL
  python3 - "$1" "$2" "$3" "$TOOLGATE_TOKEN" <<'PY'
import http.client, json, sys, time
addr, n, label, token = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
host, port = addr.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port))
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
def req(method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
    r = c.getresponse(); data = r.read()
    assert r.status == 200, (r.status, data[:300])
plot = "stac://demo/alpha-day1/item.json"
req("POST", "/api/plots/open", {"plotId": plot})
def pct(xs, p): xs = sorted(xs); return xs[round((len(xs) - 1) * p)] * 1000
for name, call in [("GET /api/state", lambda i: req("GET", "/api/state")),
                   ("POST /api/select", lambda i: req("POST", "/api/select", {"plotId": plot, "ids": [f"track-nelson/positions/{i % 700}"]}))]:
    ts = []
    for i in range(n):
        t = time.perf_counter(); call(i); ts.append(time.perf_counter() - t)
    print(json.dumps({"instance": label, "request": name, "n": n, "p50_ms": round(pct(ts, .5), 3), "p99_ms": round(pct(ts, .99), 3)}))
PY
}

echo "== per request, $REQUESTS each"
PLAIN="$(start plain)"
measure "$PLAIN" "$REQUESTS" "in memory"
STATE="$(start state --state "$DSN")"
measure "$STATE" "$REQUESTS" "--state"

echo "== restart after $ENTRIES more journal entries"
python3 - "$STATE" "$ENTRIES" "$TOOLGATE_TOKEN" <<'PY'
import http.client, json, sys
addr, n, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host, port = addr.rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port))
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
for i in range(n):
    c.request("POST", "/api/select", body=json.dumps({"plotId": "stac://demo/alpha-day1/item.json", "ids": [f"track-nelson/positions/{i % 700}"]}), headers=h)
    r = c.getresponse(); r.read(); assert r.status == 200
PY
ROWS="$(psql "$DSN" -qAtc 'select count(*) from toolgate_session_ops')"
t0=$(date +%s.%N)
AGAIN="$(start again --state "$DSN")"
python3 - "$AGAIN" "$TOOLGATE_TOKEN" <<'PY'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port))
c.request("GET", "/api/state", headers={"Authorization": "Bearer " + sys.argv[2]})
r = c.getresponse(); body = json.loads(r.read()); assert body["activePlot"], body
PY
t1=$(date +%s.%N)
echo "{\"restart\": \"start to first answer\", \"journal_entries\": $ROWS, \"s\": $(echo "$t1 - $t0" | bc)}"
