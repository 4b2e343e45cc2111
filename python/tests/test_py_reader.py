"""Any Python object as the reader (docs/python.md, "Your own reader"): a numpy reader double
whose answers and attention are known drives C-NORM calibration, a SURE evaluation and the SURE
attention shift, with the numbers computed by hand; ragform.Model wrapped in the protocol writes
the same store rows as the Model itself; an exception in the reader is an unmeasured row that a
rerun measures; KeyboardInterrupt stops the run."""
import json
import math
import re
import sqlite3
import threading

import numpy as np
import pytest

import ragform

# ---------------------------------------------------------------- the reader doubles

# The double's attention weight of a prompt token (a whitespace-separated word); every other
# token weighs 0.001 but the first, which takes the rest (a row sums to 1, as a softmax does). The
# answers it gives: the first of ANSWERS written exactly so in the prompt.
WEIGHTS = {"Paris": 0.5, "PARIS": 0.25, "Berlin": 0.75, "Madrid": 0.0625, "ROME": 0.125,
           "Rome": 0.5}
ANSWERS = ["Paris", "Berlin", "Madrid", "Rome"]


class Double:
    """Words are tokens; the answer is the first of ANSWERS among the prompt's words."""

    def __init__(self, fail_on=None, interrupt_after=None):
        self.batches = []  # the prompts of each generate() call
        self.params = []
        self.fail_on = fail_on  # a word whose prompts raise ValueError
        self.interrupt_after = interrupt_after  # generate() calls before a KeyboardInterrupt

    def generate(self, prompts, params):
        if self.interrupt_after is not None and len(self.batches) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.batches.append(list(prompts))
        self.params.append(params)
        out = []
        for p in prompts:
            words = p.split()
            if self.fail_on and self.fail_on in words:
                raise ValueError(f"boom on {self.fail_on}")
            out.append({"text": next((a for a in ANSWERS if a in words), "unknown"),
                        "finish_reason": "stop", "prompt_tokens": len(words)})
        return out

    def tokenize(self, text):
        return text.split()

    def attention(self, prompt, layers, heads, positions):
        words = prompt.split()
        rows = []
        for _ in layers:
            for q in positions:
                q = q + len(words) if q < 0 else q
                row = np.array([[WEIGHTS.get(w, 0.001) for w in words[:q + 1]]])
                row[0, 0] = 1.0 - row[0, 1:].sum()
                assert row[0, 0] >= 0
                rows.append(row)
        return rows


class Calibrating(Double):
    """C-NORM's final-token row: uniform over the prompt when it holds '~' (ABS 1), weights 3/4 on
    the first and 1/4 on the last token when it holds '+' (centroid 1/4: ABS 0.5), else all on the
    first token (centroid 0: ABS 0)."""

    def attention(self, prompt, layers, heads, positions):
        assert (layers, positions) == ([-1], [-1])  # the paper's: last layer, final token
        row = np.zeros(len(prompt.split()))
        if "~" in prompt:
            row[:] = 1.0 / len(row)
        elif "+" in prompt:
            row[0], row[-1] = 0.75, 0.25
        else:
            row[0] = 1.0
        return row[None, :]


class Named(Double):
    def describe(self):
        return "double:v2"


class ModelAsPython:
    """ragform.Model through the protocol: the thin wrapper a user would write."""

    def __init__(self, m):
        self.m = m
        self.ctx = m.ctx  # C-NORM fits k to the reader's context

    def describe(self):
        return self.m.description

    def generate(self, prompts, params):
        return [self.m.generate(p, n_predict=params["max_tokens"], temp=params["temperature"],
                                top_k=params["top_k"], top_p=params["top_p"], seed=s,
                                stop=params["stop"], ignore_eos=params["ignore_eos"],
                                details=True)
                for p, s in zip(prompts, params["seeds"])]

    def score(self, prompt, continuation):
        return self.m.score_details(prompt, continuation)

    def tokenize(self, text):
        return self.m.prompt_tokens(text)

    def attention(self, prompt, layers, heads, positions):
        rows = []
        for layer in layers:
            for q in positions:
                a = self.m.attention(prompt, layer, q)
                rows.append(a if not heads else {
                    "heads": a.heads[list(heads)], "head_ids": list(heads), "layer": a.layer,
                    "query_position": a.query_position, "ids": a.ids})
        return rows

    def hidden(self, prompt, layer):
        ids = self.m.prompt_tokens(prompt)
        return self.m.hidden(prompt, layer), [self.m.token_piece(i) for i in ids]


