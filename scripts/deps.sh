#!/usr/bin/env bash
# Installs ragform's Debian bookworm build and test dependencies, only those missing.
# Non-interactive; needs root (or sudo). Safe to run again.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libpcre2-dev nlohmann-json3-dev libsqlite3-dev zlib1g-dev libfmt-dev
      libcpp-httplib-dev libssl-dev libbrotli-dev libyaml-cpp-dev libgumbo-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      libfaiss-dev libopenblas-dev  # retrieval: FAISS dense indexes (OpenBLAS, not the reference BLAS)
      clang clang-format libclang-rt-14-dev
      chromium   # headless Chromium for the report screenshot test
      pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-wheel python3-venv
      python3-setuptools python3-pandas)  # the Python package (python/, docs/python.md)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ragform: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
