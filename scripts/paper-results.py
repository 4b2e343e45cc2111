#!/usr/bin/python3
"""Reads the outputs and run stores of scripts/paper-results.sh back into the numbers of
docs/results.md: 95% CIs over questions (percentile bootstrap), paired differences, C-NORM's
ABS-vs-accuracy rank correlation (Spearman, bootstrap CI) and, per run store, the rows, prompt
tokens and reader time of every run. Standard library only.

    scripts/paper-results.py OUT      (OUT: the directory paper-results.sh wrote)
"""
import glob
import json
import math
import os
import random
import sqlite3
import sys

RESAMPLES = 2000


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = q * (len(xs) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def ci(xs):
    return f"[{pct(xs, 0.025):.3f}, {pct(xs, 0.975):.3f}]"


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return r


def pearson(x, y):
    mx, my = mean(x), mean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman(x, y):
    # Rounded first, so that equal accuracies summed in another order tie as they should.
    return pearson(ranks([round(v, 9) for v in x]), ranks([round(v, 9) for v in y]))


def mcnemar_exact(b, c):
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n)


def wilson(k, n):
    if n == 0:
        return (float("nan"), float("nan"))
    z = 1.959964
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


def connect(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def runs_of(db, pipeline_like):
    return db.execute("SELECT id, pipeline, config FROM runs WHERE pipeline LIKE ? ORDER BY id",
                      (pipeline_like,)).fetchall()


def position_table(db, run):
    """{variant: {question: {position: correct}}} of a run whose variants are name@position."""
    table = {}
    for inst, variant, correct in db.execute(
            "SELECT instance, variant, correct FROM results WHERE run = ? AND status = 'ok'",
            (run,)):
        if "@" not in variant:
            continue
        name, pos = variant.rsplit("@", 1)
        table.setdefault(name, {}).setdefault(inst, {})[int(pos)] = int(correct)
    return table


def oaa(per_q, questions):
    """OAA over the given questions (a list, repeats allowed): mean over positions of accuracy."""
    acc = {}
    for q in questions:
        for p, c in per_q.get(q, {}).items():
            s = acc.setdefault(p, [0, 0])
            s[0] += c
            s[1] += 1
    return mean([s[0] / s[1] for s in acc.values()]) if acc else float("nan"), acc


def sweep_report(title, db, run, baseline="baseline", rng_seed=0):
    table = position_table(db, run)
    if not table:
        print(f"  {title}: not yet measured")
        return
    qs = sorted(set().union(*[set(v) for v in table.values()]))
    rng = random.Random(rng_seed)
    boots = [[rng.choice(qs) for _ in qs] for _ in range(RESAMPLES)]
    base = table.get(baseline)
    print(f"  {title}: {len(qs)} questions")
    for name in sorted(table, key=lambda n: (n != baseline, n)):
        per_q = table[name]
        o, acc = oaa(per_q, qs)
        curve = [acc[p][0] / acc[p][1] for p in sorted(acc)]
        n = sum(s[1] for s in acc.values())
        dist = [oaa(per_q, b)[0] for b in boots]
        line = (f"    {name:<14} OAA {o:.3f} {ci(dist)}  OPA {max(curve):.3f} (position "
                f"{curve.index(max(curve)) + 1})  n {n}  by position "
                + " ".join(f"{a:.2f}" for a in curve))
        if base is not None and name != baseline:
            diffs = [oaa(per_q, b)[0] - oaa(base, b)[0] for b in boots]
            b_only = c_only = 0
            for q in qs:
                for p, c in per_q.get(q, {}).items():
                    bc = base.get(q, {}).get(p)
                    if bc is None:
                        continue
                    b_only += int(bc == 1 and c == 0)
                    c_only += int(bc == 0 and c == 1)
            line += (f"\n{'':19}vs {baseline}: {o - oaa(base, qs)[0]:+.3f} {ci(diffs)}; "
                     f"{baseline} only {b_only}, {name} only {c_only}, McNemar p "
                     f"{mcnemar_exact(b_only, c_only):.3g}")
        print(line)


def cnorm(out):
    print("C-NORM")
    for f in ("cnorm_nq_profile.json", "cnorm_kv_profile.json", "cnorm_nq5_profile.json"):
        path = os.path.join(out, f)
        if not os.path.exists(path):
            print(f"  {f}: not yet measured")
            continue
        p = json.load(open(path))
        cands = sorted(p["candidates"], key=lambda c: -c["abs_mean"])
        print(f"  {f}: task {p['task']}, k {p['config'].get('k')}, S {p['S']}, p {p['p']}, "
              f"f* = {p['best']!r}; ABS mean (sd): "
              + ", ".join(f"{c.get('name', c['delimiter'])!r} {c['abs_mean']:.4f} "
                          f"({c['abs_std']:.3f})" for c in cands))
    for store, title in (("cnorm_eval.sqlite", "NQ k=10 sweep"),
                         ("cnorm_eval5.sqlite", "NQ k=5 all-candidates sweep"),
                         ("cnorm_eval_kv.sqlite", "KV sweep")):
        path = os.path.join(out, store)
        if not os.path.exists(path):
            print(f"  {title}: not yet measured")
            continue
        db = connect(path)
        for run, _, _ in runs_of(db, "cnorm eval%"):
            sweep_report(f"{title} (run {run})", db, run)
    abs_vs_accuracy(out)


def abs_vs_accuracy(out):
    """Spearman rho of the candidates' mean ABS against their OAA; bootstrap over questions (ABS
    fixed, as `cnorm eval --all-candidates` does) and over questions and calibration prompts."""
    prof_path = os.path.join(out, "cnorm_nq5_profile.json")
    store = os.path.join(out, "cnorm_eval5.sqlite")
    if not (os.path.exists(prof_path) and os.path.exists(store)):
        print("  ABS vs accuracy: not yet measured")
        return
    prof = json.load(open(prof_path))
    abs_of = {c.get("name", c["delimiter"]): c["abs"] for c in prof["candidates"]}
    db = connect(store)
    for run, _, _ in runs_of(db, "cnorm eval%"):
        table = position_table(db, run)
        names = [n[2:] for n in table if n.startswith("f:") and n[2:] in abs_of]
        if len(names) < 3:
            print(f"  ABS vs accuracy (run {run}): fewer than 3 candidates measured")
            continue
        qs = sorted(set().union(*[set(table["f:" + n]) for n in names]))
        absm = [mean(abs_of[n]) for n in names]
        acc = [oaa(table["f:" + n], qs)[0] for n in names]
        rho = spearman(absm, acc)
        rng = random.Random(0)
        s_prompts = len(abs_of[names[0]])
        only_q, joint, skipped = [], [], [0, 0]
        for _ in range(RESAMPLES):
            b = [rng.choice(qs) for _ in qs]
            a = [oaa(table["f:" + n], b)[0] for n in names]
            r = spearman(absm, a)
            if r is None:
                skipped[0] += 1
            else:
                only_q.append(r)
            pi = [rng.randrange(s_prompts) for _ in range(s_prompts)]
            am = [mean([abs_of[n][i] for i in pi]) for n in names]
            r = spearman(am, a)
            if r is None:
                skipped[1] += 1
            else:
                joint.append(r)
        print(f"  ABS vs accuracy (run {run}): {len(names)} candidates x {len(qs)} questions; "
              f"Spearman rho {rho:.3f}; 95% CI over questions {ci(only_q)} "
              f"({skipped[0]} constant resamples skipped); over questions and the {s_prompts} "
              f"calibration prompts {ci(joint)} ({skipped[1]} skipped)")
        for n, a, o in sorted(zip(names, absm, acc), key=lambda t: -t[1]):
            print(f"    {n!r:<12} ABS {a:.4f}  OAA {o:.3f}")


def steering(out):
    print("Lost in the middle (position-bias sweeps)")
    for f in ("steer_k10_curve.json", "steer_k20_curve.json"):
        path = os.path.join(out, f)
        if os.path.exists(path):
            c = json.load(open(path))
            print(f"  {f}: k {c.get('k')}, prompts {c.get('prompts')}, curve (x1e-4) "
                  + " ".join(f"{v * 1e4:.2f}" for v in c["curve"]))
        else:
            print(f"  {f}: not yet measured")
    for store in ("steering.sqlite", "steering_gold.sqlite"):
        path = os.path.join(out, store)
        if not os.path.exists(path):
            print(f"  {store}: not yet measured")
            continue
        db = connect(path)
        for run, _, config in runs_of(db, "position-bias sweep"):
            cfg = json.loads(config)
            sweep_report(f"{store} run {run}: k {len(cfg.get('bias', [])) or '?'}, allocation "
                         f"{cfg.get('allocation')}", db, run)


def spotlight(out):
    print("SpotlightRAG")
    for f in ("spot_recall_glove.json", "spot_recall_minilm.json", "spot_generate.json"):
        path = os.path.join(out, f)
        if not os.path.exists(path):
            print(f"  {f}: not yet measured")
            continue
        for line in open(path):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("kind") == "recall" and r.get("group") == "main":
                print(f"  {f}: {r['method']:<10} recall@{r['K']} {r['recall']:.3f} "
                      f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] n {r['questions']}")
            elif r.get("kind") == "answer" and "em_ci95" in r:
                # As `spotlight eval --generate --store` prints it (bootstrap CIs).
                e, f1 = r["em_ci95"], r["f1_ci95"]
                line = (f"  {f}: {r['variant']:<20} EM {r['em']:.3f} [{e[0]:.3f}, {e[1]:.3f}] "
                        f"F1 {r['f1']:.3f} [{f1[0]:.3f}, {f1[1]:.3f}] substring "
                        f"{r['substring']:.3f} n {r['questions']}")
                if "prompt_tokens" in r:
                    line += (f", {r['prompt_tokens']} prompt tokens, "
                             f"{r['generate_seconds']:.0f} s generating")
                print(line)
            elif r.get("kind") == "answer":
                n = r["questions"]
                k = round(r["em"] * n)
                lo, hi = wilson(k, n)
                ks = round(r["substring"] * n)
                slo, shi = wilson(ks, n)
                print(f"  {f}: {r['variant']:<20} EM {r['em']:.3f} [{lo:.3f}, {hi:.3f}] "
                      f"substring {r['substring']:.3f} [{slo:.3f}, {shi:.3f}] n {n} (Wilson)")
    path = os.path.join(out, "spotlight.sqlite")
    if os.path.exists(path):
        db = connect(path)
        spot_by_run = {}
        for run, _, config in runs_of(db, "spotlight eval"):
            cfg = json.loads(config)
            rec = {}
            for inst, method, scores in db.execute(
                    "SELECT instance, variant, scores FROM results WHERE run = ? AND status = 'ok'",
                    (run,)):
                r = [v for k, v in json.loads(scores).items() if k.startswith("recall@")]
                if r:
                    rec.setdefault(method, {})[inst] = r[0]
            qs = sorted(rec.get("spotlight", {}))
            if not qs:
                continue
            spot_by_run[run] = rec["spotlight"]
            rng = random.Random(0)
            boots = [[rng.choice(qs) for _ in qs] for _ in range(RESAMPLES)]
            enc = cfg.get("encoder", "?").split("/")[-1]
            print(f"  spotlight.sqlite run {run}: encoder {enc}, lexical weight "
                  f"{cfg.get('lexical_weight')}, paragraph weight {cfg.get('paragraph_weight')}, "
                  f"{len(qs)} questions")
            for m in sorted(rec):
                d = rec[m]
                line = (f"    {m:<10} recall@{cfg.get('K')} {mean([d[q] for q in qs]):.3f} "
                        + ci([mean([d[q] for q in b]) for b in boots]))
                if m != "bm25" and "bm25" in rec:
                    bm = rec["bm25"]
                    line += ("  vs bm25 " + f"{mean([d[q] - bm[q] for q in qs]):+.3f} "
                             + ci([mean([d[q] - bm[q] for q in b]) for b in boots]))
                print(line)
        runs = sorted(spot_by_run)
        for i, a in enumerate(runs):
            for b in runs[i + 1:]:
                qs = sorted(set(spot_by_run[a]) & set(spot_by_run[b]))
                if not qs:
                    continue
                ra, rb = spot_by_run[a], spot_by_run[b]
                rng = random.Random(0)
                boots = [[rng.choice(qs) for _ in qs] for _ in range(RESAMPLES)]
                print(f"  spotlight recall, run {b} - run {a} on their {len(qs)} common questions: "
                      f"{mean([rb[q] - ra[q] for q in qs]):+.3f} "
                      + ci([mean([rb[q] - ra[q] for q in bs]) for bs in boots]))
    spot_answers(os.path.join(out, "spotlight_generate.sqlite"))
    path = os.path.join(out, "spotlight_reproduce.sqlite")
    if os.path.exists(path):
        db = connect(path)
        for run, pipeline, _ in runs_of(db, "%"):
            rows = db.execute("SELECT correct, scores FROM results WHERE run = ? AND status = 'ok' "
                              "AND correct IS NOT NULL", (run,)).fetchall()
            if not rows:
                continue
            k = sum(r[0] for r in rows)
            lo, hi = wilson(k, len(rows))
            print(f"  spotlight_reproduce.sqlite run {run} ({pipeline}): correct {k}/{len(rows)}"
                  f" = {k / len(rows):.3f} [{lo:.3f}, {hi:.3f}] (Wilson)")


def spot_answers(path):
    """The end-to-end answers of every `spotlight generate` run in a store: per variant EM and F1
    with bootstrap CIs over questions, prompt tokens and generation time; then the special
    tokens' effect, paired on the questions both variants answered (EM and F1 difference with
    bootstrap CIs, McNemar on EM)."""
    if not os.path.exists(path):
        print(f"  {os.path.basename(path)}: not yet measured")
        return
    db = connect(path)
    for run, _, config in runs_of(db, "spotlight generate"):
        cfg = json.loads(config)
        by = {}
        for inst, variant, scores, tok, timings in db.execute(
                "SELECT instance, variant, scores, prompt_tokens, timings_ms FROM results "
                "WHERE run = ? AND status = 'ok'", (run,)):
            sc = json.loads(scores)
            by.setdefault(variant, {})[inst] = (sc.get("em", 0.0), sc.get("f1", 0.0), tok or 0,
                                                json.loads(timings or "{}").get("total", 0.0))
        if not by:
            continue
        eval_run = cfg.get("spotlight_run")
        nq = db.execute("SELECT config FROM runs WHERE id = ?", (eval_run,)).fetchone()
        enc = json.loads(nq[0]).get("encoder", "?").split("/")[-1] if nq else "?"
        print(f"  {os.path.basename(path)} run {run} (answers to run {eval_run}, encoder {enc}, "
              f"max_tokens {cfg.get('max_tokens')}, stop {cfg.get('stop', 'first newline')}):")
        rng = random.Random(0)
        for v in sorted(by):
            d = by[v]
            qs = sorted(d)
            boots = [[rng.choice(qs) for _ in qs] for _ in range(RESAMPLES)]
            em = mean([d[q][0] for q in qs])
            f1 = mean([d[q][1] for q in qs])
            tok = sum(d[q][2] for q in qs)
            secs = sum(d[q][3] for q in qs) / 1000
            print(f"    {v:<20} EM {em:.3f} " + ci([mean([d[q][0] for q in b]) for b in boots])
                  + f"  F1 {f1:.3f} " + ci([mean([d[q][1] for q in b]) for b in boots])
                  + f"  n {len(qs)}, {tok} prompt tokens ({tok / len(qs):.0f} per answer), "
                  f"{secs:.0f} s generating")
        a, b = by.get("spotlight"), by.get("spotlight-no-tokens")
        if a and b:
            qs = sorted(set(a) & set(b))
            boots = [[rng.choice(qs) for _ in qs] for _ in range(RESAMPLES)]
            for i, name in ((0, "EM"), (1, "F1")):
                diff = [a[q][i] - b[q][i] for q in qs]
                print(f"    tokens - no tokens {name} {mean(diff):+.3f} "
                      + ci([mean([a[q][i] - b[q][i] for q in bs]) for bs in boots])
                      + f" on {len(qs)} questions")
            only_a = sum(1 for q in qs if a[q][0] > 0.5 and b[q][0] <= 0.5)
            only_b = sum(1 for q in qs if b[q][0] > 0.5 and a[q][0] <= 0.5)
            print(f"    EM right with tokens only {only_a}, without only {only_b}, McNemar p "
                  f"{mcnemar_exact(only_a, only_b):.3g}")


def sure(out):
    print("SURE")
    path = os.path.join(out, "sure_eval.jsonl")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        print("  sure eval: not yet measured")
    else:
        for line in open(path):
            if line.startswith("{"):
                print("  " + line.strip()[:600])
    path = os.path.join(out, "sure_attention.json")
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                print("  attention: " + line.strip()[:1500])
    else:
        print("  attention: not yet measured")


def costs(out):
    print("Run stores: rows (ok / unmeasured), prompt tokens, reader time (sum of rows' timings)")
    for path in sorted(glob.glob(os.path.join(out, "*.sqlite"))):
        db = connect(path)
        for run, pipeline, _ in runs_of(db, "%"):
            ok, bad, tok, ms = db.execute(
                "SELECT SUM(status = 'ok'), SUM(status = 'unmeasured'), SUM(prompt_tokens), "
                "SUM(json_extract(timings_ms, '$.total')) FROM results WHERE run = ?",
                (run,)).fetchone()
            print(f"  {os.path.basename(path)} run {run} ({pipeline}): {ok or 0} / {bad or 0} rows,"
                  f" {tok or 0} prompt tokens, {(ms or 0) / 1000:.0f} s")
    wall = os.path.join(out, "wall.tsv")
    if os.path.exists(wall):
        calls, cur = [], None
        for line in open(wall):
            name, val = line.rstrip("\n").split("\t")
            if name == "call":
                cur = {}
                calls.append((val, cur))
            elif cur is not None:
                cur[name] = val
        print("Wall seconds per step, per call of paper-results.sh:")
        names = []
        for _, c in calls:
            names += [n for n in c if n not in names]
        for n in names:
            print(f"  {n:<26} " + "  ".join(f"{c[n]:>8}" if n in c else "       -"
                                             for _, c in calls))


def main(out):
    cnorm(out)
    print()
    sure(out)
    print()
    spotlight(out)
    print()
    steering(out)
    print()
    costs(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
