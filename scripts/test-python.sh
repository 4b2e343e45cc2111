#!/usr/bin/env bash
# The Python package's tests (python/tests, docs/python.md): a venv from Debian's python3 with the
# system site-packages (numpy, pytest, pandas come from Debian; no package index is needed),
# `pip install --no-build-isolation --no-index ./python` building _ragform in an existing CMake
# tree (default build/ci: the library objects are reused, nothing is compiled twice), then pytest.
# The tests compare against the CLI of the same tree: RAGFORM_BIN (default <tree>/bin/ragform).
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${RAGFORM_CMAKE_BUILD_DIR:-build/ci}
venv=build/venv
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
RAGFORM_CMAKE_BUILD_DIR=$tree "$venv/bin/python" -m pip install -q --no-build-isolation --no-index \
  --force-reinstall --no-deps ./python
export RAGFORM_BIN=${RAGFORM_BIN:-$PWD/$tree/bin/ragform}
# From outside the checkout, so `import ragform` is the installed package, not python/ragform.
(cd build && "../$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests "$@")
