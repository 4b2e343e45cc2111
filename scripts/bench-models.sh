#!/usr/bin/env bash
# Measures what docs/performance.md reports, in one window: the machine's ceilings (bench_peak),
# then `ragform bench` on random-weight Qwen2.5-0.5B-shape models (written once into $MODELS).
#   scripts/bench-models.sh [BUILD_DIR] [MODELS_DIR]     (defaults: build/ci, /tmp/ragform-models)
# Optional: BASELINE=/path/to/older/ragform alternates it with the current binary (-r 1 each).
# Optional: LLAMA_BENCH=/path/to/llama-bench and LLAMA_BATCHED_BENCH=/path/to/llama-batched-bench
# (llama.cpp, built by you outside this repository) alternate llama.cpp's figures with ragform's:
# pp512/tg32 on every model (twice each, -r 3), and 16 sequences of 128 prompt + 32 generated
# tokens (`bench --parallel 16` against `llama-batched-bench -npl 16`) on Q8_0, Q4_K_M and F16.
# Optional: RAGFORM_GEMMA (scripts/models.sh --print) adds the trained Gemma 3 270M file, pp512/tg32
# alternated with LLAMA_BENCH when set; REAL_ONLY=1 benches only that file (after bench_peak).
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
threads=2
if [[ -n ${RAGFORM_GEMMA:-} ]]; then
  for r in 1 2; do
    echo "== gemma3-270m q4_k_m ragform (round $r)"
    "$build/bin/ragform" bench -m "$RAGFORM_GEMMA" --pp 512 --tg 32 -r 3 -t "$threads"
    if [[ -n ${LLAMA_BENCH:-} ]]; then
      echo "== gemma3-270m q4_k_m llama-bench (round $r)"
      "$LLAMA_BENCH" -m "$RAGFORM_GEMMA" -p 512 -n 32 -r 3 -t "$threads"
    fi
  done
  if [[ ${REAL_ONLY:-0} == 1 ]]; then date -u; uptime; exit 0; fi
fi
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
if [[ -n ${LLAMA_BENCH:-} ]]; then
  for t in "${types[@]}"; do
    for r in 1 2; do
      echo "== $t ragform (round $r)"
      "$build/bin/ragform" bench -m "$models/q05-$t.gguf" --pp 512 --tg 32 -r 3 -t "$threads"
      echo "== $t llama-bench (round $r)"
      "$LLAMA_BENCH" -m "$models/q05-$t.gguf" -p 512 -n 32 -r 3 -t "$threads"
    done
  done
fi
if [[ -n ${LLAMA_BATCHED_BENCH:-} ]]; then
  for t in q8_0 q4_k_m f16; do
    for r in 1 2; do
      echo "== $t ragform --parallel 16 (round $r)"
      "$build/bin/ragform" bench -m "$models/q05-$t.gguf" --parallel 16 --pp 128 --tg 32 -r 1 \
        -t "$threads"
      echo "== $t llama-batched-bench -npl 16 (round $r)"
      "$LLAMA_BATCHED_BENCH" -m "$models/q05-$t.gguf" -c 2560 -b 2048 -ub 512 -npp 128 -ntg 32 \
        -npl 16 -t "$threads"
    done
  done
fi
date -u
uptime
