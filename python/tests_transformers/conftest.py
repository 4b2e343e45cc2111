"""Fixtures of the `transformers` tier (scripts/test-transformers.sh; docs/engine.md, "Against
Hugging Face transformers"): Gemma 3 270M as an F32 GGUF, opened once per session by ragform and
by Hugging Face transformers (float32, eager attention, torch on RAGFORM_TRANSFORMERS_THREADS
threads, default 2), and prompts of real text from ../shared/data.

Without torch and transformers every test here skips, naming the install command (a test file
starts with `torch = pytest.importorskip("torch", reason=INSTALL)`; this file imports neither at
its top, so pytest starts without them); without the model it skips naming scripts/models.sh. A
missing shared file fails, as in python/tests.

Every test file of this folder may use these fixtures (the model loads once per session, ~35 s
for transformers). Measured numbers go through `measured(name, value)`: pytest prints them at the
end of the run (docs/engine.md quotes them).
"""
import gzip
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

INSTALL = ("torch and transformers are not installed: run scripts/test-transformers.sh, or "
           "scripts/transformers.sh (about 5.8 GB) and use its venv's python")
try:
    import torch
    import transformers
    import gguf  # noqa: F401  (transformers' GGUF loader needs it)
except ImportError:
    torch = transformers = None

ROOT = Path(__file__).resolve().parents[2]
THREADS = int(os.environ.get("RAGFORM_TRANSFORMERS_THREADS") or 2)
if torch is not None:
    torch.set_num_threads(THREADS)


def require_stack():
    if torch is None:
        pytest.skip(INSTALL)

_MEASURED = []


def measured(name, value):
    """Records one measured number for the end-of-run summary."""
    _MEASURED.append((name, value))


def pytest_terminal_summary(terminalreporter):
    if not _MEASURED:
        return
    terminalreporter.section("measured (ragform against transformers)")
    for name, value in _MEASURED:
        v = f"{value:.3g}" if isinstance(value, float) else str(value)
        terminalreporter.write_line(f"[measured] {name}: {v}")


def shared_file(rel):
    p = Path(os.environ.get("RAGFORM_SHARED") or ROOT.parent / "shared") / rel
    assert p.is_file(), f"missing shared file {p}"
    return p


@pytest.fixture(scope="session")
def ragform_bin():
    b = Path(os.environ.get("RAGFORM_BIN") or ROOT / "build/ci/bin/ragform")
    assert b.is_file(), f"missing CLI binary {b} (set RAGFORM_BIN)"
    return str(b)


@pytest.fixture(scope="session")
def gemma_q4():
    p = os.environ.get("RAGFORM_GEMMA", "")
    if not p or not Path(p).is_file():
        pytest.skip("RAGFORM_GEMMA is not set or missing: eval \"$(scripts/models.sh --print)\"")
    return p