def pair(i, question, answer, original, perturbed, kind):
    return {"id": f"q{i}#0", "instance": f"q{i}", "doc": 0, "perturbation": kind,
            "category": kind.split("/")[0], "question": question, "answers": [answer],
            "title": "Capitals", "original": original, "perturbed": perturbed,
            "embeds_title": False, "note": "", "failed": False}


# Lose (Paris found, PARIS not), Robust twice, Win (ROME not found, Rome found).
PAIRS = [
    pair(1, "What is the capital of France?", "Paris", "The capital of France is Paris .",
         "The capital of France is PARIS .", "style/simple"),
    pair(2, "What is the capital of Germany?", "Berlin", "Berlin is the capital of Germany .",
         "Berlin is the German capital .", "style/complex"),
    pair(3, "What is the capital of Spain?", "Madrid", "Madrid is in Spain .",
         "Madrid is the capital city of Spain .", "logic/reverse"),
    pair(4, "What is the capital of Italy?", "Rome", "The capital of Italy is ROME .",
         "The capital of Italy is Rome .", "format/json"),
]


def overall(result, subset="all"):
    return next(g for g in result["groups"]
                if g["scope"] == "overall" and g["subset"] == subset)


# ---------------------------------------------------------------- the protocol itself


def test_protocol_answers_as_a_reader():
    r = ragform.readers.as_reader(Double())
    assert r.description == "python:Double" and r.chat_mode == "raw"
    assert r.capabilities == {"generate": True, "score": False, "attention": True,
                              "hidden": False}
    g = r._generate("the capital is Paris", n_predict=5, seed=7)
    assert g == {"text": "Paris", "ids": [], "finish_reason": "stop", "prompt_tokens": 4}
    assert r.count_tokens("a b c") == 3
    a = r.attention("a Paris b", layer=-1, query=1)
    assert a.query_position == 1 and a.heads.shape == (1, 2)
    assert list(a.mean) == pytest.approx([0.5, 0.5])
    # The same wording as the OpenAI reader asking a server for attention.
    with pytest.raises(NotImplementedError, match=r"^python reader: score is not supported by "
                                                  r"this reader \(Double has no score method\)"):
        r.score("a", "b")
    with pytest.raises(NotImplementedError, match="hidden states are not supported"):
        r.hidden("a", 1)
    assert ragform.readers.as_reader(Named()).description == "double:v2"

    class Refusing(Double):
        def attention(self, prompt, layers, heads, positions):
            raise NotImplementedError("no eager attention here")

    with pytest.raises(NotImplementedError,
                       match="^python reader: Refusing.attention: NotImplementedError: no eager"):
        ragform.readers.as_reader(Refusing()).attention("a b")

    class Short(Double):  # a row of the wrong length answers another query
        def attention(self, prompt, layers, heads, positions):
            return np.full((1, 2), 0.5)

    with pytest.raises(ValueError, match=r"^python reader: Short.attention: the row of query "
                                         r"position 2 must be \[2 \+ 1\] = 3 long, got 2$"):
        ragform.readers.as_reader(Short()).attention("a b c", query=2)


def test_protocol_params_and_result_shapes():
    class Shapes:
        def generate(self, prompts, params):
            self.params = params
            return [p.upper() for p in prompts]  # plain strings are texts

        def score(self, prompt, continuation):
            return np.array([-1.0, -0.5])

        def attention(self, prompt, layers, heads, positions):
            # One [rows, heads, keys] array: two query rows of one layer would differ in length,
            # so this reader is asked for one row per layer.
            return np.full((len(layers), 2, 3), 1 / 3)

        def hidden(self, prompt, layer):
            return {"states": np.arange(6, dtype=np.float32).reshape(3, 2),
                    "pieces": ["a", " b", " c"]}

    obj = Shapes()
    r = ragform.readers.as_reader(obj)
    assert r._generate("ab", n_predict=3, temp=0.5, top_k=4, top_p=0.9, seed=11,
                       stop=["x"])["text"] == "AB"
    assert obj.params == {"max_tokens": 3, "temperature": 0.5, "top_k": 4, "top_p": 0.9,
                          "seed": 11, "seeds": [11], "stop": ["x"], "ignore_eos": False}
    assert list(r.score("a", "b")) == [-1.0, -0.5]
    assert r.score_details("a", "b")["sum"] == -1.5
    a = r.attention("x y z", layer=-1, query=-1)
    assert a.heads.shape == (2, 3) and a.head_ids == [0, 1] and a.query_position == 2
    assert a.abs == pytest.approx(1.0)  # uniform: centroid 1/2
    assert r.hidden("a b c", 1).tolist() == [[0, 1], [2, 3], [4, 5]]


