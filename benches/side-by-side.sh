#!/usr/bin/env bash
# The side-by-side measurements of issue #20, each row next to its anchor in the same run.
# Usage: benches/side-by-side.sh   (from the repository root, after
#        `cargo build --release --ignore-rust-version -p toolgate`)
# Anchors (optional; rows without them print toolgate alone):
#   CODEACT_PY=…/plugins/codeact/skills/monty-codeact/scripts/codeact.py  the codeact plugin's
#       monty executor (jsturtevant/copilot-skills at 8294618), run by ANCHOR_PYTHON, a Python
#       with `pydantic-monty==0.0.18` installed (the version its calling pattern works with).
#   ANCHOR_PYTHON=…/bin/python  a Python with `debrief-io` installed (debrief/debrief-future,
#       services/io with shared/schemas) for the REP parse anchor.
set -euo pipefail
cd "$(dirname "$0")/.."
TG=${TOOLGATE:-target/release/toolgate}
N=${N:-15}
M=benches/median.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"

echo "== exec: one CodeAct program, whole process =="
python3 $M "$N" "toolgate exec --code '1+1' (sandbox worker)" -- "$TG" exec --workspace "$work/ws" --code '1+1'
python3 $M "$N" "toolgate exec --in-process --code '1+1'" -- "$TG" exec --in-process --workspace "$work/ws" --code '1+1'
python3 $M "$N" "toolgate --version (process start alone)" -- "$TG" --version
python3 $M "$N" "python3 -c pass" -- python3 -c pass
if [[ -n "${CODEACT_PY:-}" && -n "${ANCHOR_PYTHON:-}" ]]; then
  python3 $M "$N" "anchor: codeact.py --code '1+1' (pydantic-monty)" -- "$ANCHOR_PYTHON" "$CODEACT_PY" --workspace "$work/ws" --code '1+1'
fi

echo "== REP import: 8 MB synthetic file, whole process =="
python3 benches/synthetic_rep.py 8 "$work/syn8.rep"
size=$(stat -c %s "$work/syn8.rep")
python3 $M 5 "toolgate import (compact GeoJSON)" -- bash -c "rm -rf '$work/store' && '$TG' import --store '$work/store' '$work/syn8.rep'"
python3 $M 5 "toolgate import --pretty" -- bash -c "rm -rf '$work/store' && '$TG' import --pretty --store '$work/store' '$work/syn8.rep'"
rm -rf "$work/store" && "$TG" import --store "$work/store" "$work/syn8.rep" >/dev/null 2>&1
echo "input $size bytes; features.geojson $(stat -c %s "$work"/store/*/features.geojson) bytes"
if [[ -n "${ANCHOR_PYTHON:-}" ]] && "$ANCHOR_PYTHON" -c 'import debrief_io' 2>/dev/null; then
  "$ANCHOR_PYTHON" -c "
import os, sys, time, debrief_io
t = time.perf_counter(); r = debrief_io.parse(sys.argv[1]); d = time.perf_counter() - t
print(f'anchor: debrief-io parse, in-process: {os.path.getsize(sys.argv[1]) / d / 1e6:.1f} MB/s ({len(r.features)} features)')" "$work/syn8.rep"
fi

echo "== binary =="
strip -o "$work/toolgate.stripped" "$TG"
echo "release binary $(stat -c %s "$TG") bytes; stripped $(stat -c %s "$work/toolgate.stripped") bytes"
