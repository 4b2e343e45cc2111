#!/usr/bin/env python3
"""Writes tokenize_strings.json: the strings of the Gemma tokenizer check (tests/data/real/gemma/).

llama.cpp's own vocabulary test cases (../shared/fixtures/vocab), NQ questions and passage slices,
code, CJK, emoji and combining marks, whitespace runs, Gemma's chat-turn markers and other special
tokens in running text, and seeded random mixtures of all of these.
"""
import gzip
import json
import pathlib
import random

here = pathlib.Path(__file__).resolve().parent
shared = here.parents[3].parent / "shared"
rng = random.Random(3939)
out: list[str] = []
inp = (shared / "fixtures" / "vocab" / "ggml-vocab-llama-spm.gguf.inp").read_text()
out += [s for s in inp.split("\n__ggml_vocab_test__\n") if s]
with gzip.open(shared / "data" / "lost-in-the-middle" / "nq-open-oracle.jsonl.gz", "rt") as f:
    nq = [json.loads(line) for line in f]
for r in rng.sample(nq, 60):
    out.append(r["question"])
    t = r["ctxs"][0]["text"]
    a = rng.randrange(0, max(1, len(t) - 200))
    out.append(t[a:a + rng.randrange(20, 200)])
out += [
    "def f(x):\n    return x**2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "#include <stdio.h>\nint main(void){printf(\"%d\\n\", 42);}",
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
    "{\"key\": [1, 2.5, -3e10, null, true], \"nested\": {\"a\": \"b\"}}",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "https://example.com/path?q=1&r=%20x#frag",
    "東京は日本の首都です。人口は約1400万人。", "北京欢迎你！我们一起学习中文。",
    "한국어 문장입니다. 안녕하세요?", "こんにちは、世界！カタカナとひらがな。",
    "Привет, мир! Как дела?", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️‍🔥", "e\u0301 a\u0308 n\u0303 (combining)", "\u00a0nbsp\u2009thin\u200bzw",
    "   leading", "trailing   ", "\t\ttabs\tand\nnewlines\n\n\n", " ", "  ", "\n", "\r\n\r\n",
    "a" * 300, "ab" * 150, "1234567890" * 10, "3.14159 2,718 1e-9 0x1F -42",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n",
    "text <end_of_turn> inside", "<eos> <pad> <unk> <mask>", "<start_of_image> image",
    "Document [1](Title: Foo) bar\nDocument [2](Title: Baz) qux",
    "Question: who wrote hamlet\nAnswer:", "ALL CAPS SENTENCE HERE", "MiXeD cAsE wOrDs",
    "don't won't it's I'm we'll they'd", "—en–dash…ellipsis «quotes» „low“ ‘single’",
]
pool = list(out)
for _ in range(80):
    parts = [rng.choice(pool)[: rng.randrange(1, 40)] for _ in range(rng.randrange(2, 6))]
    seps = ["", " ", "\n", "  ", "\t", "<end_of_turn>", "😀", "。"]
    out.append("".join(p + rng.choice(seps) for p in parts))
(here / "tokenize_strings.json").write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n")
print(len(out), "strings")
