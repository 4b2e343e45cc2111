"""ragform's engine against Hugging Face transformers on the same weights (Gemma 3 270M, every
tensor F32; transformers in float32 with eager attention): the second reference beside
llama.cpp (docs/engine.md, "Against Hugging Face transformers").

ragform runs with numerics="transformers": RoPE angles and GELU rounded as transformers rounds
them (engine_options.h). With its default (llama.cpp's numbers: RoPE angles by repeated float
products, GELU from an F16 table) the same comparisons are an order of magnitude or two further
apart; test_default_numerics_stay_within_their_stated_distance states by how much.

Targets (issue 44): logits 1e-3 absolute at every position of a prompt of 1,500+ tokens,
next-token probabilities 1e-5, the last token's attention rows 1e-5 in every layer and head (the
prompt is longer than the 512-key window of the sliding layers), C-NORM's ABS per candidate 1e-5,
and a continuation's log-probs. The last tests perturb each side and check that the comparison
fails (a test of the test).
"""
import numpy as np
import pytest

from conftest import (INSTALL, abs_paper, hf_forward, max_abs_diff, max_prob_diff, measured,
                      shared_file, softmax64)

torch = pytest.importorskip("torch", reason=INSTALL)
import ragform  # noqa: E402  (installed by scripts/test-transformers.sh with the stack)

TOL_LOGITS = 1e-3
TOL_PROBS = 1e-5
TOL_ATTENTION = 1e-5
TOL_ABS = 1e-5
# A prompt with an ill-conditioned token (test_abs_per_delimiter_candidate). Measured on its ABS
# (2026-12-07, Zen 5): ragform is 3.7e-5 above a float64 forward pass that rounds RoPE as
# transformers does, transformers' float32 4.0e-5 below it, and transformers alone moves 3.1e-5
# with the kernels torch dispatches (7.7e-5 from ragform by default, 5.1e-5 with
# ATEN_CPU_CAPABILITY=avx2, 4.5e-5 with MKL_CBWR=COMPATIBLE; 1.8e-5 on the Intel Xeon kind).
# 1e-4 is 1.3x the worst of these; every other prompt keeps TOL_ABS.
TOL_ABS_NOISY = 1e-4
TOL_LOGPROB = 1e-4  # a log-prob is a logit minus a log-sum-exp: the logits' agreement, tenfold
WINDOW = 512        # Gemma 3's sliding window (layers il % 6 < 5)


@pytest.fixture(scope="module")
def long_prompt(qa_prompt, native):
    """At least 1,500 tokens of NQ-Open passages: the question's gold passage first."""
    return qa_prompt(1500, lambda p: len(native.tokenize(p)))


@pytest.fixture(scope="module")
def long_pass(long_prompt, native, hf_model):
    """Both engines over the long prompt: the ids, the logits of every position and the last
    position's attention rows of every layer."""
    ids = native.tokenize(long_prompt)
    hf_logits, hf_rows = hf_forward(hf_model, ids, attentions=True)
    rf_logits = native.logits(long_prompt, "all")
    rf_rows = [native.attention(long_prompt, layer).heads for layer in range(len(hf_rows))]
    return dict(ids=ids, hf_logits=hf_logits, hf_rows=hf_rows, rf_logits=rf_logits,
                rf_rows=rf_rows)


def test_the_two_load_the_same_model(hf_model, native):
    cfg = hf_model.config
    assert type(hf_model).__name__ == "Gemma3ForCausalLM"
    assert cfg.num_hidden_layers == 18 and cfg.num_attention_heads == 4
    assert cfg.num_key_value_heads == 1  # GQA: one KV head for the four query heads
    assert cfg.sliding_window == WINDOW
    assert cfg.hidden_activation == "gelu_pytorch_tanh"
    kinds = [("sliding" if i % 6 < 5 else "full") for i in range(18)]
    assert [t.split("_")[0] for t in cfg.layer_types] == kinds
    a = native.attention("The capital of France is")
    assert a.heads.shape[0] == 4


