#!/usr/bin/python3
"""Builds the retrieval corpus of the shared data's real Wikipedia paragraphs.

Reads ../shared/data (never copied into the project):
  hotpotqa-distractor/{dev,train}.jsonl   every paragraph of every `context` (title, sentences
                                          concatenated as stored, as src/eval/loaders_qa.cpp does)
  lost-in-the-middle/nq-open-oracle.jsonl.gz  the gold passage `ctxs[0]` of every question
and writes JSONL `{"id", "title", "text"}`, one line per distinct (title, text) pair, in order of
first appearance. Ids are stable: "hotpot:<n>" / "nq:<n>" numbered from 1 in that order, so a test
can name a paragraph by (title, text) and the ids of one data folder never change.

usage: scripts/make-corpus.py [--shared DIR] [--only hotpotqa|nq] -o OUT.jsonl
"""
import argparse
import gzip
import json
import os
import sys


def hotpot_paragraphs(path):
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            ctx = row["context"]
            for title, sentences in zip(ctx["title"], ctx["sentences"]):
                yield title, "".join(sentences)


def nq_paragraphs(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            for c in row.get("ctxs", []):
                yield c["title"], c["text"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"),
                    help="the shared folder (default: ../shared beside the project)")
    ap.add_argument("--only", choices=["hotpotqa", "nq"], help="one source only")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()

    data = os.path.join(args.shared, "data")
    sources = []
    if args.only in (None, "hotpotqa"):
        for split in ("dev", "train"):
            sources.append(("hotpot", hotpot_paragraphs(
                os.path.join(data, "hotpotqa-distractor", split + ".jsonl"))))
    if args.only in (None, "nq"):
        sources.append(("nq", nq_paragraphs(
            os.path.join(data, "lost-in-the-middle", "nq-open-oracle.jsonl.gz"))))

    seen = set()
    counts = {}
    with open(args.output, "w", encoding="utf-8") as out:
        for prefix, rows in sources:
            for title, text in rows:
                if (title, text) in seen:
                    continue
                seen.add((title, text))
                counts[prefix] = counts.get(prefix, 0) + 1
                out.write(json.dumps({"id": "%s:%d" % (prefix, counts[prefix]),
                                      "title": title, "text": text},
                                     ensure_ascii=False) + "\n")
    print("make-corpus: %s: %s" % (args.output, ", ".join(
        "%d %s" % (n, p) for p, n in counts.items())), file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except (OSError, KeyError, ValueError) as e:
        print("make-corpus: %s" % e, file=sys.stderr)
        sys.exit(1)
