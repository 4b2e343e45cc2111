#!/usr/bin/env python3
"""Writes prompts.json: the prompts of the Gemma 3 270M reference dumps (tests/data/real/gemma/).

NQ-Open questions in lost-in-the-middle's qa.prompt, each with its gold passage among other
questions' gold passages as distractors (2, 5, 10 and 20 documents: about 300 to 3,200 tokens,
past Gemma 3's 512-token sliding window), a HotpotQA distractor record, and a question with a
passage in Gemma's chat turn markers. Run from the checkout: python3 tests/data/real/gemma/make_prompts.py
"""
import gzip
import json
import pathlib
import random

here = pathlib.Path(__file__).resolve().parent
shared = here.parents[3].parent / "shared" / "data"
template = (shared / "lost-in-the-middle" / "qa.prompt").read_text()
with gzip.open(shared / "lost-in-the-middle" / "nq-open-oracle.jsonl.gz", "rt") as f:
    nq = [json.loads(line) for line in f]
rng = random.Random(39)


def nq_prompt(n_docs: int, gold_at: int) -> str:
    q = rng.choice(nq)
    others = [r["ctxs"][0] for r in rng.sample(nq, n_docs + 3) if r["question"] != q["question"]]
    docs = others[: n_docs - 1]
    docs.insert(gold_at, q["ctxs"][0])
    results = "\n".join(
        f"Document [{i + 1}](Title: {d['title']}) {d['text']}" for i, d in enumerate(docs))
    return template.replace("{search_results}", results).replace("{question}", q["question"])


prompts = {
    "nq2": nq_prompt(2, 1),
    "nq5": nq_prompt(5, 2),
    "nq10": nq_prompt(10, 9),
    "nq20": nq_prompt(20, 10),
}
with open(shared / "hotpotqa-distractor" / "dev.jsonl") as f:
    hp = json.loads(f.readlines()[7])
paras = "\n".join(f"{t}: {''.join(s)}" for t, s in zip(hp["context"]["title"], hp["context"]["sentences"]))
prompts["hotpot"] = f"Answer the question from the paragraphs.\n\n{paras}\n\nQuestion: {hp['question']}\nAnswer:"
q = nq[123]
prompts["chat"] = ("<start_of_turn>user\nAnswer the question using the passage.\n\nPassage: "
                   f"{q['ctxs'][0]['text']}\n\nQuestion: {q['question']}<end_of_turn>\n<start_of_turn>model\n")
(here / "prompts.json").write_text(json.dumps(prompts, indent=1, ensure_ascii=False) + "\n")
