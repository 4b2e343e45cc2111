#!/usr/bin/env bash
# Every number of docs/steering.md's measured tables, by the commands the doc shows: the positional
# bias curves, the HotpotQA re-ranking, and the gold-position sweeps (Found in the Middle's
# softmax allocation and ragform's proportional and top variants) on stories260K, then the same
# curve and sweep on the trained Gemma 3 270M (scripts/models.sh installs it; skipped, with the
# command, when it is absent). Every run keeps its rows in OUT/steering.sqlite (stories260K and
# tiny fixtures) and OUT/gemma.sqlite, so a second call resumes where the first stopped and
# recomputes nothing; `ragform report OUT/steering.sqlite` and `ragform report OUT/gemma.sqlite`
# draw them.
#
#   scripts/steering-results.sh [OUT]     (default OUT: ./steering-results; RAGFORM=path/to/ragform)
#   STEERING_GEMMA_LIMIT=N                (Gemma sweep items; default 40)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-steering-results}"
mkdir -p "$out"
rf="${RAGFORM:-$here/build/release/bin/ragform}"
[[ -x "$rf" ]] || rf="$here/build/ci/bin/ragform"
shared="${RAGFORM_SHARED:-$here/../shared}"
m260="$shared/fixtures/models/stories260K.gguf"
hotpot="$shared/data/hotpotqa-distractor"
nq="$shared/data/lost-in-the-middle/nq-open-oracle.jsonl.gz"
st="$out/steering.sqlite"
step() { echo "== $*" >&2; }

# Curves (K = 10): stories260K on its story needles and on HotpotQA train; two random-weight
# fixtures for the shape an untrained model gives.
step "curves"
"$rf" position-bias -m "$m260" --task needle -k 10 --limit 20 -o "$out/needle_curve.json" \
  --store "$st" --json >"$out/needle_curve.out"
"$rf" position-bias -m "$m260" --task qa --input "$hotpot/train.jsonl" -k 10 --limit 10 \
  --ctx 8192 -o "$out/hotpot_curve.json" --store "$st" --json >"$out/hotpot_curve.out"
for t in tiny-qwen2 tiny-llama; do
  "$rf" position-bias -m "$shared/fixtures/models/$t.gguf" --task needle -k 10 --limit 20 \
    -o "$out/needle_$t.json" --store "$st" >/dev/null
done

step "HotpotQA re-ranking"
"$rf" position-bias -m "$m260" --rank "$hotpot/dev.jsonl" --bias "$out/hotpot_curve.json" \
  --limit 100 --ctx 8192 --store "$st" --json >"$out/rank.json"

step "stories260K sweeps"
"$rf" position-bias -m "$m260" --task needle --sweep --bias "$out/needle_curve.json" \
  --limit 100 --store "$st" --json >"$out/sweep_softmax.json"
for s in 0.3 0.5 0.8; do
  for a in proportional top; do
    "$rf" position-bias -m "$m260" --task needle --sweep --bias "$out/needle_curve.json" \
      --allocation "$a" --share "$s" --limit 100 --store "$st" --json >"$out/sweep_${a}_$s.json"
  done
done

step "paired statistics of the sweeps"
/usr/bin/python3 "$here/scripts/sweep-paired.py" "$st" | tee "$out/sweeps_paired.txt"

gemma="${RAGFORM_GEMMA:-}"
if [[ -z "$gemma" || ! -f "$gemma" ]]; then
  echo "steering-results: Gemma 3 270M is not installed; run: eval \"\$(scripts/models.sh --print)\"" >&2
  exit 0
fi
# Gemma 3 270M on NQ (lost-in-the-middle's oracle passages, other questions' gold passages as
# distractors): the curve from the first 10 questions (300 prompts), the sweep on the first
# STEERING_GEMMA_LIMIT (--seed 2 draws other distractors than the curve's --seed 1). Nothing is
# tuned here: the temperature is the paper's.
gs="$out/gemma.sqlite"
step "Gemma 3 270M curve"
"$rf" position-bias -m "$gemma" --task qa --input "$nq" -k 10 --limit 10 --seed 1 \
  -o "$out/gemma_nq_curve.json" --store "$gs" --json >"$out/gemma_nq_curve.out"
step "Gemma 3 270M sweep (softmax)"
"$rf" position-bias -m "$gemma" --task qa --input "$nq" --sweep --bias "$out/gemma_nq_curve.json" \
  --limit "${STEERING_GEMMA_LIMIT:-40}" --seed 2 --store "$gs" --json >"$out/gemma_sweep_softmax.json"
step "Gemma 3 270M sweep (proportional 0.5)"
"$rf" position-bias -m "$gemma" --task qa --input "$nq" --sweep --bias "$out/gemma_nq_curve.json" \
  --allocation proportional --share 0.5 --limit "${STEERING_GEMMA_LIMIT:-40}" --seed 2 \
  --store "$gs" --json >"$out/gemma_sweep_proportional_0.5.json"
step "Gemma 3 270M sweep (gold: the oracle's redistribution)"
"$rf" position-bias -m "$gemma" --task qa --input "$nq" --sweep --bias "$out/gemma_nq_curve.json" \
  --allocation gold --limit "${STEERING_GEMMA_LIMIT:-40}" --seed 2 \
  --store "$out/gemma_gold.sqlite" --json >"$out/gemma_sweep_gold.json"
/usr/bin/python3 "$here/scripts/sweep-paired.py" "$gs" "$out/gemma_gold.sqlite" |
  tee "$out/gemma_sweeps_paired.txt"
# Calibrated attention as a ranker on the trained reader: HotpotQA's curve from train, recall@k on
# dev (the re-ranking experiment above, for Gemma's 32k context no --ctx past training).
step "Gemma 3 270M HotpotQA curve and re-ranking"
"$rf" position-bias -m "$gemma" --task qa --input "$hotpot/train.jsonl" -k 10 --limit 10 \
  --ctx 4096 -o "$out/gemma_hotpot_curve.json" --store "$gs" --json >"$out/gemma_hotpot_curve.out"
"$rf" position-bias -m "$gemma" --rank "$hotpot/dev.jsonl" --bias "$out/gemma_hotpot_curve.json" \
  --limit 100 --ctx 4096 --store "$gs" --json >"$out/gemma_rank.json"
echo "steering-results: done; see $out/*.json" >&2