def test_tokenisation_is_the_same_with_bos(long_prompt, native, hf_tokenizer, nq_records):
    texts = [long_prompt, "The capital of France is", "  two  spaces\tand a tab\n\nnewlines",
             "Röntgen, Skłodowska-Curie, 東京, emoji 🙂", "a b", " leading space", "x"]
    texts += [r["ctxs"][0]["text"] for r in nq_records[:10]]
    for t in texts:
        ours = native.tokenize(t)
        theirs = hf_tokenizer(t)["input_ids"]
        assert ours == theirs, t[:60]
        # One BOS (id 2), added by both; never a second one, never an EOS.
        assert ours[0] == 2 and 2 not in ours[1:] and ours[-1] != 1
        assert native.tokenize(t, bos=False) == hf_tokenizer(t, add_special_tokens=False)[
            "input_ids"]
    # Control-token text inside a prompt stays text in ragform (a document cannot inject <bos>
    # or a turn marker); transformers' tokenizer parses it as the control token unless told not
    # to (split_special_tokens=True), which then gives ragform's ids.
    t = "Document: <bos> and <eos> and <start_of_turn>user as text"
    ours = native.tokenize(t)
    assert ours.count(2) == 1 and 1 not in ours
    assert ours == hf_tokenizer(t, split_special_tokens=True)["input_ids"]
    assert hf_tokenizer(t)["input_ids"].count(2) == 2
    n = len(native.tokenize(long_prompt))
    measured("tokenisation: texts with equal ids", len(texts) + 1)
    measured("long prompt tokens", n)
    assert n >= 1500


