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


@pytest.fixture(scope="session")
def minilm_gguf():
    p = os.environ.get("RAGFORM_MINILM", "")
    if not p or not Path(p).is_file():
        pytest.skip("RAGFORM_MINILM is not set or missing: eval \"$(scripts/models.sh --print)\"")
    return p


def bert_dir_from_gguf(path, out):
    """A Hugging Face BERT folder (config.json, model.safetensors, vocab.txt, tokenizer_config
    .json) with the tensors and vocabulary of a ragform/llama.cpp `bert` GGUF: the inverse of
    scripts/convert-encoder.py (its names and its phantom-space vocabulary), so transformers and
    sentence-transformers run the very weights ragform.Encoder runs. hidden_act is "gelu" (erf),
    as the original models are."""
    import gguf
    from safetensors.numpy import save_file
    r = gguf.GGUFReader(path)

    def field(key, default=None):
        f = r.fields.get(key)
        return default if f is None else f.contents()

    arch = field("general.architecture")
    assert arch == "bert", f"{path}: architecture {arch}, not bert"
    n_layer = int(field("bert.block_count"))
    tokens, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    vocab = []
    for t, kind in zip(tokens, types):
        if kind == int(gguf.TokenType.NORMAL):
            vocab.append(t[1:] if t.startswith("\u2581") else "##" + t)
        else:  # CONTROL ([CLS], [SEP], ...) and UNUSED placeholders stay as they are
            vocab.append(t)
    top = {"token_embd": "embeddings.word_embeddings",
           "position_embd": "embeddings.position_embeddings",
           "token_types": "embeddings.token_type_embeddings",
           "token_embd_norm": "embeddings.LayerNorm"}
    layer = {"attn_q": "attention.self.query", "attn_k": "attention.self.key",
             "attn_v": "attention.self.value", "attn_output": "attention.output.dense",
             "attn_output_norm": "attention.output.LayerNorm",
             "ffn_up": "intermediate.dense", "ffn_down": "output.dense",
             "layer_output_norm": "output.LayerNorm"}
    tensors = {}
    for t in r.tensors:
        stem, suffix = t.name.rsplit(".", 1)
        if stem in top:
            name = top[stem]
        elif stem.startswith("blk."):
            _, i, sub = stem.split(".", 2)
            name = f"encoder.layer.{int(i)}.{layer[sub]}"
        else:
            continue  # a classifier head: not part of the encoder
        assert t.tensor_type.name == "F32", \
            f"{t.name}: {t.tensor_type.name} (an F32 file is needed)"
        tensors[f"{name}.{suffix}"] = np.ascontiguousarray(np.asarray(t.data, dtype=np.float32))
    cfg = {"architectures": ["BertModel"], "model_type": "bert",
           "_name_or_path": f"{field('general.name', 'bert')} (from {Path(path).name})",
           "vocab_size": len(vocab), "hidden_size": int(field("bert.embedding_length")),
           "num_hidden_layers": n_layer,
           "num_attention_heads": int(field("bert.attention.head_count")),
           "intermediate_size": int(field("bert.feed_forward_length")), "hidden_act": "gelu",
           "max_position_embeddings": int(field("bert.context_length")),
           "type_vocab_size": int(field("tokenizer.ggml.token_type_count", 2)),
           "layer_norm_eps": float(field("bert.attention.layer_norm_epsilon")),
           "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
           "pad_token_id": int(field("tokenizer.ggml.padding_token_id", 0))}
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=1))
    (out / "vocab.txt").write_text("".join(v + "\n" for v in vocab), encoding="utf-8")
    ids = {k: int(field(f"tokenizer.ggml.{k}_token_id")) for k in
           ("bos", "seperator", "unknown", "padding", "mask")}
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(field("tokenizer.ggml.normalizer.lowercase", True)),
        "strip_accents": bool(field("tokenizer.ggml.normalizer.strip_accents", True)),
        "cls_token": vocab[ids["bos"]], "sep_token": vocab[ids["seperator"]],
        "unk_token": vocab[ids["unknown"]], "pad_token": vocab[ids["padding"]],
        "mask_token": vocab[ids["mask"]],
        "model_max_length": int(field("sentence_transformers.max_seq_length", 512))}))
    save_file(tensors, str(out / "model.safetensors"))
    return {"max_seq_length": field("sentence_transformers.max_seq_length"),
            "pooling": int(field("bert.pooling_type", 1)),
            "normalize": bool(field("sentence_transformers.normalize", False))}


@pytest.fixture(scope="session")
def minilm_st(minilm_gguf):
    """sentence-transformers' SentenceTransformer over the MiniLM GGUF's weights (a BERT folder
    made by bert_dir_from_gguf in RAGFORM_TRANSFORMERS_CACHE): its Transformer module, mean
    pooling and, as the file records, Normalize and max_seq_length."""
    require_stack()
    st = pytest.importorskip("sentence_transformers", reason=INSTALL)
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    cache = Path(os.environ.get("RAGFORM_TRANSFORMERS_CACHE") or
                 Path(minilm_gguf).parent.parent / "transformers")
    out = cache / (Path(minilm_gguf).stem + "-hf")
    stamp = out / "source.json"
    src = f"{Path(minilm_gguf).resolve()} {os.path.getsize(minilm_gguf)} " \
          f"{int(os.path.getmtime(minilm_gguf))}"
    meta = None
    if stamp.is_file():
        saved = json.loads(stamp.read_text())
        if saved.get("source") == src:
            meta = saved["meta"]
    if meta is None:
        meta = bert_dir_from_gguf(minilm_gguf, out)
        stamp.write_text(json.dumps({"source": src, "meta": meta}))
    assert meta["pooling"] == 1, meta  # mean: the only pooling this fixture builds
    tr = Transformer(str(out), max_seq_length=meta["max_seq_length"],
                     model_kwargs={"add_pooling_layer": False})  # the GGUF has no pooler
    modules = [tr, Pooling(tr.get_embedding_dimension(), "mean")]
    if meta["normalize"]:
        modules.append(Normalize())
    return st.SentenceTransformer(modules=modules, device="cpu").eval()
