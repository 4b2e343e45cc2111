#!/usr/bin/python3
"""SpotlightRAG end to end on a reader whose answer starts on a new line (docs/results.md).

`spotlight eval --generate` and `reproduce spotlight` stop each answer at its first newline; Gemma
3 270M (base) answers the eq. (10) prompt "...\\nAnswer:" with a newline first, so every answer
they grade is empty. This script answers the same prompts with `ragform generate` (greedy, no
stop string) and grades the first non-empty line of the output by exact match and substring
match under SQuAD's normalize_answer. Answers are cached in CACHE (JSONL, one per variant and
question), so a second call generates nothing new.

    scripts/spotlight-answers.py RAGFORM MODEL DEV.jsonl SEL_TOKENS.jsonl SEL_PLAIN.jsonl CACHE [N]

SEL_*.jsonl: `ragform spotlight select --json` outputs with and without --no-special-tokens.
N: tokens per answer (default 16). Standard library only.
"""
import json
import math
import os
import re
import string
import subprocess
import sys
import tempfile


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def first_line(text):
    for line in text.split("\n"):
        if line.strip():
            return line.strip()
    return ""


def wilson(k, n):
    z = 1.959964
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def mcnemar_exact(b, c):
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2.0 ** n)


def main(rf, model, dev, sel_tokens, sel_plain, cache, n_predict="16"):
    gold = {}
    for line in open(dev, encoding="utf-8"):
        if line.strip():
            r = json.loads(line)
            gold[r["id"]] = r["answer"]
    done = {}
    if os.path.exists(cache):
        for line in open(cache, encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                done[(r["variant"], r["id"])] = r
    results = {}
    with open(cache, "a", encoding="utf-8") as out:
        for variant, path in (("with <Rel>/category tokens", sel_tokens),
                              ("without special tokens", sel_plain)):
            for line in open(path, encoding="utf-8"):
                if not line.strip():
                    continue
                sel = json.loads(line)
                key = (variant, sel["id"])
                if key not in done:
                    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                                     encoding="utf-8") as f:
                        f.write(sel["prompt"])
                        tmp = f.name
                    try:
                        res = subprocess.run(
                            [rf, "generate", "-m", model, "-t", "2", "-f", tmp, "-n", n_predict,
                             "--json"], capture_output=True, text=True, check=True)
                    finally:
                        os.unlink(tmp)
                    g = json.loads(res.stdout)
                    rec = {"variant": variant, "id": sel["id"], "output": g["text"],
                           "prompt_tokens": g["prompt_tokens"]}
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    done[key] = rec
                rec = done[key]
                ans = normalize(first_line(rec["output"]))
                g = normalize(gold[sel["id"]])
                results.setdefault(variant, {})[sel["id"]] = (
                    int(ans == g), int(bool(g) and g in ans), rec["prompt_tokens"])
    names = list(results)
    for v in names:
        r = results[v]
        n = len(r)
        em = sum(x[0] for x in r.values())
        sub = sum(x[1] for x in r.values())
        toks = sum(x[2] for x in r.values())
        lo, hi = wilson(em, n)
        slo, shi = wilson(sub, n)
        print(f"{v:<28} EM {em / n:.3f} [{lo:.3f}, {hi:.3f}]  substring {sub / n:.3f} "
              f"[{slo:.3f}, {shi:.3f}]  n {n}  prompt tokens {toks}")
    if len(names) == 2:
        a, b = results[names[0]], results[names[1]]
        common = [q for q in a if q in b]
        for i, metric in ((0, "EM"), (1, "substring")):
            only_a = sum(1 for q in common if a[q][i] and not b[q][i])
            only_b = sum(1 for q in common if b[q][i] and not a[q][i])
            print(f"{metric}: right only {names[0]} {only_a}, only {names[1]} {only_b}, "
                  f"McNemar exact p {mcnemar_exact(only_a, only_b):.3g}")


if __name__ == "__main__":
    if len(sys.argv) not in (7, 8):
        sys.exit(__doc__)
    main(*sys.argv[1:])
