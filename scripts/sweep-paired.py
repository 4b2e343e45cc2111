#!/usr/bin/python3
"""Paired statistics of `ragform position-bias --sweep` runs in a run store (docs/steering.md).

For each sweep run: its allocation and setting, OAA of both variants, the (item, position) pairs
where only the baseline or only the calibrated answer is right, McNemar's exact two-sided p on
those discordant pairs, and how often calibrated relevance ranked the gold document first.

    scripts/sweep-paired.py STORE.sqlite [STORE.sqlite ...]
"""
import json
import math
import sqlite3
import sys


def mcnemar_exact(b, c):
    """Two-sided exact p of b successes in b + c fair coin flips (McNemar's test, mid-p not used)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def main(paths):
    for path in paths:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        runs = db.execute(
            "SELECT id, config FROM runs WHERE pipeline = 'position-bias sweep' ORDER BY id")
        for run, config in runs.fetchall():
            cfg = json.loads(config)
            alloc = cfg.get("allocation", "top")
            setting = (f"t {cfg.get('temperature')}" if alloc == "softmax"
                       else "oracle" if alloc == "gold" else f"share {cfg.get('share')}")
            rows = db.execute(
                "SELECT instance, variant, correct, extra FROM results WHERE run = ? "
                "AND status = 'ok'", (run,)).fetchall()
            by = {}
            top_is_gold = [0, 0]
            for inst, variant, correct, extra in rows:
                name, pos = variant.split("@")
                by[(inst, int(pos), name)] = bool(correct)
                if name == "calibrated":
                    e = json.loads(extra)
                    top_is_gold[0] += int(e.get("top") == e.get("position"))
                    top_is_gold[1] += 1
            pairs = [(by[(i, p, "baseline")], by[(i, p, "calibrated")])
                     for (i, p, n) in by if n == "baseline" and (i, p, "calibrated") in by]
            if not pairs:
                continue
            b = sum(1 for x, y in pairs if x and not y)
            c = sum(1 for x, y in pairs if y and not x)
            # OAA: the mean over positions of each position's accuracy.
            def oaa(variant):
                acc = {}
                for (i, p, n), ok in by.items():
                    if n == variant:
                        acc.setdefault(p, []).append(ok)
                return sum(sum(v) / len(v) for v in acc.values()) / len(acc)
            print(f"{path} run {run}: {alloc} {setting}: OAA baseline {oaa('baseline'):.3f} "
                  f"calibrated {oaa('calibrated'):.3f}; pairs {len(pairs)}, baseline only {b}, "
                  f"calibrated only {c}, McNemar exact p {mcnemar_exact(b, c):.3g}; gold ranked "
                  f"first {top_is_gold[0]} of {top_is_gold[1]}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
