#!/usr/bin/env bash
# The `transformers` test tier (ctest -L transformers; left out of the default and CI runs): the
# engine against Hugging Face transformers on the same trained weights (docs/engine.md, "Against
# Hugging Face transformers"), every test file under python/tests_transformers/.
#   scripts/test-transformers.sh [PYTEST_ARGS...]
# 1. scripts/transformers.sh: torch, transformers and the rest of the pinned stack into
#    $RAGFORM_MODELS_HOME/venv-transformers (about 5.8 GB, a few minutes the first time; quiet
#    after), and scripts/models.sh: the Gemma 3 270M GGUF. RAGFORM_TRANSFORMERS_INSTALL=0 installs
#    nothing: without the stack the tier is skipped (exit 77, ctest's "skipped"), naming the
#    install command.
# 2. The ragform module built in a CMake tree (RAGFORM_CMAKE_BUILD_DIR, default build/ci) and
#    installed into <tree>/python-transformers (pip --target; the checkout and the venv stay as
#    they are), the CLI of the same tree as RAGFORM_BIN.
# 3. pytest with the venv's interpreter over python/tests_transformers (torch on 2 threads). The
#    F32 copy of the model (`ragform quantize ... --type f32`) is cached in <tree>/transformers/.
# Takes about 4 minutes on 2 cores once installed (transformers loads the model in ~35 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tree=${RAGFORM_CMAKE_BUILD_DIR:-build/ci}
[[ $tree == /* ]] || tree=$root/$tree
say() { echo "ragform test-transformers.sh: $*" >&2; }

if [[ "${RAGFORM_TRANSFORMERS_INSTALL:-1}" != 0 ]]; then
  eval "$(scripts/transformers.sh --print)"  # an assignment: a failed install stops the run
  eval "$(scripts/models.sh --print)"
else
  if ! scripts/transformers.sh --check; then
    say "skipped: torch and transformers are not installed" \
      "(scripts/transformers.sh installs them, about 5.8 GB)"
    exit 77
  fi
  eval "$(scripts/transformers.sh --print)"
  # The model where scripts/models.sh puts it, if it is there; else the tests skip, naming it.
  home="${RAGFORM_MODELS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ragform}"
  gemma="$home/models/gemma-3-270m-q4_k_m.gguf"
  if [[ -z "${RAGFORM_GEMMA:-}" && -s "$gemma" ]]; then export RAGFORM_GEMMA="$gemma"; fi
fi
py=$RAGFORM_TRANSFORMERS_PYTHON

if [[ ! -f $tree/CMakeCache.txt ]]; then
  say "$tree is not a configured CMake tree (cmake --preset ci)"
  exit 1
fi
site=$tree/python-transformers
RAGFORM_CMAKE_BUILD_DIR=$tree "$py" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-index --no-deps --upgrade --target "$site" ./python >/dev/null
# (setup.py builds _ragform in the tree; pip's own files go to python/build/, which git ignores.)
export RAGFORM_BIN=${RAGFORM_BIN:-$tree/bin/ragform}
export RAGFORM_TRANSFORMERS_CACHE=${RAGFORM_TRANSFORMERS_CACHE:-$tree/transformers}
export RAGFORM_TRANSFORMERS_THREADS=${RAGFORM_TRANSFORMERS_THREADS:-2}
# From outside the checkout, so `import ragform` is the installed module, not python/ragform.
cd "$tree"
PYTHONPATH=$site exec "$py" -m pytest -q -p no:cacheprovider -rs \
  "$root/python/tests_transformers" "$@"
