#!/usr/bin/env bash
# Scale benchmark of the STAC API catalogue (issue 21; not in CI):
#   benches/pgstac-scale.sh [N=1000000] [QUERIES=200]
# Generates N plot items (words w000..w499 in titles/tags, 25 years of times, boxes over the
# North Atlantic), starts a private postgres + pgstac + stac-fastapi-pgstac
# (crates/plot/tests/support/pgstac.sh), loads them with `pypgstac load` (pgstac's bulk loader:
# COPY into a staging table, far faster than one transaction request per item), adds a trigram
# index on the derived search text, then measures `debrief_searchPlots` (the agent tool, through
# toolgate's STAC API client) for text, time, bbox and text+time+bbox queries: p50/p99 in ms.
# Needs what `.ci/install-test-clients` installs. Everything is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000000}"
QUERIES="${2:-200}"
VENV=.tools/venv
HELPER=crates/plot/tests/support/pgstac.sh
export CARGO_INCREMENTAL=0

bash "$HELPER" check
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pgstac-scale.XXXXXX")"
chmod 755 "$WORK" # the cluster belongs to the postgres user when run as root
# KEEP=1 leaves the cluster and the API running (for EXPLAIN) and prints where.
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "kept: $WORK (stop: bash $HELPER stop $WORK/pg)"; return; fi
  bash "$HELPER" stop "$WORK/pg" || true; rm -rf "$WORK"
}
trap cleanup EXIT

# The client as users run it: a release build (a debug build adds ~3 ms of JSON per query).
cargo build -q --release -p toolgate-plot --example pgstac_scale --ignore-rust-version -j2
CLIENT="$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/examples/pgstac_scale"

echo "== generating $N items"
t0=$(date +%s.%N)
"$VENV/bin/python" - "$N" "$WORK/items.ndjson" "$WORK/collection.json" <<'PY'
import json, random, sys, datetime as dt
n, out, coll = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rnd = random.Random(21)
words = [f"w{i:03}" for i in range(500)]
roles = ["frigate", "destroyer", "submarine", "ssk", "tanker", "fishing"]
t0 = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
json.dump({"type": "Collection", "stac_version": "1.0.0", "id": "debrief", "description": "scale benchmark",
           "license": "other", "links": [], "extent": {"spatial": {"bbox": [[-180, -90, 180, 90]]},
           "temporal": {"interval": [[None, None]]}}}, open(coll, "w"))
with open(out, "w") as f:
    for i in range(n):
        a, b, c = rnd.choice(words), rnd.choice(words), rnd.choice(words)
        title = f"Exercise {a} {b} — Leg {i % 9}"
        desc = f"Generated plot {i}"
        tags = ["generated", c]
        start = t0 + dt.timedelta(seconds=rnd.randrange(25 * 365 * 86400))
        end = start + dt.timedelta(hours=rnd.randint(1, 48))
        w, s = rnd.uniform(-30, 28), rnd.uniform(30, 68)
        e, nn = w + rnd.uniform(0.1, 2), s + rnd.uniform(0.1, 2)
        plat = {"id": f"P{i % 5000}", "name": f"HMS {rnd.choice(words)}", "vessel_role": rnd.choice(roles)}
        pstrings = []
        for k in ["name", "id", "vessel_type", "vessel_role", "vessel_class", "domain"]:
            v = plat.get(k)
            if v and v not in pstrings:
                pstrings.append(v)
        iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")
        item = {"type": "Feature", "stac_version": "1.0.0", "id": f"p{i:07}", "collection": "debrief",
                "geometry": {"type": "Polygon", "coordinates": [[[w, s], [e, s], [e, nn], [w, nn], [w, s]]]},
                "bbox": [w, s, e, nn],
                "properties": {"title": title, "description": desc, "datetime": iso(start),
                               "start_datetime": iso(start), "end_datetime": iso(end),
                               "debrief:tags": tags, "debrief:platforms": [plat],
                               "debrief:search_text": f"{title} {desc} {' '.join(tags)} ".lower(),
                               "debrief:platform_text": "\n".join(pstrings).lower()},
                "links": [],
                "assets": {"features": {"href": f"/assets/debrief/p{i:07}/features.geojson",
                                        "type": "application/geo+json", "roles": ["data"]}}}
        f.write(json.dumps(item, separators=(",", ":")))
        f.write("\n")
PY
t1=$(date +%s.%N)
echo "generated in $(echo "$t1 - $t0" | bc) s ($(du -h "$WORK/items.ndjson" | cut -f1))"

echo "== starting pgstac"
PGSTAC_SHARED_BUFFERS=${PGSTAC_SHARED_BUFFERS:-1GB} bash "$HELPER" start "$WORK/pg" >/dev/null
URL="$(grep ^STAC_API_URL= "$WORK/pg/env" | cut -d= -f2-)"
DSN="$(grep ^PGSTAC_DSN= "$WORK/pg/env" | cut -d= -f2-)"
"$VENV/bin/pypgstac" load collections "$WORK/collection.json" --dsn "$DSN" --method insert >/dev/null
# Partitions by year: time windows touch only their years.
psql "$DSN" -qAtc "update pgstac.collections set partition_trunc = 'year' where id = 'debrief';"

echo "== loading $N items (pypgstac load)"
t0=$(date +%s.%N)
"$VENV/bin/pypgstac" load items "$WORK/items.ndjson" --dsn "$DSN" --method insert >/dev/null
t1=$(date +%s.%N)
LOAD_S=$(echo "$t1 - $t0" | bc)
echo "loaded in $LOAD_S s"

echo "== trigram index on debrief:search_text (LIKE '%word%' without a scan)"
t0=$(date +%s.%N)
psql "$DSN" -qAt <<'SQL'
create extension if not exists pg_trgm;
create index if not exists items_debrief_search_text_trgm on pgstac.items
  using gin (pgstac.to_text(content->'properties'->'debrief:search_text') gin_trgm_ops);
analyze pgstac.items;
SQL
t1=$(date +%s.%N)
echo "indexed in $(echo "$t1 - $t0" | bc) s"

echo "== debrief_searchPlots latency: text+time+bbox ($QUERIES queries)"
KINDS=text+time+bbox "$CLIENT" "$URL" "$QUERIES" 7 | tee "$WORK/latency.jsonl"
# Broad queries match thousands of plots at 10^6, and an exact total ("N more not shown", as the
# folder store gives it) reads every match: seconds each, so fewer of them.
BROAD=$(( QUERIES / 20 > 3 ? QUERIES / 20 : 3 ))
echo "== debrief_searchPlots latency: text, time, bbox alone ($BROAD queries each)"
KINDS=text,time,bbox "$CLIENT" "$URL" "$BROAD" 11 | tee -a "$WORK/latency.jsonl"
echo "items=$N load_s=$LOAD_S"
