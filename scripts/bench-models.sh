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
# Both F16 paths in one window, alternated: exact (the default) and int16 (approximate).
for r in 1 2; do
  for how in exact int16; do
    echo "== f16 --f16-gemm $how (round $r)"
    "$build/bin/ragform" bench -m "$models/q05-f16.gguf" --pp 512 --tg 32 -r 1 --f16-gemm "$how"
  done
done
# BASELINE: e.g. a build of the commit before issue 23 (f20c778), whose F16 default was int16;
# BASELINE_ENV is set for its runs (RAGFORM_F16_GEMM=fp32 selects its exact outer-product kernel).
if [[ -n ${BASELINE:-} ]]; then
  for t in "${types[@]}"; do
    for bin in "$BASELINE" "$build/bin/ragform"; do
      echo "== $t $bin"
      if [[ $bin == "$BASELINE" ]]; then
        env ${BASELINE_ENV:-} "$bin" bench -m "$models/q05-$t.gguf" --pp 512 --tg 32 -r 1
      else
        "$bin" bench -m "$models/q05-$t.gguf" --pp 512 --tg 32 -r 1
      fi
    done
  done
fi
date -u
uptime
