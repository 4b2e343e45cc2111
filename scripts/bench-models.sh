#!/usr/bin/env bash
# Measures what docs/performance.md reports, in one window: the machine's ceilings (bench_peak),
# then `ragform bench` on random-weight Qwen2.5-0.5B-shape models (written once into $MODELS).
#   scripts/bench-models.sh [BUILD_DIR] [MODELS_DIR]     (defaults: build/ci, /tmp/ragform-models)
# Optional: BASELINE=/path/to/older/ragform alternates it with the current binary (-r 1 each).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
models=${2:-/tmp/ragform-models}
unset OPENBLAS_CORETYPE
mkdir -p "$models"
types=(q8_0 q4_k_m f16 bf16)
for t in "${types[@]}"; do
  [[ -f $models/q05-$t.gguf ]] ||
    "$build/bin/ragform" make-test-model --shape qwen2.5-0.5b --type "$t" -o "$models/q05-$t.gguf"
done
date -u
uptime
"$build/bench/bench_peak"
for t in "${types[@]}"; do
  echo "== $t"
  "$build/bin/ragform" bench -m "$models/q05-$t.gguf" --pp 512 --tg 32 -r 3 --taps attention
done
if [[ -n ${BASELINE:-} ]]; then
  for t in "${types[@]}"; do
    for bin in "$BASELINE" "$build/bin/ragform"; do
      echo "== $t $bin"
      "$bin" bench -m "$models/q05-$t.gguf" --pp 512 --tg 32 -r 1
    done
  done
fi
date -u
uptime