@pytest.fixture(scope="session")
def gemma_f32(gemma_q4, ragform_bin):
    """Gemma 3 270M with every tensor F32, made once from RAGFORM_GEMMA by `ragform quantize
    --type f32` and cached in RAGFORM_TRANSFORMERS_CACHE (scripts/test-transformers.sh: the
    build tree's transformers/; by default the models home's)."""
    cache = Path(os.environ.get("RAGFORM_TRANSFORMERS_CACHE") or
                 Path(gemma_q4).parent.parent / "transformers")
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "gemma-3-270m-f32.gguf"
    src_stamp = f"{Path(gemma_q4).resolve()} {os.path.getsize(gemma_q4)} " \
                f"{int(os.path.getmtime(gemma_q4))} by ragform quantize --type f32"
    stamp = out.with_suffix(".source")
    if out.is_file() and stamp.is_file() and stamp.read_text() == src_stamp:
        return str(out)
    stamp.unlink(missing_ok=True)
    # The verb writes OUT.tmp and renames it: `out` is whole or absent.
    r = subprocess.run([ragform_bin, "quantize", gemma_q4, str(out), "--type", "f32"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"ragform quantize: {r.stderr}"
    stamp.write_text(src_stamp)
    return str(out)


@pytest.fixture(scope="session")
def hf_tokenizer(gemma_f32):
    require_stack()
    p = Path(gemma_f32)
    return transformers.AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)


@pytest.fixture(scope="session")
def hf_model(gemma_f32):
    """transformers' Gemma3ForCausalLM on the same file, float32, eager attention (the papers'
    setting: SDPA computes no attention weights), on the CPU."""
    require_stack()
    p = Path(gemma_f32)
    m = transformers.AutoModelForCausalLM.from_pretrained(
        str(p.parent), gguf_file=p.name, dtype=torch.float32, attn_implementation="eager")
    return m.eval()


@pytest.fixture(scope="session")
def native(gemma_f32):
    """ragform with transformers' rounding of RoPE angles and GELU (numerics="transformers")."""
    import ragform
    return ragform.Model(gemma_f32, threads=THREADS, numerics="transformers")


@pytest.fixture(scope="session")
def native_ggml(gemma_f32):
    """ragform as it runs by default: llama.cpp's numbers."""
    import ragform
    return ragform.Model(gemma_f32, threads=THREADS)


@pytest.fixture(scope="session")
def nq_records():
    out = []
    with gzip.open(shared_file("data/lost-in-the-middle/nq-open-oracle.jsonl.gz"), "rt") as f:
        for line in f:
            out.append(json.loads(line))
            if len(out) == 40:
                break
    return out


@pytest.fixture(scope="session")
def qa_prompt(nq_records):
    """qa_prompt(min_tokens, count, question=0): lost-in-the-middle's QA prompt over NQ-Open gold
    passages (records question+1, question+2, ... as documents, the question's own passage
    first), with documents added until it has at least min_tokens tokens by `count`."""
    tpl = shared_file("data/lost-in-the-middle/qa.prompt").read_text()

    def build(min_tokens, count, question=0):
        q = nq_records[question]
        docs = [q] + [r for i, r in enumerate(nq_records) if i != question]
        for k in range(1, len(docs) + 1):
            lines = [f"Document [{i + 1}](Title: {d['ctxs'][0]['title']}) {d['ctxs'][0]['text']}"
                     for i, d in enumerate(docs[:k])]
            prompt = tpl.format(search_results="\n".join(lines), question=q["question"])
            if count(prompt) >= min_tokens:
                return prompt
        raise AssertionError(f"40 documents give fewer than {min_tokens} tokens")
    return build


def hf_forward(model, ids, attentions=False):
    """One forward pass of transformers over `ids` (a list of token ids): the logits [T, V] as
    numpy float32 and, with attentions=True, the last position's attention rows per layer
    [n_layer][n_head, T]."""
    with torch.inference_mode():
        out = model(torch.tensor([ids]), output_attentions=attentions)
    logits = out.logits[0].float().numpy()
    rows = None
    if attentions:
        rows = [a[0, :, -1, :].float().numpy().copy() for a in out.attentions]
    del out
    return logits, rows


def max_abs_diff(a, b, chunk=128):
    """max |a - b| over two [T, ...] arrays (row chunks: the logits are gigabytes) and the row
    where it is."""
    assert a.shape == b.shape, (a.shape, b.shape)
    best, where = 0.0, -1
    for lo in range(0, a.shape[0], chunk):
        d = np.abs(a[lo:lo + chunk].astype(np.float64) - b[lo:lo + chunk])
        m = float(d.max())
        if m > best:
            best, where = m, lo + int(np.unravel_index(d.argmax(), d.shape)[0])
    return best, where


def softmax64(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def max_prob_diff(a, b, chunk=64):
    """max |softmax(a) - softmax(b)| over every row (next-token probabilities), in float64."""
    best = 0.0
    for lo in range(0, a.shape[0], chunk):
        best = max(best, float(np.abs(softmax64(a[lo:lo + chunk]) -
                                      softmax64(b[lo:lo + chunk])).max()))
    return best


def abs_paper(a):
    """C-NORM's Attention Balance Score of one attention row a_1..a_T (cnorm-surface-formatting,
    section 4.2): mu = sum_t ((t - 1) / (T - 1)) a_t / sum_j a_j, ABS = 1 - 2 |mu - 0.5|."""
    a = np.asarray(a, dtype=np.float64)
    T = a.shape[0]
    if T == 1:
        return 1.0
    mu = float((np.arange(T) / (T - 1) * a).sum() / a.sum())
    return 1.0 - 2.0 * abs(mu - 0.5)