def test_logits_at_every_position(long_pass):
    d, where = max_abs_diff(long_pass["rf_logits"], long_pass["hf_logits"])
    T = len(long_pass["ids"])
    measured(f"logits max |d| over {T} positions x 262144", d)
    assert d <= TOL_LOGITS, f"logits differ by {d:.3g} at position {where} of {T}"
    # Greedy next tokens equal wherever transformers' top-2 margin exceeds the tolerance.
    hf, rf = long_pass["hf_logits"], long_pass["rf_logits"]
    top2 = np.sort(hf, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > 2 * TOL_LOGITS
    assert (hf.argmax(1) == rf.argmax(1))[clear].all()


def test_next_token_probabilities_at_every_position(long_pass):
    d = max_prob_diff(long_pass["rf_logits"], long_pass["hf_logits"])
    measured(f"next-token probabilities max |d| over {len(long_pass['ids'])} positions", d)
    assert d <= TOL_PROBS


def test_last_token_attention_in_every_layer_and_head(long_pass, hf_model):
    T = len(long_pass["ids"])
    assert T > WINDOW + 100
    worst = []
    for layer, (rf, hf) in enumerate(zip(long_pass["rf_rows"], long_pass["hf_rows"])):
        assert rf.shape == hf.shape == (4, T), (layer, rf.shape, hf.shape)
        d = float(np.abs(rf.astype(np.float64) - hf).max())
        worst.append(d)
        sliding = hf_model.config.layer_types[layer] == "sliding_attention"
        if sliding:  # only the last 512 keys are seen: exactly 0 before, in both
            assert (rf[:, :T - WINDOW] == 0).all() and (hf[:, :T - WINDOW] == 0).all(), layer
        else:
            assert (rf[:, :T - WINDOW] > 0).any() and (hf[:, :T - WINDOW] > 0).any(), layer
        assert d <= TOL_ATTENTION, f"layer {layer}: attention rows differ by {d:.3g}"
    measured(f"attention rows of the last token, max |d| over 18 layers x 4 heads x {T} keys",
             max(worst))
    measured("attention max |d| per layer", " ".join(f"{w:.1e}" for w in worst))


class Recorder:
    """A Python reader over a Model that keeps every prompt C-NORM's calibration asks attention
    of (docs/python.md, "Your own reader")."""

    def __init__(self, m):
        self.m, self.ctx, self.prompts = m, m.ctx, []

    def describe(self):
        return self.m.description

    def generate(self, prompts, params):
        raise AssertionError("calibration generates nothing")

    def tokenize(self, text):
        return self.m.prompt_tokens(text)

    def attention(self, prompt, layers, heads, positions):
        self.prompts.append(prompt)
        return [self.m.attention(prompt, layer, q) for layer in layers for q in positions]


def test_abs_per_delimiter_candidate(native, hf_model, hf_tokenizer, nq_records):
    """C-NORM's calibration (ABS of the final token's last-layer head-mean attention, per sampled
    prompt and per candidate) on ragform, against ABS computed from transformers' attention by
    the paper's formula (section 4.2) on the very prompts calibration built.

    One of these six prompts (candidate '-', the first sample) holds an ill-conditioned token:
    its residual stream (row maximum ~1.5e4) amplifies float32 rounding ~1e4-fold from layer 3 to
    layer 7 in both engines alike (against a float64 forward pass, docs/engine.md), so there the
    two agree to 2e-5-8e-5 on ABS (as torch's kernels go: TOL_ABS_NOISY) and ~1.5e-4 on the
    attention rows instead of 1e-6. The bar is
    1e-5 for every prompt whose last-layer rows agree within their own 1e-5 and for the mean of
    every candidate made of such prompts; TOL_ABS_NOISY for a prompt whose rows do not (at most
    one of six) and for its candidate's mean."""
    rec = Recorder(native)
    delims = "none,-,&"
    S = 2
    profile = ragform.cnorm.calibrate(reader=rec, records=nq_records[:8], task="qa", S=S,
                                      delims=delims, k=5, seed=3, progress=False)
    cands = profile["candidates"]
    assert [c["delimiter"] for c in cands] == delims.split(",")
    assert len(rec.prompts) == len(cands) * S  # exhaustive: candidate by candidate
    worst, worst_mean, noisy, noisy_mean, lengths = 0.0, 0.0, [], [], []
    for ci, c in enumerate(cands):
        hf_abs, clean = [], True
        for s in range(S):
            prompt = rec.prompts[ci * S + s]
            ids = native.tokenize(prompt)
            assert ids == hf_tokenizer(prompt)["input_ids"]
            lengths.append(len(ids))
            _, rows = hf_forward(hf_model, ids, attentions=True)
            hf_abs.append(abs_paper(rows[-1].astype(np.float64).mean(axis=0)))
            ours = native.attention(prompt)
            # ragform's own ABS of that prompt is what the profile stores (9 digits).
            assert abs(ours.abs - c["abs"][s]) <= 1e-8
            d = abs(hf_abs[-1] - c["abs"][s])
            rows_agree = float(np.abs(ours.heads - rows[-1]).max()) <= TOL_ATTENTION
            if rows_agree:
                worst = max(worst, d)
                assert d <= TOL_ABS, f"{c['delimiter']!r} prompt {s}: ABS {c['abs'][s]} " \
                                     f"against transformers' {hf_abs[-1]}"
            else:
                noisy.append(d)
                clean = False
                assert d <= TOL_ABS_NOISY
        d_mean = abs(np.mean(hf_abs) - c["abs_mean"])
        if clean:
            worst_mean = max(worst_mean, d_mean)
        else:
            noisy_mean.append(d_mean)
        bar = TOL_ABS if clean else TOL_ABS_NOISY
        assert d_mean <= bar, f"{c['delimiter']!r}: mean ABS {c['abs_mean']} against {hf_abs}"
    assert len(noisy) <= 1
    # The choice of f* is the same (argmax of the means, unless two means are within 1e-5).
    means = sorted((c["abs_mean"] for c in cands), reverse=True)
    if means[0] - means[1] > TOL_ABS:
        assert profile["best"] == max(cands, key=lambda c: c["abs_mean"])["delimiter"]
    n = len(cands) * S
    measured(f"ABS max |d| over {n - len(noisy)} of {n} calibration prompts "
             f"({min(lengths)}-{max(lengths)} tokens)", worst)
    measured("ABS |d| on the prompt with an ill-conditioned token", max(noisy, default=0.0))
    measured(f"ABS per candidate (mean over {S} prompts), max |d| over "
             f"{len(cands) - len(noisy_mean)} of {len(cands)}", worst_mean)
    measured("ABS per candidate, the candidate with the ill-conditioned prompt",
             max(noisy_mean, default=0.0))


def test_score_of_a_continuation(qa_prompt, native, hf_model, nq_records):
    """SURE's oracle score reads these: the log-probs of an answer after the prompt."""
    prompt = qa_prompt(600, lambda p: len(native.tokenize(p)), question=1)
    answer = " " + nq_records[1]["answers"][0]
    det = native.score_details(prompt, answer)
    ids = native.tokenize(prompt)
    assert det["prompt_tokens"] == len(ids)
    cont = [t["id"] for t in det["tokens"]]
    logits, _ = hf_forward(hf_model, ids + cont)
    lp = torch.log_softmax(torch.from_numpy(logits).double(), dim=-1).numpy()
    hf_lp = [lp[len(ids) - 1 + i, t] for i, t in enumerate(cont)]
    ours = [t["logprob"] for t in det["tokens"]]
    d = max(abs(a - b) for a, b in zip(ours, hf_lp))
    measured(f"score: log-probs of {len(cont)} answer tokens after {len(ids)}, max |d|", d)
    assert d <= TOL_LOGPROB
    assert abs(det["sum"] - sum(hf_lp)) <= TOL_LOGPROB * len(cont)


def test_default_numerics_stay_within_their_stated_distance(long_prompt, long_pass,
                                                            native_ggml):
    """The default (llama.cpp's RoPE angles and GELU table) is not what transformers computes:
    docs/engine.md states how far it is; this holds it there (measured x ~2)."""
    rf_logits = native_ggml.logits(long_prompt, "all")
    d_logits, _ = max_abs_diff(rf_logits, long_pass["hf_logits"])
    d_probs = max_prob_diff(rf_logits, long_pass["hf_logits"])
    del rf_logits
    d_att = max(float(np.abs(native_ggml.attention(long_prompt, layer).heads - hf).max())
                for layer, hf in enumerate(long_pass["hf_rows"]))
    measured("default numerics: logits max |d|", d_logits)
    measured("default numerics: probabilities max |d|", d_probs)
    measured("default numerics: attention max |d|", d_att)
    assert d_logits <= 0.2 and d_probs <= 6e-3 and d_att <= 5e-4
    # ... and further than numerics="transformers": the mode is what closes the gap.
    assert d_att > 10 * TOL_ATTENTION and d_logits > TOL_LOGITS


# A test of the test: the comparisons above must fail when either side is changed a little.

def test_a_nudged_logit_fails_the_comparison(long_pass):
    rf = long_pass["rf_logits"][:64].copy()
    hf = long_pass["hf_logits"][:64]
    assert max_abs_diff(rf, hf)[0] <= TOL_LOGITS
    rf[37, 1234] += 3 * TOL_LOGITS
    d, where = max_abs_diff(rf, hf)
    assert d > TOL_LOGITS and where == 37
    rf[37, 1234] -= 3 * TOL_LOGITS
    # A top logit nudged by the logits' own tolerance moves its probability p by ~1e-3 p (1 - p).
    p = softmax64(hf).max(axis=1)
    row = int(np.argmin(np.abs(p - 0.5)))
    assert 0.1 < p[row] < 0.9
    rf[row, int(hf[row].argmax())] += TOL_LOGITS
    assert max_prob_diff(rf, hf) > TOL_PROBS


def test_a_scaled_weight_of_transformers_fails_the_comparison(qa_prompt, native, hf_model):
    """One RMSNorm weight of one layer of transformers' model scaled by 1 + 1e-3: the attention
    rows of the layers after it and the logits move past the tolerances. Restored afterwards."""
    prompt = qa_prompt(600, lambda p: len(native.tokenize(p)), question=2)
    ids = native.tokenize(prompt)
    w = hf_model.model.layers[8].post_feedforward_layernorm.weight
    saved = w.detach().clone()
    try:
        with torch.no_grad():
            w.mul_(1 + 1e-3)
        logits, rows = hf_forward(hf_model, ids, attentions=True)
    finally:
        with torch.no_grad():
            w.copy_(saved)
    ours = native.logits(prompt, "all")
    d_att = max(float(np.abs(native.attention(prompt, layer).heads - rows[layer]).max())
                for layer in range(9, 18))
    d_logits, _ = max_abs_diff(ours, logits)
    measured("perturbed transformers (one norm weight x 1.001): attention max |d|", d_att)
    measured("perturbed transformers (one norm weight x 1.001): logits max |d|", d_logits)
    assert d_att > TOL_ATTENTION and d_logits > TOL_LOGITS
    # Restored: the comparison passes again on the same prompt.
    logits, _ = hf_forward(hf_model, ids)
    assert max_abs_diff(ours, logits)[0] <= TOL_LOGITS


def test_steered_ragform_fails_the_attention_comparison(long_pass, long_prompt, native):
    """ragform's side perturbed: the last layer's attention to the first document rescaled by
    1.001 (attention steering, docs/python.md) moves its rows past the tolerance. (Its default
    numerics, a change of the last bits only, fail too: test_default_numerics_...)."""
    start = long_prompt.index("Document [1]")
    end = long_prompt.index("Document [2]")
    try:
        native.steering = {"rule": "rescale:1.001", "spans": [(start, end)], "layers": [17]}
        rows = native.attention(long_prompt, 17).heads
    finally:
        native.steering = None
    d = float(np.abs(rows - long_pass["hf_rows"][17]).max())
    measured("perturbed ragform (layer 17 attention to one document x 1.001): attention max |d|",
             d)
    assert d > TOL_ATTENTION
    assert float(np.abs(native.attention(long_prompt, 17).heads -
                        long_pass["hf_rows"][17]).max()) <= TOL_ATTENTION


def test_the_shared_data_is_real_text():
    assert shared_file("data/lost-in-the-middle/qa.prompt").read_text().startswith("Write")
