"""ragform.readers.transformers on the real library (issue 44, "The adapter, tested with the real
library"): the Python pipeline verbs driven through the adapter over transformers' Gemma 3 270M
(float32, eager attention) against the native reader on the same F32 weights
(numerics="transformers"), and the adapter's own mechanics checked, not assumed: one BOS, batched
generation with left padding equal to one prompt at a time, Gemma's chat template, attention of a
GQA model (4 query heads, 1 KV head) in sliding-window and global layers on a prompt longer than
the 512-key window, control-token text in a document kept as text (split_special_tokens=True, as
ragform's tokenizer reads it), sure.oracle on NQ questions with two answer-bearing passages.

Agreement: ABS per candidate and attention rows 1e-5 (the engine's targets, test_engine_agreement),
log-probs 1e-4; greedy answers identical unless the logit margin at the first differing token is
within the logits' agreement (each difference is counted and its margin measured).
"""
import gzip
import json
import re
import sqlite3
import string

import numpy as np
import pytest

import ragform

from conftest import INSTALL, measured, shared_file

torch = pytest.importorskip("torch", reason=INSTALL)

TOL_ABS = 1e-5
TOL_ATTENTION = 1e-5
TOL_LOGPROB = 1e-4
TOL_LOGITS = 1e-3
TOL_HIDDEN = 1e-5  # relative: max |diff| / max |native state| per layer
TOL_SPOTLIGHT = 1e-6  # R_raw and R of every candidate sentence
WINDOW = 512


@pytest.fixture(scope="module")
def reader(hf_model, hf_tokenizer):
    return ragform.readers.transformers(hf_model, hf_tokenizer, batch_size=4)


@pytest.fixture(scope="module")
def pairs(nq_records):
    """A handful of rule-based SURE perturbations (no reader needed) of three NQ records' gold
    documents: the same pairs for both readers."""
    out = ragform.sure.perturb(nq_records[:3], kinds="format,logic/reverse", docs=1, seed=0)
    flat = [p for rec in out for p in (rec if isinstance(rec, list) else [rec])]
    flat = [p for p in flat if not p.get("failed")]
    assert len(flat) >= 3, flat
    return flat[:6]


def _margin_at(hf_model, ids):
    """top-1 minus top-2 logit of transformers' next token after `ids`."""
    with torch.inference_mode():
        logits = hf_model(torch.tensor([ids])).logits[0, -1].double()
    top = torch.topk(logits, 2).values
    return float(top[0] - top[1])


def _greedy_differences(a_rows, b_rows, hf_model, tokenize, tokenizer):
    """Counts the greedy answers that differ between two lists of (prompt, text) and measures the
    logit margin where each first differs (transformers' logits); returns (differ, margins)."""
    margins = []
    for (pa, ta), (pb, tb) in zip(a_rows, b_rows):
        assert pa == pb
        if ta == tb:
            continue
        ia = tokenizer(ta, add_special_tokens=False)["input_ids"]
        ib = tokenizer(tb, add_special_tokens=False)["input_ids"]
        n = 0
        while n < min(len(ia), len(ib)) and ia[n] == ib[n]:
            n += 1
        margins.append(_margin_at(hf_model, tokenize(pa) + ia[:n]))
    return len(margins), margins


# ---------------------------------------------------------------- the adapter's mechanics


def test_tokenize_has_one_bos_as_the_native_reader(reader, native, nq_records):
    for t in ["The capital of France is", nq_records[0]["ctxs"][0]["text"], "x"]:
        ids = reader.tokenize(t)
        assert ids == native.tokenize(t)
        assert ids[0] == 2 and ids.count(2) == 1
    # The generation path feeds the same single BOS (prompt_tokens counts it once).
    p = "Question: who wrote Hamlet?\nAnswer:"
    params = dict(max_tokens=2, temperature=0.0, top_k=0, top_p=1.0, seed=0, seeds=[0],
                  stop=[], ignore_eos=True)
    got = reader.generate([p], params)[0]
    assert got["prompt_tokens"] == len(native.tokenize(p))


# Control tokens' text typed inside a document (a chat transcript, a page about tokenizers):
# transformers' tokenizer makes them control tokens unless split_special_tokens=True, ragform's
# tokenizer never parses special-token text in user content.
CONTROL_TEXT = ("Document [1](Title: Chat transcript) The log reads <start_of_turn>user\nhi"
                "<end_of_turn> and ends with <eos>; a stray <bos> and <pad> follow, then <unk>.")


