#!/usr/bin/env bash
# Installs what is missing, builds ragform (Release, native CPU) and runs `ragform demo` in the
# current directory. Extra arguments go to `ragform demo`.
#   scripts/demo.sh --real [ARGS]   the same on the trained reader: installs Gemma 3 270M with
#                                   scripts/models.sh first and runs `ragform demo -m <it> ARGS`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
unset OPENBLAS_CORETYPE
cmake -S "$root" -B "$root/build/demo" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRAGFORM_NATIVE=ON \
      -DRAGFORM_BUILD_TESTS=OFF -DRAGFORM_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build/demo" -j "$(nproc)" --target ragform
if [[ "${1:-}" == --real ]]; then
  shift
  models_env="$("$root/scripts/models.sh" --print)"  # an assignment: a failed install stops here
  eval "$models_env"
  exec "$root/build/demo/bin/ragform" demo -m "$RAGFORM_GEMMA" "$@"
fi
exec "$root/build/demo/bin/ragform" demo "$@"
