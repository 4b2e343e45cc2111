#!/usr/bin/env bash
# The `api` test tier (ctest -L api; left out of the default and CI runs): schemathesis against live
# `ragform serve` servers on loopback, driven by the servers' own GET /openapi.json.
#   scripts/api-fuzz.sh [RAGFORM_BINARY]        (default build/ci/bin/ragform)
# 1. Installs schemathesis (pinned) from the package registry with pip into a project virtual
#    environment, build/venv-api (RAGFORM_API_VENV overrides), never the system Python.
# 2. Builds a 12-passage retrieval index (bm25 + dense with tiny-bert) and starts two servers with
#    an API key: a reader (stories260K, --index, SpotlightRAG with the encoder model) and an
#    encoder (tiny-bert-nli: embeddings and rerank, --index).
# 3. Checks that every route of each document but GET /health answers 401 without the key (and
#    with a wrong one), then runs schemathesis over every operation of the document with the key:
#    fails on a 5xx, a status or content type the document does not list, a reply that does not
#    match its schema, a request the schema calls invalid that the server accepts, or an
#    operation that ignores the key. Bounded: RAGFORM_API_EXAMPLES cases per operation (default
#    25) and RAGFORM_API_SECONDS per server (default 150).
# Exit 0 when every check passed; the report (JUnit XML, failures reproduced as curl commands) is
# in build/api-fuzz/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/ci/bin/ragform}")
fixtures=$(cd "$root/.." && pwd)/shared/fixtures/models
venv=${RAGFORM_API_VENV:-$root/build/venv-api}
examples=${RAGFORM_API_EXAMPLES:-25}
seconds=${RAGFORM_API_SECONDS:-150}
out=$root/build/api-fuzz
key=api-fuzz-key-$$
start=$SECONDS

for f in stories260K.gguf tiny-bert.gguf tiny-bert-nli.gguf; do
  [[ -f "$fixtures/$f" ]] || { echo "api-fuzz: missing fixture $fixtures/$f" >&2; exit 1; }
done
[[ -x "$bin" ]] || { echo "api-fuzz: no ragform binary at $bin" >&2; exit 1; }

# 1. schemathesis in its own environment, on Debian's Python (another python3 may come first on
# PATH: pyenv's 3.11.7 raises "SystemError: AST constructor recursion depth mismatch" inside
# hypothesis as schemathesis covers a path parameter, a CPython bug, not the server's). A venv
# made from another interpreter is made again.
py="$venv/bin/python"
if ! "$py" -c 'import schemathesis, sys; sys.exit(schemathesis.__version__ != "4.32.5" or sys.base_prefix != "/usr")' 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$py" -m pip install --quiet 'schemathesis==4.32.5'
fi
st="$venv/bin/schemathesis"

rm -rf "$out"
mkdir -p "$out/work"
# A request the schema calls invalid must be refused: with a 4xx of the server's (schemathesis'
# default list lacks 413, the answer to a body over --max-body, and 408).
# The coverage phase of a path parameter (GET /v1/models/{model}) stops inside hypothesis with
# "SystemError: AST constructor recursion depth mismatch" (describing a lambda by parsing
# schemathesis' own source; a tool fault on Python 3.11, not a reply of the server's): that
# operation is fuzzed and its examples run, its coverage phase is left out.
cat >"$out/schemathesis.toml" <<'EOF'
[checks.negative_data_rejection]
expected-statuses = [400, 401, 404, 405, 408, 413]

[[operations]]
include-path-regex = "/models/\\{model\\}$"
phases.coverage.enabled = false
EOF
work=$out/work  # the index and the servers' logs (kept on failure, with the report)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ ${failed:-1} == 0 ]] && rm -rf "$work"
  return 0
}
trap cleanup EXIT

# 2. An index and the servers.
"$py" - "$work/corpus.jsonl" <<'EOF'
import json, sys
topics = ["Lily and the red ball", "Tom finds a dog", "The big tree", "A day at the sea",
          "The little cat", "Sun and rain", "The old car", "A bird sings", "Mom bakes a cake",
          "The moon at night", "Ben loses his hat", "The happy frog"]
