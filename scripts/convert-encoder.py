#!/usr/bin/env python3
"""Convert a Hugging Face BERT-family encoder (BertModel, a sentence-transformers model built on
one, or BertForSequenceClassification) to a GGUF file that `ragform embed` / `ragform classify`
load (llama.cpp's `bert` architecture, docs/encoders.md).

    convert-encoder.py --model-dir DIR -o OUT.gguf [--outtype f32|f16] [--name NAME]

DIR holds the model as sentence-transformers / transformers save it: config.json,
model.safetensors (or model.safetensors.index.json and its shards), the WordPiece vocabulary
(tokenizer.json, else vocab.txt) with tokenizer_config.json / special_tokens_map.json, and for a
sentence-transformers model modules.json with its Pooling module's config.json.

What the file holds:
  - general.architecture = bert; bert.{context_length, embedding_length, block_count,
    feed_forward_length, attention.head_count, attention.layer_norm_epsilon,
    attention.causal = false, pooling_type}; tokenizer.ggml.token_type_count.
    pooling_type: the Pooling module's mode (mean / cls / lasttoken), rank for a classifier,
    else none.
  - The WordPiece vocabulary in llama.cpp's phantom-space form (the tokenizer in
    src/engine/tokenizer reads it so): a word-initial piece "foo" is stored as "\u2581foo", a
    continuation "##oo" as "oo", special tokens (CONTROL) unchanged; token types; the CLS id
    (as tokenizer.ggml.bos_token_id, the key llama.cpp and ragform read for BERT's CLS), SEP,
    UNK, PAD and MASK ids; add_bos / add_sep = true; the normaliser's lowercase and
    strip_accents flags (tokenizer.ggml.normalizer.*, read by ragform's tokenizer).
  - sentence_transformers.normalize = true when the model ends in a Normalize module, and
    sentence_transformers.max_seq_length from sentence_bert_config.json: provenance for the
    user (ragform does not normalise unless asked: `embed --normalize`; and truncates at the
    position table unless `--max-tokens N`). Both are informational keys.
  - Tensors with llama.cpp's names; matrices in --outtype (f32 default), 1-D tensors always F32.

Needs only numpy, safetensors and gguf (no torch). The output is written to OUT.tmp and renamed,
so a failed run leaves no partial file, and the same input gives the same bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

try:
    import numpy as np
    from safetensors import safe_open
    import gguf
except ImportError as e:  # pragma: no cover - environment problem
    sys.exit(f"convert-encoder.py: missing Python package ({e.name}): install numpy, safetensors "
             "and gguf (scripts/models.sh does)")


class ConvertError(Exception):
    pass


def read_json(path: Path, required: bool = True):
    if not path.is_file():
        if required:
            raise ConvertError(f"missing file: {path}")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ConvertError(f"{path}: not valid JSON ({e})")


# ---------------------------------------------------------------------------------------------
# Configuration


SUPPORTED_ARCHS = {"BertModel", "BertForMaskedLM", "BertForSequenceClassification",
                   "BertForPreTraining"}
GELU_ACTS = {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"}


def read_config(model_dir: Path) -> dict:
    cfg = read_json(model_dir / "config.json")
    archs = cfg.get("architectures") or []
    if cfg.get("model_type") != "bert" or (archs and not set(archs) & SUPPORTED_ARCHS):
        raise ConvertError(
            f"{model_dir / 'config.json'}: model_type '{cfg.get('model_type')}', architectures "
            f"{archs}: only BERT models are supported ({', '.join(sorted(SUPPORTED_ARCHS))})")
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "max_position_embeddings"):
        if not isinstance(cfg.get(key), int) or cfg[key] <= 0:
            raise ConvertError(f"{model_dir / 'config.json'}: '{key}' is missing or not a "
                               "positive integer")
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise ConvertError(f"{model_dir / 'config.json'}: hidden_size {cfg['hidden_size']} is not "
                           f"a multiple of num_attention_heads {cfg['num_attention_heads']}")
    pet = cfg.get("position_embedding_type", "absolute")
    if pet != "absolute":
        raise ConvertError(f"{model_dir / 'config.json'}: position_embedding_type '{pet}' is not "
                           "supported (only absolute)")
    act = cfg.get("hidden_act", "gelu")
    if act not in GELU_ACTS:
        raise ConvertError(f"{model_dir / 'config.json'}: hidden_act '{act}' is not supported "
                           "(the engine's FFN is GELU)")
    if cfg.get("is_decoder"):
        raise ConvertError(f"{model_dir / 'config.json'}: is_decoder = true: not an encoder")
    return cfg


def classifier_labels(cfg: dict) -> list[str] | None:
    id2label = cfg.get("id2label")
    if not id2label:
        return None
    labels = [v for _, v in sorted(((int(k), v) for k, v in id2label.items()))]
    if labels == [f"LABEL_{i}" for i in range(len(labels))]:
        return None  # transformers' default names: nothing to record
    return labels


# sentence-transformers modules: the pooling mode, the Normalize module, max_seq_length.
POOLING_MODES = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS,
                 "lasttoken": gguf.PoolingType.LAST}


def read_st_modules(model_dir: Path) -> tuple[gguf.PoolingType | None, bool, int | None]:
    modules = read_json(model_dir / "modules.json", required=False)
    if modules is None:
        return None, False, None
    pooling, normalize = None, False
    for mod in modules:
        kind = str(mod.get("type", "")).rsplit(".", 1)[-1]
        path = model_dir / mod.get("path", "")
        if kind == "Transformer":
            continue
        if kind == "Pooling":
            pc = read_json(path / "config.json")
            modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                 "weightedmean_tokens", "lasttoken") if pc.get(f"pooling_mode_{m}")]
            if isinstance(pc.get("pooling_mode"), str):
                modes = [pc["pooling_mode"]]
            modes = [{"cls_token": "cls", "mean_tokens": "mean"}.get(m, m) for m in modes]
            if len(modes) != 1 or modes[0] not in POOLING_MODES:
                raise ConvertError(f"{path / 'config.json'}: pooling {modes or 'none'} is not "
                                   "supported (one of mean, cls, lasttoken)")
            pooling = POOLING_MODES[modes[0]]
        elif kind == "Normalize":
            normalize = True
        else:
            raise ConvertError(f"{model_dir / 'modules.json'}: module '{mod.get('type')}' is not "
                               "supported (Transformer, Pooling, Normalize only)")
    sbc = read_json(model_dir / "sentence_bert_config.json", required=False) or {}
    max_seq = sbc.get("max_seq_length")
    return pooling, normalize, max_seq if isinstance(max_seq, int) and max_seq > 0 else None


# ---------------------------------------------------------------------------------------------
# Vocabulary


def token_content(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def read_vocab(model_dir: Path, n_vocab: int) -> dict:
    """The WordPiece vocabulary, its special tokens and normaliser flags."""
    tj = read_json(model_dir / "tokenizer.json", required=False)
    tcfg = read_json(model_dir / "tokenizer_config.json", required=False) or {}
    stm = read_json(model_dir / "special_tokens_map.json", required=False) or {}
    prefix = "##"
    special_texts: set[str] = set()
    if tj is not None:
        model = tj.get("model") or {}
        if model.get("type") != "WordPiece":
            raise ConvertError(f"{model_dir / 'tokenizer.json'}: tokenizer model "
                               f"'{model.get('type')}' is not WordPiece")
        prefix = model.get("continuing_subword_prefix", "##")
        vocab = model.get("vocab") or {}
        by_id: dict[int, str] = {int(i): t for t, i in vocab.items()}
        for added in tj.get("added_tokens") or []:
            by_id[int(added["id"])] = added["content"]
            if added.get("special"):
                special_texts.add(added["content"])
        norm = tj.get("normalizer") or {}
        if norm and norm.get("type") != "BertNormalizer":
            raise ConvertError(f"{model_dir / 'tokenizer.json'}: normalizer '{norm.get('type')}' "
                               "is not BertNormalizer")
        lowercase = bool(norm.get("lowercase", True))
        strip_accents = norm.get("strip_accents")
    else:
        vocab_txt = model_dir / "vocab.txt"
        if not vocab_txt.is_file():
            raise ConvertError(f"missing file: {model_dir / 'tokenizer.json'} (or vocab.txt)")
        with open(vocab_txt, encoding="utf-8") as f:
            by_id = {i: line.rstrip("\n") for i, line in enumerate(f)}
        lowercase = bool(tcfg.get("do_lower_case", True))
        strip_accents = tcfg.get("strip_accents")
    if strip_accents is None:  # BERT's rule: accents are stripped when lowercasing
        strip_accents = lowercase

    if not by_id:
        raise ConvertError(f"{model_dir}: the vocabulary is empty")
    if max(by_id) >= n_vocab:
        raise ConvertError(f"{model_dir}: token id {max(by_id)} is beyond the embedding table's "
                           f"{n_vocab} rows")

    ids: dict[str, int] = {}
    for role in ("cls", "sep", "unk", "pad", "mask"):
        text = token_content(tcfg.get(f"{role}_token")) or token_content(stm.get(f"{role}_token"))
        text = text or {"cls": "[CLS]", "sep": "[SEP]", "unk": "[UNK]", "pad": "[PAD]",
                        "mask": "[MASK]"}[role]
        found = [i for i, t in by_id.items() if t == text]
        if not found:
            if role in ("cls", "sep", "unk"):
                raise ConvertError(f"{model_dir}: the {role} token '{text}' is not in the "
                                   "vocabulary")
            continue
        ids[role] = found[0]
        special_texts.add(text)

    tokens: list[str] = []
    types: list[int] = []
    seen: set[str] = set()
    for i in range(n_vocab):
        tok = by_id.get(i)
        if tok is None:
            tok, kind = f"[PAD{i}]", gguf.TokenType.UNUSED
        elif tok in special_texts:
            kind = gguf.TokenType.CONTROL
        else:
            kind = gguf.TokenType.NORMAL
            # phantom space: word starts carry U+2581, continuations lose their prefix
            tok = tok[len(prefix):] if prefix and tok.startswith(prefix) and len(tok) > len(prefix) \
                else "\u2581" + tok
        if tok in seen:  # two HF entries mapping to one text: keep ids, mark the second unused
            tok, kind = f"[DUP{i}]", gguf.TokenType.UNUSED
        seen.add(tok)
        tokens.append(tok)
        types.append(int(kind))
    return {"tokens": tokens, "types": types, "ids": ids, "lowercase": lowercase,
            "strip_accents": bool(strip_accents)}


# ---------------------------------------------------------------------------------------------
# Tensors


def open_tensors(model_dir: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, name in file) over model.safetensors or its index's shards."""
    single = model_dir / "model.safetensors"
    index = model_dir / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        wm = read_json(index).get("weight_map") or {}
        files = sorted({model_dir / f for f in wm.values()})
        for f in files:
            if not f.is_file():
                raise ConvertError(f"missing file: {f}")
    else:
        extra = " (pytorch_model.bin is not read: it needs torch)" \
            if (model_dir / "pytorch_model.bin").is_file() else ""
        raise ConvertError(f"missing file: {single}{extra}")
    out: dict[str, tuple[Path, str]] = {}
    for f in files:
        with safe_open(str(f), framework="np") as st:
            for k in st.keys():
                out[k] = (f, k)
    return out


