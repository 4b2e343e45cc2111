#!/usr/bin/env python3
"""The same C-NORM calibration and SURE evaluation with two readers on the same weights and cores:
ragform's native reader and Hugging Face transformers (eager attention, float32) through
ragform.readers.transformers (issue 44, "Speed, same pipeline, two readers, one run").

    eval "$(scripts/transformers.sh --print)"; eval "$(scripts/models.sh --print)"
    PYTHONPATH=build/ci/python-transformers $RAGFORM_TRANSFORMERS_PYTHON \
        scripts/bench-transformers.py --model build/ci/transformers/gemma-3-270m-f32.gguf

(scripts/test-transformers.sh installs the module into build/ci/python-transformers and makes the
F32 copy; `ragform quantize $RAGFORM_GEMMA OUT --type f32` makes it by hand.) `--model
$RAGFORM_GEMMA` compares on the quantised file itself: transformers dequantises it to float32,
ragform runs it as it is (docs/performance.md gives both).

Studies, per round, the readers alternated (the first reader swaps every round):
  calibrate  ragform.cnorm.calibrate over --records NQ-Open records: ABS of every candidate
             delimiter on S prompts of k documents (one attention pass each)
  sure       ragform.sure.evaluate, greedy, --max-tokens, on the rule-based perturbations of the
             same records' gold documents (closed-book, original and perturbed prompts)
Tokens are the tokens each study feeds and generates, counted by the transformers side (the two
tokenise alike; the native side's generated tokens are counted from its store). Prints one line per
study and reader with the median wall time and tokens/s, and the ratio native : transformers.
"""
import argparse
import gzip
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Counting:
    """The transformers reader, counting the tokens it feeds (prompts) and generates."""

    def __init__(self, inner):
        self.inner, self.fed, self.generated = inner, 0, 0
        self.chat_mode = inner.chat_mode

    def describe(self):
        return self.inner.describe()

    def tokenize(self, text):
        return self.inner.tokenize(text)

    def generate(self, prompts, params):
        out = self.inner.generate(prompts, params)
        self.fed += sum(r["prompt_tokens"] for r in out)
        self.generated += sum(len(r["ids"]) for r in out)
        return out

    def attention(self, prompt, layers, heads, positions):
        rows = self.inner.attention(prompt, layers, heads, positions)
        self.fed += len(rows[0]["ids"]) if rows else 0
        return rows

    def score(self, prompt, continuation):
        return self.inner.score(prompt, continuation)


def native_generated(store, model):
    with sqlite3.connect(store) as db:
        outs = [o for (o,) in db.execute("SELECT output FROM results WHERE status = 'ok'")]
    return sum(len(model.tokenize(o, bos=False)) for o in outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="the F32 GGUF both readers load")
    ap.add_argument("--records", type=int, default=12, help="NQ-Open records (default 12)")
    ap.add_argument("-S", type=int, default=4, help="calibration prompts (default 4)")
    ap.add_argument("-k", type=int, default=5, help="documents per prompt (default 5)")
    ap.add_argument("--delims", default="none,-,:,&", help="candidates (default none,-,:,&)")
    ap.add_argument("--kinds", default="format,logic/reverse", help="SURE perturbation kinds")
    ap.add_argument("--max-pairs", type=int, default=8, help="SURE pairs (default 8)")
    ap.add_argument("--max-tokens", type=int, default=16, help="SURE answer tokens (default 16)")
    ap.add_argument("--rounds", type=int, default=2, help="alternated rounds (default 2)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8, help="prompts per generate call (both)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/lost-in-the-middle/"
                                          "nq-open-oracle.jsonl.gz"))
    a = ap.parse_args()

    import torch
    import transformers
    import ragform
    torch.set_num_threads(a.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    recs = []
    with gzip.open(a.data, "rt") as f:
        for line in f:
            recs.append(json.loads(line))
            if len(recs) == a.records:
                break
    p = Path(a.model)
    t0 = time.perf_counter()
    native = ragform.Model(str(p), threads=a.threads)
    t_native_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    tok = transformers.AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
    lm = transformers.AutoModelForCausalLM.from_pretrained(
        str(p.parent), gguf_file=p.name, dtype=torch.float32, attn_implementation="eager").eval()
    t_hf_load = time.perf_counter() - t0
    hf = ragform.readers.transformers(lm, tok, batch_size=a.batch)

    pairs = [q for r in ragform.sure.perturb(recs, kinds=a.kinds, docs=1, seed=0)
             for q in (r if isinstance(r, list) else [r]) if not q.get("failed")][:a.max_pairs]
    cal_kw = dict(records=recs, S=a.S, k=a.k, delims=a.delims, seed=0, progress=False)
    sure_kw = dict(temperature=0.0, max_tokens=a.max_tokens, batch=a.batch, progress=False)

    times = {(s, r): [] for s in ("calibrate", "sure") for r in ("native", "transformers")}
    tokens = {}
    for rnd in range(a.rounds):
        order = ["native", "transformers"] if rnd % 2 == 0 else ["transformers", "native"]
        for name in order:
            if name == "native":
                # A fresh Model each round, opened outside the timing: a Model keeps the prompts
                # it has run (its KV reuse), and a second round on the same one measured 0.4 s.
                native = ragform.Model(str(p), threads=a.threads)
            counting = Counting(hf) if name == "transformers" else None
            reader = native if name == "native" else counting
            t0 = time.perf_counter()
            ragform.cnorm.calibrate(reader=reader, **cal_kw)
            times[("calibrate", name)].append(time.perf_counter() - t0)
            if counting:
                tokens["calibrate"] = counting.fed
                counting.fed = counting.generated = 0
            with tempfile.TemporaryDirectory() as d:
                store = os.path.join(d, "s.sqlite")
                t0 = time.perf_counter()
                ragform.sure.evaluate(reader=reader, pairs=pairs, store=store, **sure_kw)
                times[("sure", name)].append(time.perf_counter() - t0)
                if counting:
                    tokens["sure"] = (counting.fed, counting.generated)
                else:
                    tokens["sure_native_generated"] = native_generated(store, native)
            print(f"round {rnd + 1} {name}: calibrate {times[('calibrate', name)][-1]:.1f} s, "
                  f"sure {times[('sure', name)][-1]:.1f} s", file=sys.stderr, flush=True)

    load = os.getloadavg()
    print(f"# {p.name}, {a.threads} threads, {a.rounds} rounds alternated; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; torch {torch.__version__}, transformers "
          f"{transformers.__version__}; load: native {t_native_load:.1f} s, transformers "
          f"{t_hf_load:.1f} s")
    print(f"# calibrate: {len(recs)} records, S={a.S}, k={a.k}, delims {a.delims}; sure: "
          f"{len(pairs)} pairs ({a.kinds}), greedy, {a.max_tokens} tokens")
    print("study      reader        wall_s  tokens  tokens/s  native_speedup")
    for study in ("calibrate", "sure"):
        med = {r: statistics.median(times[(study, r)]) for r in ("native", "transformers")}
        for r in ("native", "transformers"):
            if study == "calibrate":
                n = tokens["calibrate"]
            else:
                fed, gen = tokens["sure"]
                n = fed + (gen if r == "transformers" else tokens["sure_native_generated"])
            ratio = med["transformers"] / med["native"]
            print(f"{study:10} {r:12} {med[r]:7.1f} {n:7d} {n / med[r]:9.0f}  "
                  f"{ratio:.1f}x" if r == "native" else
                  f"{study:10} {r:12} {med[r]:7.1f} {n:7d} {n / med[r]:9.0f}")


if __name__ == "__main__":
    main()
