#!/usr/bin/env bash
# Scale benchmark of the STAC API catalogue (issues 21, 35; not in CI):
#   benches/pgstac-scale.sh [N=1000000] [QUERIES=200]
# Generates N plot items (words w000..w499 in titles/tags, 25 years of times, boxes over the
# North Atlantic) as NDJSON, starts a private postgres + pgstac + stac-fastapi-pgstac
# (crates/plot/tests/support/pgstac.sh), loads them with `toolgate catalog load --pgstac`
# (pgstac's bulk path: COPY into the collection's year partitions, two at once, then toolgate's
# trigram indexes on the derived search and platform text), then measures `debrief_searchPlots`
# (the agent tool, through toolgate's STAC API client: the page shown and the server's count) for
# text, time, bbox and text+time+bbox queries, QUERIES of each: p50/p99 in ms. The machine's load
# (`uptime`) is printed before and after: quote numbers from a machine doing nothing else.
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

# The client and the loader as users run them: release builds (a debug build adds ~3 ms of JSON
# per query, and spends most of a load turning items into rows). The loader's build leaves out
# the in-process model, which loading does not use.
cargo build -q --release -p toolgate-plot --example pgstac_scale --ignore-rust-version -j2
cargo build -q --release -p toolgate --no-default-features --ignore-rust-version -j2
TARGET="$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
CLIENT="$TARGET/release/examples/pgstac_scale"
TOOLGATE="$TARGET/release/toolgate"
echo "== machine: $(nproc) CPUs; uptime before: $(uptime)"

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

# The collection is created by the loader (through the API) and, being new and empty,
# partitioned by year there: time windows touch only their years.
echo "== loading $N items (toolgate catalog load --pgstac)"
t0=$(date +%s.%N)
TOOLGATE_DATA_DIR="$WORK/data" "$TOOLGATE" catalog load --store "$URL" --pgstac "$DSN" \
  --items "$WORK/items.ndjson"
t1=$(date +%s.%N)
LOAD_S=$(echo "$t1 - $t0" | bc)
echo "loaded and indexed in $LOAD_S s"

echo "== debrief_searchPlots latency: text+time+bbox, text, time, bbox ($QUERIES queries each)"
KINDS=text+time+bbox,text,time,bbox "$CLIENT" "$URL" "$QUERIES" 7 | tee "$WORK/latency.jsonl"
echo "items=$N load_s=$LOAD_S"
echo "== uptime after: $(uptime)"