LAYER_MAP = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
TOP_MAP = {
    "embeddings.word_embeddings": "token_embd",
    "embeddings.position_embeddings": "position_embd",
    "embeddings.token_type_embeddings": "token_types",
    "embeddings.LayerNorm": "token_embd_norm",
}
# Dropped: the position-id buffer, and the pre-training heads (MLM / NSP).
DROP_PREFIXES = ("embeddings.position_ids", "cls.predictions.", "cls.seq_relationship.")


def gguf_name(hf: str, has_classifier: bool) -> str | None:
    name = hf[len("bert."):] if hf.startswith("bert.") else hf
    if name.endswith(".gamma"):
        name = name[:-6] + ".weight"
    elif name.endswith(".beta"):
        name = name[:-5] + ".bias"
    if name.startswith(DROP_PREFIXES):
        return None
    stem, _, suffix = name.rpartition(".")
    if suffix not in ("weight", "bias"):
        raise ConvertError(f"tensor '{hf}': unexpected name")
    if stem == "pooler.dense":  # BERT's pooler: the classifier's dense + tanh, else unused
        return f"cls.{suffix}" if has_classifier else None
    if stem == "classifier":
        return f"cls.output.{suffix}"
    if stem in TOP_MAP:
        return f"{TOP_MAP[stem]}.{suffix}"
    parts = stem.split(".")
    if len(parts) >= 4 and parts[0] == "encoder" and parts[1] == "layer" and parts[2].isdigit():
        sub = ".".join(parts[3:])
        if sub in LAYER_MAP:
            return f"blk.{int(parts[2])}.{LAYER_MAP[sub]}.{suffix}"
    raise ConvertError(f"tensor '{hf}': not a BERT tensor this converter knows")