def test_steering_is_refused():
    r = ragform.readers.as_reader(Double())
    r.steering = {"rule": "rescale:0.5", "spans": [(0, 3)]}
    # Steering acts inside the engine's attention: a Python object's model is beyond it.
    with pytest.raises(NotImplementedError, match="attention steering .* needs the native engine"):
        r._generate("a Paris")


def test_studies_in_threads_take_the_gil_per_call(tmp_path):
    # Two studies at once from two Python threads: each releases the GIL for its C++ pipeline
    # and takes it back for each call into its reader, so neither waits on the other for good.
    results = {}

    def study(name):
        results[name] = ragform.sure.evaluate(reader=Double(), pairs=PAIRS,
                                              store=tmp_path / f"{name}.sqlite", batch=1,
                                              resamples=10, progress=False)

    threads = [threading.Thread(target=study, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert [overall(results[n])["RR"] for n in ("a", "b")] == [0.5, 0.5]


def test_a_bad_argument_is_named():
    with pytest.raises(ValueError, match=r"model: expected a ragform.Model.*generate\(prompts"):
        ragform.sure.evaluate(reader=object(), pairs=PAIRS, progress=False)
    with pytest.raises(ValueError, match="model= or reader=, not both"):
        ragform.sure.evaluate(Double(), PAIRS, reader=Double(), progress=False)


# ---------------------------------------------------------------- the pipelines, by hand


# Four questions, each with a passage naming its author and two naming a critic.
BOOKS = [{"id": f"r{i}", "question": f"Who wrote book {i}?", "answers": [f"Author{i}"],
          "ctxs": [{"title": f"T{i}{j}", "text": f"Book {i} was {'written' if j == 0 else 'read'} "
                    f"by {'Author' if j == 0 else 'Critic'}{i}. It sold well. It is long.",
                    "hasanswer": j == 0, "isgold": j == 0}
                   for j in range(3)]}
         for i in range(4)]


def test_cnorm_calibration_by_hand():
    prof = ragform.cnorm.calibrate(reader=Calibrating(), records=BOOKS, S=2, k=2,
                                   delims="original,~,+", p=1.0, progress=False)
    got = {c["delimiter"]: (c["abs"], c["abs_mean"], c["abs_std"]) for c in prof["candidates"]}
    # ABS = 1 - 2 |mu - 1/2|: all weight on the first token (mu 0), uniform (mu 1/2), 3:1 on
    # the first and last (mu 1/4).
    assert got == {"original": ([0.0, 0.0], 0.0, 0.0),
                   "~": (pytest.approx([1.0, 1.0]), pytest.approx(1.0), pytest.approx(0.0)),
                   "+": ([0.5, 0.5], 0.5, 0.0)}
    assert prof["best"] == "~" and prof["model_sha256"] == ""


class Answering(Calibrating):
    """Answers with the first person a document names (the gold's author, or a distractor's
    critic); with '~' delimiters, the right author."""

    def generate(self, prompts, params):
        self.batches.append(list(prompts))
        out = []
        for p in prompts:
            book = re.search(r"Who wrote book (\d+)\?", p).group(1)
            first = re.search(r"by\W(\w+)\.", p).group(1)  # "by Author0." or "by~Author0."
            out.append(f"Author{book}" if "~" in p else first)
        return out


def test_cnorm_evaluate_by_hand(tmp_path):
    reader = Answering()
    prof = ragform.cnorm.calibrate(reader=reader, records=BOOKS, S=2, k=2,
                                   delims="original,~,+", p=1.0, progress=False)
    store = tmp_path / "eval.sqlite"
    got = ragform.cnorm.evaluate(reader=reader, records=BOOKS, profile=prof, store=store, k=2,
                                 progress=False)
    v = {x["name"]: x for x in got["variants"]}
    # Baseline: right when the gold document comes first, wrong after the distractor; C-NORM
    # (f* = '~') always right, and so Min-Token (the profile's delimiters tie on whitespace
    # tokens: the first).
    assert (v["baseline"]["accuracy"], v["baseline"]["oaa"], v["baseline"]["opa"],
            v["baseline"]["best_position"]) == ([1.0, 0.0], 0.5, 1.0, 1)  # counted from 1
    assert (v["cnorm"]["delimiter"], v["cnorm"]["accuracy"], v["cnorm"]["oaa"]) == \
        ("~", [1.0, 1.0], 1.0)
    assert v["min-token"]["accuracy"] == [1.0, 1.0]
    assert (got["k"], got["items"], got["seeds"]) == (2, 4, [0])
    rows = ragform.RunStore(store).rows()
    assert len(rows) == 4 * 2 * 3  # items x positions x variants
    assert ragform.RunStore(store).runs()[0]["reader"] == "python:Answering"
    # A rerun resumes: nothing left to ask.
    before = len(reader.batches)
    assert ragform.cnorm.evaluate(reader=reader, records=BOOKS, profile=prof, store=store, k=2,
                                  progress=False)["variants"] == got["variants"]
    assert len(reader.batches) == before


def test_sure_evaluate_and_attention_shift_by_hand(tmp_path):
    store = tmp_path / "sure.sqlite"
    reader = Double()
    res = ragform.sure.evaluate(reader=reader, pairs=PAIRS, store=store, batch=4, resamples=10,
                                progress=False)
    # Closed-book the double knows nothing (Unknown); every original holds its answer (Golden).
    assert overall(res)["n"] == 4 and overall(res, "U-G")["n"] == 4
    g = overall(res)
    assert (g["lose"], g["robust"], g["win"]) == (1, 2, 1)
    assert (g["LR"], g["RR"], g["WR"]) == (0.25, 0.5, 0.25)
    assert (g["Org"], g["Acc"]) == (0.75, 0.75)  # ROME is missed before, PARIS after
    assert res["stats"]["generated"] == 4 + 4 + 4 and res["stats"]["unmeasured"] == 0
    # Batches are passed as batches: four closed-book prompts in one call, and so on.
    assert [len(b) for b in reader.batches] == [4, 4, 4]
    assert [p["seeds"] for p in reader.params][0] != [0, 1, 2, 3]  # per-row seeds (row_seed)
    run = ragform.RunStore(store).runs()[0]
    assert (run["reader"], run["model_sha256"]) == ("python:Double", "")

    shift = ragform.sure.attention(PAIRS, store, reader=Double())
    groups = {x["group"]: x for x in shift["groups"]}
    # A = the query token's weight on the answer's one token: Robust (Berlin 0.75 both, Madrid
    # 0.0625 both), Win (ROME 0.125 -> Rome 0.5), Lose (Paris 0.5 -> PARIS 0.25).
    assert groups["Robust"] == {"group": "Robust", "n": 2, "A_org": (0.75 + 0.0625) / 2,
                                "A_pert": (0.75 + 0.0625) / 2, "dA": 0.0}
    assert groups["Win"] == {"group": "Win", "n": 1, "A_org": 0.125, "A_pert": 0.5, "dA": 0.375}
    assert groups["Lose"] == {"group": "Lose", "n": 1, "A_org": 0.5, "A_pert": 0.25, "dA": 0.25}
    # Welch: Robust dA (0, 0) vs Win+Lose (0.375, 0.25): t = -0.3125 / sqrt(0.0078125 / 2) = -5
    # on 1 degree of freedom (Cauchy): two-sided p = 1 - 2 atan(5) / pi.
    assert shift["welch_t"] == pytest.approx(-5.0, rel=1e-12)
    assert shift["welch_p"] == pytest.approx(1 - 2 * math.atan(5) / math.pi, rel=1e-9)
    assert (shift["pairs_measured"], shift["no_span"]) == (4, 0)


def test_describe_names_the_run(tmp_path):
    store = tmp_path / "sure.sqlite"
    ragform.sure.evaluate(reader=Double(), pairs=PAIRS, store=store, progress=False,
                          resamples=10)
    ragform.sure.evaluate(reader=Named(), pairs=PAIRS, store=store, progress=False,
                          resamples=10)
    # Two readers, two runs: rows of one are never taken for the other's.
    assert [r["reader"] for r in ragform.RunStore(store).runs()] == ["python:Double",
                                                                     "double:v2"]


def test_perturb_self_generated_by_a_python_reader():
    class Rewriter(Double):
        def generate(self, prompts, params):
            return [{"text": "A rewritten document about Paris."} for _ in prompts]

    record = {"id": "r", "question": "What is the capital of France?", "answers": ["Paris"],
              "ctxs": [{"title": "France", "text": "Paris is the capital of France."}]}
    got = ragform.sure.perturb(record, kinds="source/self-generated", reader=Rewriter())
    assert [p["perturbed"] for p in got] == ["A rewritten document about Paris."]


def ascii_only(x):
    """x with every non-ASCII character left out: Model.token_piece gives str, so a piece that
    splits a UTF-8 character cannot reach a Python reader byte for byte."""
    if isinstance(x, str):
        return "".join(c for c in x if ord(c) < 128)
    if isinstance(x, list):
        return [ascii_only(v) for v in x]
    if isinstance(x, dict):
        return {k: ascii_only(v) for k, v in x.items()}
    return x


def test_sure_filter_by_hand():
    class Nli(Double):
        """Entailment both ways, except for a document calling Berlin the German capital."""

        def generate(self, prompts, params):
            self.batches.append(list(prompts))
            return ["contradiction" if "German" in p else "entailment" for p in prompts]

    failed = dict(PAIRS[0], id="q5#0", instance="q5", failed=True, perturbed="")
    reader = Nli()
    got = ragform.sure.filter(PAIRS + [failed], reader=reader, batch=8)
    assert [p["id"] for p in got["kept"]] == ["q1#0", "q3#0", "q4#0"]
    assert [(p["nli_forward"], p["nli_backward"]) for p in got["kept"]] == \
        [("entailment", "entailment")] * 3
    assert [p["id"] for p in got["rejected"]] == ["q2#0", "q5#0"]
    assert got["rejected"][0]["nli_forward"] == "contradiction"
    c = got["counts"]
    assert (c["input"], c["failed_perturbation"], c["nli_checked"],
            c["nli_forward_not_entailed"], c["nli_unmeasured"], c["kept"]) == (5, 1, 4, 1, 0, 3)
    # Both directions of the four checked pairs, in batches.
    assert sum(len(b) for b in reader.batches) == 8 and max(map(len, reader.batches)) > 1
    # No NLI, no reader needed.
    assert len(ragform.sure.filter(PAIRS, nli="none")["kept"]) == 4


def oracle_records():
    """Three questions, each with three documents holding the answer (ASCII: see ascii_only)."""
    facts = [("What is the capital of France?", "Paris", "France"),
             ("What is the capital of Germany?", "Berlin", "Germany"),
             ("What is the capital of Spain?", "Madrid", "Spain")]
    return [{"id": f"o{i}", "question": q, "answers": [a],
             "ctxs": [{"title": c, "text": t.format(a=a, c=c)} for t in (
                 "{a} is the capital of {c}.", "The largest city of {c} is {a}, a big city.",
                 "Many people visit {a} every year. It is old.")]}
            for i, (q, a, c) in enumerate(facts)]


def test_sure_oracle_needs_score():
    with pytest.raises(NotImplementedError, match=r"^sure.oracle needs score and tokenize from the "
                                                  r"reader Double; it has no score \("):
        ragform.sure.oracle(oracle_records(), reader=Double(), progress=False)


def test_spotlight_with_a_python_hidden_encoder(model, nq_records):
    record = ascii_only(dict(nq_records[0], id="q0"))
    want = ragform.spotlight.select(record, encoder=model, K=2, layer=2)
    got = ragform.spotlight.select(record, reader=ModelAsPython(model), K=2, layer=2)
    assert got == want


# ---------------------------------------------------------------- failures


def unmeasured(store):
    return [r for r in ragform.RunStore(store).rows() if r["status"] == "unmeasured"]


def test_an_exception_is_an_unmeasured_row_and_a_rerun_measures_it(tmp_path):
    store = tmp_path / "sure.sqlite"
    res = ragform.sure.evaluate(reader=Double(fail_on="Berlin"), pairs=PAIRS, store=store,
                                batch=4, resamples=10, progress=False)
    bad = unmeasured(store)
    # The batch failed, then each prompt alone: only pair 2's original fails (its perturbed row
    # waits for it); the message is the exception's.
    assert [(r["instance"], r["variant"]) for r in bad] == [("q2#0", "original")]
    assert bad[0]["error"] == "python reader: Double.generate: ValueError: boom on Berlin"
    assert res["stats"]["unmeasured"] == 1 and res["stats"]["deferred"] == 1
    assert overall(res)["n"] == 3
    again = ragform.sure.evaluate(reader=Double(), pairs=PAIRS, store=store, batch=4,
                                  resamples=10, progress=False)
    assert again["run"] == res["run"] and again["stats"]["generated"] == 2
    assert unmeasured(store) == [] and overall(again)["n"] == 4


def test_keyboard_interrupt_stops_the_run(tmp_path):
    store = tmp_path / "sure.sqlite"
    reader = Double(interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):
        ragform.sure.evaluate(reader=reader, pairs=PAIRS, store=store, batch=4, resamples=10,
                              progress=False)
    # The closed-book batch is stored, nothing after it: the run stopped, no row is unmeasured.
    rows = ragform.RunStore(store).rows()
    assert len(reader.batches) == 1 and len(rows) == 4 and unmeasured(store) == []

    class Interrupting(Calibrating):
        def attention(self, prompt, layers, heads, positions):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ragform.cnorm.calibrate(reader=Interrupting(), records=None, task="needle", S=1, k=2,
                                progress=False)


# ---------------------------------------------------------------- the native reader, wrapped


def result_rows(path):
    """Every stored column of every result row, as SQLite holds it, but the timings."""
    with sqlite3.connect(path) as db:
        return db.execute("SELECT run, instance, variant, status, error, prompt, prompt_tokens, "
                          "output, correct, scores, extra FROM results ORDER BY rowid").fetchall()


def test_native_reader_through_the_protocol_writes_the_same_rows(model, tmp_path, nq_records):
    pairs = ragform.sure.perturb(nq_records[:3], docs=2,
                                 kinds="format/json,logic/reverse,metadata/timestamp-pre")
    wrapped = ModelAsPython(model)
    a, b = tmp_path / "native.sqlite", tmp_path / "wrapped.sqlite"
    ra = ragform.sure.evaluate(model, pairs, store=a, batch=4, resamples=10, progress=False)
    rb = ragform.sure.evaluate(reader=wrapped, pairs=pairs, store=b, batch=4, resamples=10,
                               progress=False)
    docs = len({p["id"] for p in pairs})  # closed-book, original and perturbed rows
    assert ra["stats"]["generated"] == rb["stats"]["generated"] == 3 + docs + len(pairs)
    assert result_rows(a) == result_rows(b)
    assert ra["groups"] == rb["groups"]
    runs_a, runs_b = ragform.RunStore(a).runs(), ragform.RunStore(b).runs()
    assert runs_a[0]["reader"] == runs_b[0]["reader"] == model.description
    # The same configuration; the identity differs by the model file's hash alone, which a
    # Python reader does not have (config_key covers it).
    for key in ("config", "chat_mode", "seed"):
        assert runs_a[0][key] == runs_b[0][key]
    assert (runs_a[0]["model_sha256"] != "", runs_b[0]["model_sha256"]) == (True, "")

    # The attention shift (two heads) and a calibration: the same numbers.
    sa = ragform.sure.attention(pairs, a, model=model, heads=[0, 1])
    sb = ragform.sure.attention(pairs, b, reader=wrapped, heads=[0, 1])
    assert json.dumps(sa) == json.dumps(sb) and sa["pairs_measured"] > 0
    # The oracle score experiment: score() through the protocol.
    oa = ragform.sure.oracle(oracle_records(), model=model, progress=False)
    ob = ragform.sure.oracle(oracle_records(), reader=wrapped, progress=False)
    assert json.dumps(oa) == json.dumps(ob) and len(oa) == 4
    ca = ragform.cnorm.calibrate(model, nq_records, S=2, k=2, progress=False)
    cb = ragform.cnorm.calibrate(reader=wrapped, records=nq_records, S=2, k=2, progress=False)
    assert cb.pop("model_sha256") == ""  # no model file behind a Python reader
    ca["model_sha256"] = model_sha = ca.pop("model_sha256")
    assert json.dumps(ca) == json.dumps(dict(cb, model_sha256=model_sha))
    # C-NORM's gold-position sweep with that profile: the same rows.
    ea, eb = tmp_path / "cnorm-native.sqlite", tmp_path / "cnorm-wrapped.sqlite"
    sa = ragform.cnorm.evaluate(model, nq_records, profile=ca, store=ea, k=2, limit=3,
                                max_tokens=4, progress=False)
    sb = ragform.cnorm.evaluate(reader=wrapped, records=nq_records, profile=ca, store=eb, k=2,
                                limit=3, max_tokens=4, progress=False)
    assert len(result_rows(ea)) == 3 * 2 * 3 and result_rows(ea) == result_rows(eb)
    sa.pop("store"), sb.pop("store")
    assert json.dumps(sa) == json.dumps(sb)