with open(sys.argv[1], "w") as f:
    for i, t in enumerate(topics):
        f.write(json.dumps({"id": f"p{i}", "title": t,
                            "text": f"{t}. Once upon a time there was a story about {t.lower()}."}) + "\n")
EOF
"$bin" index build --corpus "$work/corpus.jsonl" -o "$work/ix" --dense -m "$fixtures/tiny-bert.gguf" \
  2>"$work/index.log" || { cat "$work/index.log" >&2; exit 1; }

# Starts `ragform serve ARGS` on a free port; sets $port.
serve() {
  local log="$work/serve-$1.log"
  shift
  "$bin" serve --port 0 --api-key "$key" "$@" 2>"$log" &
  pids+=($!)
  for _ in $(seq 1 300); do
    port=$(sed -n 's#.*listening on http://127.0.0.1:\([0-9]*\).*#\1#p' "$log")
    [[ -n "$port" ]] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "api-fuzz: the server did not start" >&2
  return 1
}

serve reader -m "$fixtures/stories260K.gguf" --index "$work/ix" \
  --spotlight-encoder model --encoder-model "$fixtures/tiny-bert.gguf" --max-tokens 32 --queue 8
reader_port=$port
serve encoder -m "$fixtures/tiny-bert-nli.gguf" --index "$work/ix"
encoder_port=$port

failed=0
for kind in reader encoder; do
  port_var=${kind}_port
  base="http://127.0.0.1:${!port_var}"
  echo "api-fuzz: $kind server at $base"
  # 3a. The key: /openapi.json itself needs it; every route of the document but /health refuses a
  # request without it (or with a wrong one) with 401.
  if ! "$py" - "$base" "$key" "$out/$kind-openapi.json" <<'EOF'; then failed=1; fi
import json, sys, urllib.request, urllib.error
base, key, save = sys.argv[1:4]
def call(method, path, auth, body=None):
    req = urllib.request.Request(base + path, method=method, data=body)
    if auth:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
status, body = call("GET", "/openapi.json", None)
assert status == 401, f"/openapi.json without the key: {status}"
status, body = call("GET", "/openapi.json", "Bearer " + key)
assert status == 200, f"/openapi.json with the key: {status}"
doc = json.loads(body)
open(save, "wb").write(body)
bad = []
n = 0
for path, item in doc["paths"].items():
    for method, op in item.items():
        open_route = op.get("security") == []
        for auth in (None, "Bearer wrong-" + key, "Basic " + key):
            s, b = call(method.upper(), path, auth, b"{}" if method == "post" else None)
            n += 1
            if open_route:
                if s != 200:
                    bad.append(f"{method.upper()} {path} (open) without the key: {s}")
            elif s != 401 or json.loads(b)["error"]["code"] != "invalid_api_key":
                bad.append(f"{method.upper()} {path} with {auth!r}: {s}")
for p in ("/nowhere", "/v1/embeddings" if "/v1/embeddings" not in doc["paths"] else "/v1/x"):
    s, _ = call("GET", p, None)
    n += 1
    if s != 401:
        bad.append(f"GET {p} (unknown) without the key: {s} (401 before 404)")
print(f"api-fuzz: key check: {n} requests without or with a wrong key, {len(bad)} wrong")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
  # 3b. schemathesis over every operation of the document, from $out: its example database
  # (.schemathesis/) goes there, not into the checkout.
  if ! (cd "$out" && "$st" --config-file "$out/schemathesis.toml" run "$base/openapi.json" \
      -H "Authorization: Bearer $key" \
      --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection,unsupported_method,allow_header_conformance,ignored_auth \
      --max-examples "$examples" --max-time "$seconds" --seed 40 \
      --phases examples,coverage,fuzzing --workers 2 \
      --request-timeout 60 --suppress-health-check all \
      --report junit --report-junit-path "$out/$kind-junit.xml" \
      --output-truncate false) 2>&1 | tee "$out/$kind.log"; then
    failed=1
  fi
  if ! "$py" -c 'import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=10)' "$base/health"; then
    echo "api-fuzz: the $kind server no longer answers /health" >&2
    failed=1
  fi
done
echo "api-fuzz: done in $((SECONDS - start)) s ($([[ $failed == 0 ]] && echo passed || echo FAILED))"
exit "$failed"
