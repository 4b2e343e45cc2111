#!/usr/bin/env bash
# Installs what is missing, builds ragform (Release, native CPU) and runs `ragform demo` in the
# current directory. Extra arguments go to `ragform demo`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
unset OPENBLAS_CORETYPE
cmake -S "$root" -B "$root/build/demo" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRAGFORM_NATIVE=ON \
      -DRAGFORM_BUILD_TESTS=OFF -DRAGFORM_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build/demo" -j "$(nproc)" --target ragform
exec "$root/build/demo/bin/ragform" demo "$@"
