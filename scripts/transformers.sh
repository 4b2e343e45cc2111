#!/usr/bin/env bash
# Installs the papers' own stack, Hugging Face transformers on torch (CPU), the second reference
# for the engine (docs/engine.md, "Against Hugging Face transformers"), from the Python package
# registry into a virtual environment of ragform's own beside the models (never the checkout,
# never the system Python):
#
#   $RAGFORM_MODELS_HOME (default ${XDG_CACHE_HOME:-$HOME/.cache}/ragform)
#     venv-transformers/   Debian's python3 venv: torch, transformers, accelerate (transformers'
#                          GGUF loader needs it), gguf, sentence-transformers, numpy, pytest,
#                          setuptools (to build ragform's module into it), all pinned
#
# Cost: about 5.8 GB on disk, 3-4 minutes on a machine that downloads at ~100 MB/s. torch is the
# registry's CUDA build (2.15.0+cu132 with its nvidia-* libraries, which it loads even on a CPU):
# the registry has no CPU-only wheel, and torch installed without them does not import.
#
# Usage:
#   scripts/transformers.sh            install what is missing (quiet when everything is there)
#   scripts/transformers.sh --print    install if needed, then print a shell assignment:
#                                        RAGFORM_TRANSFORMERS_PYTHON=<venv>/bin/python
#   scripts/transformers.sh --check    exit 0 when the pinned stack is installed, 1 when not
#                                      (installs nothing, prints nothing)
# Safe to run again. Only this script reaches the registry; the tests never download.
set -euo pipefail
print=0
check=0
case "${1:-}" in
  --print) print=1 ;;
  --check) check=1 ;;
  "") ;;
  -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "ragform transformers.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

home="${RAGFORM_MODELS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ragform}"
venv="$home/venv-transformers"
py=/usr/bin/python3  # Debian's interpreter (python3-venv comes from scripts/deps.sh)

# Pinned: the agreement docs/engine.md states belongs to these versions. transformers 5.x loads
# Gemma 3's text model from GGUF (dequantised to float); accelerate is its loader's requirement.
pkgs=(torch==2.15.0 transformers==5.23.0 accelerate==1.15.0 gguf==0.19.0
      sentence-transformers==6.2.0 numpy==2.4.6 pytest==9.2.0 setuptools==84.2.1)

say() { echo "ragform transformers.sh: $*" >&2; }

stamp="$venv/.ragform-packages"
want="${pkgs[*]}"
installed() { [[ -x "$venv/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; }

if ((check)); then
  installed
  exit
fi

if ! installed; then
  if [[ ! -x "$venv/bin/python" ]]; then
    say "creating $venv"
    mkdir -p "$home"
    "$py" -m venv "$venv"
  fi
  say "installing ${pkgs[*]} (about 5.8 GB with torch's CUDA libraries; a few minutes)"
  log="$(mktemp)"
  # One pip call: one dependency resolution over the whole pinned set.
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pkgs[@]}" \
    >"$log" 2>&1; then
    say "cannot install from the package registry:" \
      "$(grep -m1 -E 'ERROR|error' "$log" || tail -n1 "$log")"
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  # torch must import (a CUDA library missing from its wheel set would show here, not in a test).
  if ! out="$("$venv/bin/python" -c 'import torch, transformers' 2>&1)"; then
    say "installed, but torch or transformers does not import: $(tail -n1 <<<"$out")"
    exit 1
  fi
  echo "$want" >"$stamp"
fi

if ((print)); then
  printf 'RAGFORM_TRANSFORMERS_PYTHON=%q\nexport RAGFORM_TRANSFORMERS_PYTHON\n' "$venv/bin/python"
fi