def test_control_token_text_in_a_document_stays_text(reader, native, hf_tokenizer):
    prompt = CONTROL_TEXT + "\n\nQuestion: what does the log end with?\nAnswer:"
    want = native.tokenize(prompt)
    # The native ids hold one BOS and none of <pad> 0, <eos> 1, <unk> 3, <start/end_of_turn>
    # 105/106; transformers' tokenizer by default parses the text into them (the adapter must not).
    assert want[0] == 2 and want.count(2) == 1
    assert not {0, 1, 3, 105, 106} & set(want)
    default = hf_tokenizer(prompt)["input_ids"]
    assert {1, 105, 106} <= set(default) and default.count(2) == 2
    assert reader.tokenize(prompt) == want
    measured("adapter: ids equal to native on the control-text prompt", len(want))
    # Every path that tokenises: score (prompt and continuation), attention, hidden, generate.
    a = native.score_details(prompt, " <eos>")
    b = reader.score(prompt, " <eos>")
    assert [t["id"] for t in b["tokens"]] == [t["id"] for t in a["tokens"]]
    assert b["prompt_tokens"] == a["prompt_tokens"] == len(want)
    worst = max(abs(x["logprob"] - y["logprob"]) for x, y in zip(a["tokens"], b["tokens"]))
    measured("adapter: control-text prompt score log-prob max |diff|", worst)
    assert worst < TOL_LOGPROB
    assert reader.attention(prompt, [0], [0], [-1])[0]["ids"] == want
    assert reader.hidden(prompt, 1)["ids"] == want
    params = dict(max_tokens=2, temperature=0.0, top_k=0, top_p=1.0, seed=0, seeds=[0, 0],
                  stop=[], ignore_eos=True)
    got = reader.generate([prompt, "<bos>x"], params)  # one batch, left-padded
    assert [g["prompt_tokens"] for g in got] == [len(want), len(native.tokenize("<bos>x"))]


def test_batched_left_padded_generation_equals_one_at_a_time(reader, hf_model, hf_tokenizer,
                                                             native, nq_records):
    prompts = [f"Question: {r['question']}?\nAnswer:" for r in nq_records[:4]]
    prompts[1] = nq_records[1]["ctxs"][0]["text"] + "\n\n" + prompts[1]  # lengths differ
    assert len({len(native.tokenize(p)) for p in prompts}) > 1
    params = dict(max_tokens=8, temperature=0.0, top_k=0, top_p=1.0, seed=0, seeds=[0] * 4,
                  stop=["\n"], ignore_eos=False)
    batched = reader.generate(prompts, params)
    single = ragform.readers.transformers(hf_model, hf_tokenizer, batch_size=1)
    alone = single.generate(prompts, params)
    assert [r["ids"] for r in batched] == [r["ids"] for r in alone]
    assert [r["text"] for r in batched] == [r["text"] for r in alone]
    assert [r["prompt_tokens"] for r in batched] == [len(native.tokenize(p)) for p in prompts]
    nat = [native.generate(p, n_predict=8, stop=["\n"], details=True) for p in prompts]
    differ, margins = _greedy_differences(
        [(p, n["text"]) for p, n in zip(prompts, nat)],
        [(p, b["text"]) for p, b in zip(prompts, batched)], hf_model, native.tokenize,
        hf_tokenizer)
    measured("adapter: greedy answers differing from native (of 4)", differ)
    assert all(m < 2 * TOL_LOGITS for m in margins), margins


def test_chat_template_raw_on_both_sides(reader, hf_tokenizer, gemma_f32, native):
    # The trained file carries no chat template (tokenizer.chat_template is absent from its
    # metadata): ragform refuses chat mode, transformers' tokenizer has none, and the adapter
    # feeds the pipelines' prompts as they are (chat_mode "raw"), as the native reader does.
    assert not hf_tokenizer.chat_template
    with pytest.raises(RuntimeError, match="no recognised chat template"):
        ragform.Model(gemma_f32, threads=1, chat=True)
    assert reader.chat_mode == "raw" == native.chat_mode
    # What the pipelines send through the adapter is the prompt's own tokens: a turn marker in a
    # document is not added, and none is there to be parsed.
    p = "Question: who wrote Hamlet?\nAnswer:"
    assert reader.tokenize(p) == native.prompt_tokens(p)
    assert 105 not in reader.tokenize(p) and 106 not in reader.tokenize(p)  # <start/end_of_turn>