def load_array(src: tuple[Path, str]) -> np.ndarray:
    path, key = src
    try:
        with safe_open(str(path), framework="np") as st:
            a = st.get_tensor(key)
    except (TypeError, ValueError) as e:  # e.g. bfloat16, which numpy cannot hold
        raise ConvertError(f"{path}: tensor '{key}': cannot be read with numpy ({e})")
    if a.dtype.kind != "f":
        raise ConvertError(f"{path}: tensor '{key}' has dtype {a.dtype}, expected a float type")
    return a


# ---------------------------------------------------------------------------------------------


def convert(model_dir: Path, out: Path, outtype: str, name: str | None) -> None:
    if not model_dir.is_dir():
        raise ConvertError(f"missing directory: {model_dir}")
    cfg = read_config(model_dir)
    labels = classifier_labels(cfg)
    tensors = open_tensors(model_dir)
    has_classifier = any(k.endswith("classifier.weight") for k in tensors)
    st_pooling, st_normalize, max_seq = read_st_modules(model_dir)
    if has_classifier:
        pooling = gguf.PoolingType.RANK
    elif st_pooling is not None:
        pooling = st_pooling
    else:
        pooling = gguf.PoolingType.NONE

    E, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    wanted = {"token_embd.weight", "position_embd.weight", "token_embd_norm.weight",
              "token_embd_norm.bias"}
    for il in range(L):
        for t in LAYER_MAP.values():
            wanted |= {f"blk.{il}.{t}.weight", f"blk.{il}.{t}.bias"}

    mapped: dict[str, tuple[Path, str]] = {}
    for hf in sorted(tensors):
        g = gguf_name(hf, has_classifier)
        if g is None:
            continue
        if g in mapped:
            raise ConvertError(f"tensors '{mapped[g][1]}' and '{hf}' both map to '{g}'")
        mapped[g] = tensors[hf]
    missing = sorted(wanted - set(mapped))
    if missing:
        raise ConvertError(f"{model_dir}: the weights have no {missing[0]} "
                           f"({len(missing)} tensors missing)")
    extra_layers = {g for g in mapped if g.startswith("blk.") and int(g.split(".")[1]) >= L}
    if extra_layers:
        raise ConvertError(f"{model_dir}: tensor {sorted(extra_layers)[0]} is beyond "
                           f"num_hidden_layers = {L}")

    tok_embd = load_array(mapped["token_embd.weight"])
    if tok_embd.ndim != 2 or tok_embd.shape[1] != E:
        raise ConvertError(f"token_embd has shape {tok_embd.shape}, expected (n_vocab, {E})")
    vocab = read_vocab(model_dir, tok_embd.shape[0])
    n_types = int(cfg.get("type_vocab_size", 0))

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        w = gguf.GGUFWriter(str(tmp), "bert")
        w.add_name(name or cfg.get("_name_or_path") or model_dir.name)
        w.add_file_type(gguf.LlamaFileType.ALL_F32 if outtype == "f32"
                        else gguf.LlamaFileType.MOSTLY_F16)
        w.add_context_length(cfg["max_position_embeddings"])
        w.add_embedding_length(E)
        w.add_block_count(L)
        w.add_feed_forward_length(cfg["intermediate_size"])
        w.add_head_count(cfg["num_attention_heads"])
        w.add_layer_norm_eps(float(cfg.get("layer_norm_eps", 1e-12)))
        w.add_causal_attention(False)
        w.add_pooling_type(pooling)
        if labels and has_classifier:
            w.add_classifier_output_labels(labels)
        if st_normalize:
            w.add_bool("sentence_transformers.normalize", True)
        if max_seq:
            w.add_uint32("sentence_transformers.max_seq_length", max_seq)

        w.add_token_type_count(max(n_types, 1))
        w.add_tokenizer_model("bert")
        w.add_tokenizer_pre("default")
        w.add_token_list(vocab["tokens"])
        w.add_token_types(vocab["types"])
        ids = vocab["ids"]
        w.add_bos_token_id(ids["cls"])
        w.add_sep_token_id(ids["sep"])
        w.add_unk_token_id(ids["unk"])
        if "pad" in ids:
            w.add_pad_token_id(ids["pad"])
        if "mask" in ids:
            w.add_mask_token_id(ids["mask"])
        w.add_add_bos_token(True)
        w.add_add_sep_token(True)
        w.add_add_eos_token(False)
        w.add_bool("tokenizer.ggml.normalizer.lowercase", vocab["lowercase"])
        w.add_bool("tokenizer.ggml.normalizer.strip_accents", vocab["strip_accents"])

        # Tensors in a fixed order: embeddings, layers, heads.
        def order(g: str):
            if g.startswith("blk."):
                return (1, int(g.split(".")[1]), g)
            return (0 if not g.startswith("cls") else 2, 0, g)

        for g in sorted(mapped, key=order):
            a = tok_embd if g == "token_embd.weight" else load_array(mapped[g])
            a = np.ascontiguousarray(a, dtype=np.float32)
            if a.ndim == 2 and outtype == "f16":
                a = a.astype(np.float16)
            w.add_tensor(g, a)

        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    except BaseException:
        tmp.unlink(missing_ok=True)  # no partial file left behind
        raise
    os.replace(tmp, out)
    print(f"convert-encoder.py: wrote {out} ({len(mapped)} tensors, {outtype}, "
          f"{len(vocab['tokens'])} tokens, pooling {pooling.name.lower()}"
          f"{', normalize' if st_normalize else ''})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="convert-encoder.py",
        description="Convert a Hugging Face BERT-family encoder (safetensors) to ragform's GGUF.")
    ap.add_argument("--model-dir", required=True, type=Path,
                    help="the model folder (config.json, model.safetensors, tokenizer files)")
    ap.add_argument("-o", "--output", required=True, type=Path, help="the GGUF file to write")
    ap.add_argument("--outtype", choices=("f32", "f16"), default="f32",
                    help="type of the weight matrices (1-D tensors stay F32); default f32")
    ap.add_argument("--name", help="general.name (default: the config's _name_or_path)")
    args = ap.parse_args(argv)
    try:
        convert(args.model_dir, args.output, args.outtype, args.name)
    except ConvertError as e:
        print(f"convert-encoder.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