def test_attention_gqa_and_sliding_layers_past_the_window(reader, native, qa_prompt):
    prompt = qa_prompt(WINDOW + 150, lambda p: len(native.tokenize(p)))
    n = len(native.tokenize(prompt))
    assert n > WINDOW + 100
    layers = [0, 5, 6, -1]  # sliding (0, 6), global (5, 17)
    rows = reader.attention(prompt, layers, [], [-1, WINDOW // 2])
    worst = 0.0
    for row in rows:
        assert row["heads"].shape == (4, row["query_position"] + 1)  # four query heads
        want = native.attention(prompt, row["layer"], query=row["query_position"]).heads
        worst = max(worst, float(np.abs(row["heads"] - want).max()))
        if row["layer"] % 6 < 5 and row["query_position"] >= WINDOW:
            # A sliding layer sees only the last 512 keys.
            assert float(row["heads"][:, :row["query_position"] + 1 - WINDOW].max()) == 0.0
    measured("adapter: attention rows max |diff| (4 layers, 2 positions)", worst)
    assert worst < TOL_ATTENTION


# ---------------------------------------------------------------- the pipelines through it


def test_cnorm_calibrate_abs_per_candidate(reader, native, nq_records):
    kw = dict(records=nq_records[:10], S=2, k=3, delims="none,-,&", seed=3, progress=False)
    ours = ragform.cnorm.calibrate(reader=native, **kw)
    theirs = ragform.cnorm.calibrate(reader=reader, **kw)
    assert ours["config"]["samples"] == theirs["config"]["samples"]
    worst = 0.0
    for a, b in zip(ours["candidates"], theirs["candidates"]):
        assert a["delimiter"] == b["delimiter"]
        worst = max(worst, float(np.abs(np.array(a["abs"]) - np.array(b["abs"])).max()))
    measured("adapter: C-NORM ABS per candidate max |diff|", worst)
    assert worst < TOL_ABS
    assert ours["best"] == theirs["best"]


def _answers(store):
    with sqlite3.connect(store) as db:
        return {(i, v): (p, o) for i, v, p, o in db.execute(
            "SELECT instance, variant, prompt, output FROM results WHERE status = 'ok'")}


def _compare_stores(a, b, hf_model, hf_tokenizer, native, what):
    ra, rb = _answers(a), _answers(b)
    assert ra.keys() == rb.keys() and ra
    keys = sorted(ra)
    differ, margins = _greedy_differences([ra[k] for k in keys], [rb[k] for k in keys],
                                          hf_model, native.tokenize, hf_tokenizer)
    measured(f"adapter: {what}: greedy answers differing from native (of {len(keys)})", differ)
    assert all(m < 2 * TOL_LOGITS for m in margins), margins
    return len(keys), differ


def test_cnorm_evaluate(reader, native, hf_model, hf_tokenizer, nq_records, tmp_path):
    prof = ragform.cnorm.calibrate(reader=native, records=nq_records[:10], S=1, k=2,
                                   delims="-,&", progress=False)
    kw = dict(records=nq_records[10:12], profile=prof, k=2, max_tokens=8, progress=False)
    ours = ragform.cnorm.evaluate(reader=native, store=str(tmp_path / "n.sqlite"), **kw)
    theirs = ragform.cnorm.evaluate(reader=reader, store=str(tmp_path / "t.sqlite"), force=True,
                                    **kw)
    n, differ = _compare_stores(str(tmp_path / "n.sqlite"), str(tmp_path / "t.sqlite"), hf_model,
                                hf_tokenizer, native, "cnorm.evaluate")
    if differ == 0:
        assert ours["variants"] == theirs["variants"]


def test_sure_evaluate_and_attention(reader, native, hf_model, hf_tokenizer, pairs, tmp_path):
    kw = dict(temperature=0.0, max_tokens=8, progress=False)
    sn, st = str(tmp_path / "n.sqlite"), str(tmp_path / "t.sqlite")
    ours = ragform.sure.evaluate(reader=native, pairs=pairs, store=sn, **kw)
    theirs = ragform.sure.evaluate(reader=reader, pairs=pairs, store=st, **kw)
    n, differ = _compare_stores(sn, st, hf_model, hf_tokenizer, native, "sure.evaluate")
    if differ == 0:
        assert [g["n"] for g in ours["groups"]] == [g["n"] for g in theirs["groups"]]
    # The attention shift on the answer span: the same labels only when the answers agree.
    an = ragform.sure.attention(pairs, sn, reader=native)
    at = ragform.sure.attention(pairs, st, reader=reader)
    assert an["pairs_measured"] == at["pairs_measured"]
    if differ == 0:
        assert an["pairs_measured"] > 0
        for ga, gb in zip(an["groups"], at["groups"]):
            assert ga["group"] == gb["group"] and ga["n"] == gb["n"]
            for key in ("A_org", "A_pert", "dA"):
                if ga[key] is not None:
                    assert abs(ga[key] - gb[key]) < TOL_ATTENTION, (key, ga, gb)


def test_sure_oracle_scores(reader, native, nq_records):
    recs = nq_records[:4]
    worst = 0.0
    for r in recs[:2]:
        p = r["question"] + "\n" + r["ctxs"][0]["text"] + "\nAnswer:"
        a = native.score_details(p, " " + r["answers"][0])
        b = reader.score(p, " " + r["answers"][0])
        assert [t["id"] for t in a["tokens"]] == [t["id"] for t in b["tokens"]]
        assert a["prompt_tokens"] == b["prompt_tokens"]
        worst = max(worst, max(abs(x["logprob"] - y["logprob"])
                               for x, y in zip(a["tokens"], b["tokens"])))
    measured("adapter: score log-prob max |diff|", worst)
    assert worst < TOL_LOGPROB


def _normalize_answer(s):
    """SQuAD's normalisation (src/text/normalize.h): lower case, no punctuation, no articles,
    single spaces."""
    s = "".join(c for c in s.lower() if c not in string.punctuation)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def _two_passage_records(n):
    """n NQ-Open questions, each with two documents that hold its answer: the question's own gold
    passage and the one other record's gold passage (of the 2,655 in nq-open-oracle) that holds
    a normalised answer of 5+ characters (fewer characters match words by chance), first n in
    file order."""
    with gzip.open(shared_file("data/lost-in-the-middle/nq-open-oracle.jsonl.gz"), "rt") as f:
        recs = [json.loads(line) for line in f]
    texts = [_normalize_answer(r["ctxs"][0]["text"]) for r in recs]
    out = []
    for i, r in enumerate(recs):
        answers = [a for a in map(_normalize_answer, r["answers"]) if len(a) >= 5]
        hits = [j for j, t in enumerate(texts) if j != i and any(a in t for a in answers)]
        if answers and len(hits) == 1:
            ctx = [{"title": c["title"], "text": c["text"]}
                   for c in (r["ctxs"][0], recs[hits[0]]["ctxs"][0])]
            out.append({"question": r["question"], "answers": r["answers"], "ctxs": ctx})
            if len(out) == n:
                return out
    raise AssertionError(f"fewer than {n} NQ-Open records have a second answer-bearing passage")


def test_sure_oracle_native_and_adapter_rows(reader, native):
    """ragform.sure.oracle (paper A.2-A.3) through the adapter against the native reader.

    The oracle's requirement (src/pipelines/sure/analyses.cpp, oracle_documents / oracle_ks): per
    query, the documents that hold a gold answer (normalised substring match), ranked by eq. 5;
    a query with fewer than 2 such documents is skipped and fewer than 2 remaining queries is an
    error ("fewer than 2 queries with 2+ documents"). NQ-Open's oracle records hold one gold
    passage each, so on them the oracle cannot run with any reader. Nothing else is missing from
    NQ: the records here are NQ questions given a second answer-bearing passage from the same
    file (_two_passage_records). The rows (K-S D and p of top- against bottom-ranked documents
    and of the seeded control pair, per feature) are equal when both readers rank each query's
    two documents alike, which the per-document scores below check with their margins."""
    recs = _two_passage_records(4)
    ours = ragform.sure.oracle(recs, reader=native, progress=False)
    theirs = ragform.sure.oracle(recs, reader=reader, progress=False)
    assert [r["feature"] for r in ours] == [r["feature"] for r in theirs] == \
        ["flesch", "distinct1", "token_length", "ppl"]
    worst_row = 0.0
    for a, b in zip(ours, theirs):
        assert a.keys() == b.keys()
        for k in a:
            if k != "feature":
                worst_row = max(worst_row, abs(a[k] - b[k]))
    measured("adapter: sure.oracle K-S rows max |diff| (4 features x 4 numbers)", worst_row)
    assert worst_row < 1e-9
    # The readers' eq. 5 inputs on the same documents: answer log-probs after the document and
    # the question, and the ordering of each query's two documents, with the smaller gap.
    worst, gap = 0.0, float("inf")
    for r in recs:
        sums = []
        for c in r["ctxs"]:
            p = f"(Title: {c['title']}) {c['text']}\nQuestion: {r['question']}\nAnswer:"
            a = native.score_details(p, " " + r["answers"][0])
            b = reader.score(p, " " + r["answers"][0])
            assert [t["id"] for t in a["tokens"]] == [t["id"] for t in b["tokens"]]
            worst = max(worst, abs(a["sum"] - b["sum"]))
            sums.append((a["sum"], b["sum"]))
        (n0, t0), (n1, t1) = sums
        assert (n0 > n1) == (t0 > t1)
        gap = min(gap, abs(n0 - n1))
    measured("adapter: oracle documents' answer log-prob sums max |diff|", worst)
    measured("adapter: smallest score gap between a query's two documents", gap)
    assert worst < TOL_LOGPROB * 10


# The adapter and the native reader number hidden layers alike: hidden(prompt, L) is the residual
# stream after block L, 0-based (n_layer = the final norm's output: src/engine/runtime/context.h,
# "Hidden-state tap"), which is transformers' hidden_states[L + 1]; the last block's output before
# the norm is none of transformers' hidden_states and the adapter hooks that block for it. Until
# 2026-12-07 the adapter read hidden_states[L], one block early (measured on NQ record 0's
# question: native L = 0..3 equal hidden_states[L + 1] to a relative 1.9e-7 and differ from
# hidden_states[L] by 0.18-1.0), and SpotlightRAG's layer 1 picked another third sentence.
def test_hidden_layers_numbered_as_native(reader, native, nq_records):
    text = nq_records[0]["question"]
    n = native.n_layer
    rel = {}
    for layer in [0, 1, 2, n - 2, n - 1, n, -1, -2]:
        want = np.asarray(native.hidden(text, layer), dtype=np.float64)
        got = np.asarray(reader.hidden(text, layer)["states"], dtype=np.float64)
        assert got.shape == want.shape
        rel[layer] = float(np.abs(got - want).max() / np.abs(want).max())
        measured(f"adapter: hidden layer {layer} relative max |diff| against native", rel[layer])
    assert all(r < TOL_HIDDEN for r in rel.values()), rel


def test_spotlight_select_with_hidden_states(reader, native, nq_records):
    """ragform.spotlight.select with the hidden-state encoder of layer 1 (the default) through
    the adapter. (When the adapter numbered layers one block early, it picked another third
    sentence on NQ record 0: sent 5 for native's sent 2, R_raw off by up to 4.2e-2.)

    Every candidate sentence's score (R_raw: the late-interaction score min-max normalised,
    blended with the two BM25 scores, which are reader-free: src/pipelines/spotlight/scoring.cpp;
    and R, its min-max normalisation) within TOL_SPOTLIGHT (measured on NQ records 0-9: 6.7e-8
    and 1.1e-7; the unit-normalised states agree to 6.6e-7). Wherever native's ranking has a gap
    wider than twice the scores' disagreement, the adapter's top sentences above the gap are
    native's (record 0's third and fourth candidates are 5.5e-3 apart; the smallest gap of
    records 0-9 is 9.0e-4, record 9)."""
    layer = 1
    worst_raw = worst_norm = 0.0
    pairs = []  # (native ranking, adapter ranking, native R_raw in ranking order) per record
    for rec in nq_records[:10]:
        kw = dict(K=1000, order="score")
        ours = ragform.spotlight.select(rec, reader=native, layer=layer, **kw)["selected"]
        theirs = ragform.spotlight.select(rec, reader=reader, layer=layer,
                                          **kw)["selected"]
        a = {(s["doc_id"], s["sent_id"]): s for s in ours}
        b = {(s["doc_id"], s["sent_id"]): s for s in theirs}
        assert a.keys() == b.keys() and len(a) == len(ours)
        for key in a:
            worst_raw = max(worst_raw, abs(a[key]["R_raw"] - b[key]["R_raw"]))
            worst_norm = max(worst_norm, abs(a[key]["R"] - b[key]["R"]))
        pairs.append(([(s["doc_id"], s["sent_id"]) for s in ours],
                      [(s["doc_id"], s["sent_id"]) for s in theirs], [s["R_raw"] for s in ours]))
    measured("adapter: spotlight R_raw max |diff| (every sentence of 10 NQ records)", worst_raw)
    measured("adapter: spotlight R max |diff|", worst_norm)
    assert worst_raw < TOL_SPOTLIGHT and worst_norm < TOL_SPOTLIGHT
    resolved = unresolved = 0
    for ra, rb, scores in pairs:
        for i in range(len(ra) - 1):
            if scores[i] - scores[i + 1] > 2 * worst_raw:
                assert set(ra[:i + 1]) == set(rb[:i + 1]), (ra, rb, scores)
                resolved += 1
            else:
                unresolved += 1
    measured("adapter: spotlight ranking gaps resolved / within the disagreement",
             f"{resolved} / {unresolved}")
    # The call as a user makes it: record 0, K=3, document order.
    rec = nq_records[0]
    ours = ragform.spotlight.select(rec, reader=native, K=3, layer=layer)
    theirs = ragform.spotlight.select(rec, reader=reader, K=3, layer=layer)
    ra, _, scores = pairs[0]
    assert scores[2] - scores[3] > 2 * worst_raw  # measured: 5.5e-3
    assert [(s["doc_id"], s["sent_id"]) for s in ours["selected"]] == \
        [(s["doc_id"], s["sent_id"]) for s in theirs["selected"]] == sorted(ra[:3])
    assert ours["prompt"] == theirs["prompt"]


def test_tune_tiny_budget(reader, native, hf_model, hf_tokenizer, tmp_path):
    # One delimiter dimension only (every other dimension pinned), no ABS filter: the smallest
    # search tune plans.
    kw = dict(delims="none,-", p="0.5", formats="plain", orders="retrieved", k="all",
              spotlight="off", abs_filter=False, dev_items=4, holdout_items=4, needle_slots=2,
              robust_items=2, max_tokens=8)
    sn, st = str(tmp_path / "n.sqlite"), str(tmp_path / "t.sqlite")
    try:
        ours = ragform.tune(native, "needle", 40, sn, **kw)
    except ValueError as e:
        pytest.skip(f"tune's smallest plan does not fit this budget: {e}")
    theirs = ragform.tune(reader, "needle", 40, st, **kw)
    assert ours["spent"] == theirs["spent"]
    assert ours["deployed"] == theirs["deployed"]
    # Measured: the 40 answers of the two stores are the same text.
    n, differ = _compare_stores(sn, st, hf_model, hf_tokenizer, native, "tune")
    if differ:
        return  # the accuracies may differ with the answers (their margins are checked above)
    # Everything else is equal but what names the reader or the call, not what it measured:
    # - profile "model", "model_sha256": the model file and its hash (the adapter has no file:
    #   ''); "reader": the reader's identity ('native:gemma-3-270m-f32.gguf#numerics=transformers'
    #   against 'transformers:<the model's folder>'); "run"."store": the store each call was given;
    # - the result's "store": the same; "context": the reader's context cap (native: 4096 tokens,
    #   the file's context_length 32768 capped to the reader's default; the adapter declares none,
    #   so None and "give --ctx to cap prompts"): no prompt here comes near it, and the prompts
    #   dropped for context are compared (dropped_for_context, 0 on both).
    def without_reader(res):
        return {k: v for k, v in res.items() if k not in ("store", "context", "profile")}

    def profile_without_reader(prof):
        prof = {k: v for k, v in prof.items() if k not in ("model", "model_sha256", "reader")}
        prof["run"] = {k: v for k, v in prof["run"].items() if k != "store"}
        return prof
    assert ours["profile"]["model_sha256"] and theirs["profile"]["model_sha256"] == ""
    assert without_reader(ours) == without_reader(theirs)
    assert profile_without_reader(ours["profile"]) == profile_without_reader(theirs["profile"])
    measured("adapter: tune result equal to native's but for the reader's names",
             "yes (profile: model, model_sha256, reader, run.store; result: store, context)")
