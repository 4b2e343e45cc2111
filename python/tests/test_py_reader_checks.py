"""A Python reader's answers are checked where they cross into C++ (issue 40, items 8, 18 and 20;
python/src/py_reader.cpp): attention of the wrong shape or not a distribution, log-probs that
are not log-probs, hidden states and token lists of the wrong length, text that is not valid
UTF-8 and results of the wrong type raise ValueError naming the reader, the method and what is
wrong, instead of flowing into ABS, the K-S tests or the store. A verb checks every method it
needs before it starts and names all that are missing. Lone surrogates in the text arguments of
every function are a ValueError naming the argument."""
import re

import numpy as np
import pytest

import ragform
import ragform.bias

# ---------------------------------------------------------------- readers


class Words:
    """Words are tokens (ids 1..n, pieces the words with their space); attention is uniform over
    keys 0..q, log-probs -1 each, hidden states [tokens, 2]. Subclasses break one answer."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, params):
        self.calls.append("generate")
        return [{"text": "Paris", "finish_reason": "stop"} for _ in prompts]

    def tokenize(self, text):
        self.calls.append("tokenize")
        return list(range(1, len(text.split()) + 1))

    def attention(self, prompt, layers, heads, positions):
        self.calls.append("attention")
        words = prompt.split()
        n, pieces = len(words), [w if i == 0 else " " + w for i, w in enumerate(words)]
        rows = []
        for _ in layers:
            for q in positions:
                q = q + n if q < 0 else q
                rows.append({"heads": np.full((2, q + 1), 1.0 / (q + 1)), "pieces": pieces})
        return rows

    def score(self, prompt, continuation):
        self.calls.append("score")
        n = len(continuation.split()) if continuation else len(prompt.split()) - 1
        return [-1.0] * n

    def hidden(self, prompt, layer):
        self.calls.append("hidden")
        words = prompt.split()
        return np.ones((len(words), 2), dtype=np.float32), words


def reader_of(**methods):
    """A Words reader whose methods named in `methods` are replaced (staticmethods: no self)."""
    cls = type("MyReader", (Words,), {k: staticmethod(v) for k, v in methods.items()})
    return ragform.readers.as_reader(cls())


PROMPT_150 = " ".join(f"w{i}" for i in range(150))


def refused(reader_call, message):
    """reader_call() raises ValueError whose message is `message` exactly (a regex)."""
    with pytest.raises(ValueError, match="^python reader: " + message + "$"):
        reader_call()


# ---------------------------------------------------------------- item 8: attention


def test_attention_of_the_wrong_shape_is_refused_naming_the_method():
    # The cases: [8, 3] for a 150-token prompt and a 1-D row gave ABS 1.0 for everything.
    r = reader_of(attention=lambda p, l, h, q: np.full((8, 3), 1 / 3))
    refused(lambda: r.attention(PROMPT_150),
            r"MyReader.attention: rows must be \[n_tokens\] = 150 long, got 3")
    r = reader_of(attention=lambda p, l, h, q: np.full(3, 1 / 3))
    refused(lambda: r.attention(PROMPT_150),
            r"MyReader.attention: rows must be \[n_tokens\] = 150 long, got 3")
    # A position counted from the end, and one from the start.
    r = reader_of(attention=lambda p, l, h, q: [np.full((1, 4), 0.25)])
    refused(lambda: r.attention("a b c d e f", query=-2),
            r"MyReader.attention: the row of query position -2 must be \[n_tokens - 1\] = 5 "
            r"long, got 4")
    refused(lambda: r.attention("a b c d e f", query=4),
            r"MyReader.attention: the row of query position 4 must be \[4 \+ 1\] = 5 long, got 4")
    # Without tokenize, the ids the row carries give the prompt's length.
    no_tok = type("NoTok", (), {"generate": Words.generate,
                                "attention": lambda self, p, l, h, q: {
                                    "heads": np.full((1, 3), 1 / 3), "ids": list(range(150))}})
    refused(lambda: ragform.readers.as_reader(no_tok()).attention(PROMPT_150),
            r"NoTok.attention: rows must be \[n_tokens\] = 150 long, got 3")
    # Too many rows, a 3-D row, head ids or a layer that do not match, ids of another prompt.
    r = reader_of(attention=lambda p, l, h, q: [np.full((1, 3), 1 / 3)] * 2)
    refused(lambda: r.attention("a b c"),
            r"MyReader.attention: expected 1 rows \(layers x positions\), got 2")
    r = reader_of(attention=lambda p, l, h, q: [{"heads": np.full((1, 1, 3), 1 / 3)}])
    refused(lambda: r.attention("a b c"),
            r"MyReader.attention: a row's heads must be a \[heads, keys\] array, got a 3-D array")
    r = reader_of(attention=lambda p, l, h, q: [{"heads": np.full((3, 3), 1 / 3),
                                                 "head_ids": [0, 1]}])
    refused(lambda: r.attention("a b c"),
            r"MyReader.attention: head_ids does not name every returned head")
    r = reader_of(attention=lambda p, l, h, q: [{"heads": np.full((1, 3), 1 / 3), "layer": 2}])
    refused(lambda: r.attention("a b c", layer=1),
            r"MyReader.attention: asked for layer 1, got a row of layer 2")
    r = reader_of(attention=lambda p, l, h, q: [{"heads": np.full((1, 3), 1 / 3),
                                                 "ids": [1, 2, 3, 4]}])
    refused(lambda: r.attention("a b c"), r"MyReader.attention: ids hold 4 tokens, tokenize "
                                          r"gives 3")


@pytest.mark.parametrize("row, message", [
    ([0.5, np.nan, 0.5], r"head 1: weight nan at key 1 is not finite"),
    ([0.5, -0.25, 0.75], r"head 1: weight -0.25 at key 1 is outside \[0, 1\]"),
    ([1.0, 1.0, 1.0], r"head 1: weights sum to 3, not 1 \(a row is the softmax over keys "
                      r"0..query position\)"),
    ([0.2, 0.2, 0.2], r"head 1: weights sum to 0.6, not 1 \(a row is the softmax over keys "
                      r"0..query position\)"),
    ([1e6, 0.0, 0.0], r"head 1: weight 1e\+06 at key 0 is outside \[0, 1\]"),
])
def test_attention_weights_must_be_a_distribution(row, message):
    r = reader_of(attention=lambda p, l, h, q: {"heads": np.array([[0.25, 0.25, 0.5], row]),
                                                "head_ids": [0, 1]})
    refused(lambda: r.attention("a b c"), r"MyReader.attention: " + message)


def test_attention_weights_are_numbers():
    # [True, False, False] was read as the distribution [1, 0, 0] (issue 40, fourth pass).
    for heads, kind in [([[True, False, False]], "bools"), ([["1", "0", "0"]], "strings")]:
        r = reader_of(attention=lambda p, l, h, q, heads=heads: {"heads": heads})
        refused(lambda: r.attention("a b c"),
                r"MyReader.attention: a row's heads: expected numbers, got an array of " + kind)


def test_attention_mean_is_checked_too():
    r = reader_of(attention=lambda p, l, h, q: {"heads": np.full((1, 3), 1 / 3),
                                                "mean": np.full(3, 0.5)})
    refused(lambda: r.attention("a b c"), r"MyReader.attention: mean: weights sum to 1.5, not 1 "
                                          r"\(a row is the softmax over keys 0..query position\)")
    r = reader_of(attention=lambda p, l, h, q: {"heads": np.full((1, 3), 1 / 3),
                                                "mean": np.full(2, 0.5)})
    refused(lambda: r.attention("a b c"), r"MyReader.attention: mean and heads differ in length")
    # A mean that is a distribution but not the heads' mean (issue 40, fourth pass: ABS 0 from
    # the mean where the heads give 1).
    r = reader_of(attention=lambda p, l, h, q: {"heads": np.full((2, 3), 1 / 3),
                                                "mean": [1.0, 0.0, 0.0]})
    refused(lambda: r.attention("a b c"), r"MyReader.attention: mean is not the mean of the "
                                          r"returned heads: 1 at key 0, the heads give 0.333333")


def test_cnorm_calibrate_refuses_the_wrong_shape_instead_of_abs_1():
    class Wide(Words):
        def attention(self, prompt, layers, heads, positions):
            return np.full((8, 3), 1 / 3)

    with pytest.raises(ValueError, match=r"^python reader: Wide.attention: rows must be "
                                         r"\[n_tokens\] = \d+ long, got 3$"):
        ragform.cnorm.calibrate(reader=Wide(), records=None, task="needle", S=1, k=2,
                                delims="original,~", progress=False)


# ---------------------------------------------------------------- item 8: score


@pytest.mark.parametrize("logprobs, message", [
    ([float("inf"), -1.0], r"log-prob 0: inf is not a finite log-probability"),
    ([-1.0, float("nan")], r"log-prob 1: nan is not a finite log-probability"),
    ([-1.0, 0.5], r"log-prob 1: 0.5 is positive: not a log-probability"),
    ([1e6, -1.0], r"log-prob 0: 1e\+06 is positive: not a log-probability"),
    ([[-1.0, -1.0]], r"the log-probs: expected 1 dimensions, got 2"),
    ("-1 -1", r"expected the log-probs \(a list or 1-D array\) or a dict with 'tokens', got str"),
    # Numbers only (issue 40, fourth pass): numpy's cast read these as -0.5 and 0.
    (["-0.5", "-1"], r"the log-probs: expected numbers, got an array of strings"),
    ([False, True], r"the log-probs: expected numbers, got an array of bools"),
    (np.array([-1 + 0j]), r"the log-probs: expected numbers, got an array of complex numbers"),
    ([-1.0, None], r"the log-probs: expected numbers, got an array of objects"),
])
def test_score_must_return_log_probs(logprobs, message):
    r = reader_of(score=lambda p, c: logprobs)
    refused(lambda: r.score("a b", " c d"), r"MyReader.score: " + message)


def test_score_details_and_lengths_are_checked():
    tok = {"id": 3, "piece": " c", "logprob": -0.5}
    for answer, message in [
        ({"tokens": [tok, {"id": 4, "piece": " d"}]}, r"tokens\[1\] has no 'logprob'"),
        ({"tokens": [tok, dict(tok, logprob=3.0)]},
         r"tokens\[1\]'s logprob: 3 is positive: not a log-probability"),
        ({"tokens": [tok, dict(tok, logprob="x")]}, r"tokens\[1\]'s logprob: expected a number, "
                                                    r"got str"),
        ({"tokens": [tok, dict(tok, id=-5)]}, r"tokens\[1\]'s id: -5 is out of range "
                                              r"\(-1..2147483647\)"),
        ({"tokens": [tok, tok], "sum": -7.0}, r"sum -7 is not the sum of the tokens' log-probs "
                                              r"\(-1\)"),
        ({"tokens": [tok, tok], "sum": float("inf")}, r"sum: inf is not finite"),
        ({"tokens": [tok] * 9}, r"9 log-probs, more than the 4 tokens of the prompt and "
                                r"continuation"),
        # Issue 40, pass 13: a count no prompt of these bytes can have was taken.
        ({"tokens": [tok, tok], "prompt_tokens": 10**6}, r"prompt_tokens: 1000000 is out of range "
                                                         r"\(0\.\.\d+\)"),
    ]:
        r = reader_of(score=lambda p, c, answer=answer: answer)
        refused(lambda: r.score("a b", " c d"), r"MyReader.score: " + message)
    # An empty continuation scores the prompt's tokens after the first: tokenize says how many.
    r = reader_of(score=lambda p, c: [-1.0] * 5)
    refused(lambda: r.score("a b c"), r"MyReader.score: an empty continuation scores the "
                                      r"prompt's tokens after the first: \[n_tokens - 1\] = 2 "
                                      r"log-probs, got 5")
    # A non-empty continuation scored with no log-probs (a probability of 1), or with fewer than
    # its tokens less one (issue 40, fourth pass).
    r = reader_of(score=lambda p, c: [])
    refused(lambda: r.score("a b", " c d"), r"MyReader.score: 0 log-probs for a continuation of "
                                            r"at least 1 token \(one log-prob per continuation "
                                            r"token\)")
    r = reader_of(score=lambda p, c: [-1.0])
    refused(lambda: r.score("a b", " c d e"), r"MyReader.score: 1 log-probs for a continuation of "
                                              r"at least 2 tokens \(one log-prob per "
                                              r"continuation token\)")
    assert list(reader_of(score=lambda p, c: [-1.0]).score("a b", " c d")) == [-1.0]  # seam
    good = reader_of()
    assert list(good.score("a b c")) == [-1.0, -1.0]
    assert good.score_details("a b", " c d")["sum"] == -2.0


def test_scores_of_one_prompt_count_its_tokens_once():
    """The lower bound on a continuation's log-probs needs the prompt's tokens: asked of the
    object once for the continuations of one prompt, not once per continuation."""
    obj = Words()
    r = ragform.readers.as_reader(obj)
    for c in (" c", " c d", " e"):
        r.score("a b", c)
    assert obj.calls.count("tokenize") == 1 + 3  # the prompt once, prompt + continuation each


def oracle_records():
    facts = [("What is the capital of France?", "Paris", "France"),
             ("What is the capital of Germany?", "Berlin", "Germany"),
             ("What is the capital of Spain?", "Madrid", "Spain")]
    return [{"id": f"o{i}", "question": q, "answers": [a],
             "ctxs": [{"title": c, "text": t.format(a=a, c=c)} for t in (
                 "{a} is the capital of {c}.", "The largest city of {c} is {a}, a big city.",
                 "Many people visit {a} every year. It is old.")]}
            for i, (q, a, c) in enumerate(facts)]


def test_sure_oracle_refuses_scores_that_are_not_log_probs():
    # The issue: +inf, positive log-probs or 10^6 flowed into the K-S tests.
    assert len(ragform.sure.oracle(oracle_records(), reader=Words(), progress=False)) == 4

    class Inflated(Words):
        def score(self, prompt, continuation):
            return [1e6] * len(super().score(prompt, continuation))

    with pytest.raises(ValueError, match=r"^python reader: Inflated.score: log-prob 0: 1e\+06 is "
                                         r"positive: not a log-probability$"):
        ragform.sure.oracle(oracle_records(), reader=Inflated(), progress=False)


# ---------------------------------------------------------------- item 8: the other methods


def test_tokenize_must_return_a_flat_list_of_tokens():
    for answer, message in [
        ("a b c", r"the result: expected a list, got str"),
        ([[1, 2, 3]], r"token 0 is a list, expected an integer id \(a flat list of the prompt's "
                      r"tokens\)"),
        (np.array([[1, 2, 3]]), r"the result: expected a list \(a 1-D array\), got a 2-D array"),
        (None, r"the result: expected a list, got NoneType"),
        ([1, 2.5], r"token 1 is a float, expected an integer id \(a flat list of the prompt's "
                   r"tokens\)"),
        # Ids index a vocabulary, and text is at least one token (issue 40, fourth pass).
        ([1, -5], r"token 1: -5 is out of range \(0..2147483647\)"),
        ([2**70], r"token 0: 1180591620717411303424 is out of range \(0..2147483647\)"),
        ([], r"no tokens for a text that is not blank"),
    ]:
        r = reader_of(tokenize=lambda t, answer=answer: answer)
        refused(lambda: r.count_tokens("a b c"), r"MyReader.tokenize: " + message)
    assert reader_of(tokenize=lambda t: np.arange(3)).count_tokens("x") == 3
    assert reader_of(tokenize=lambda t: ["a", "b"]).count_tokens("x") == 2  # token strings
    assert reader_of(tokenize=lambda t: []).count_tokens(" \n") == 0  # whitespace alone


def test_hidden_must_be_finite_and_one_row_per_token():
    for answer, message in [
        ((np.ones((2, 4)), ["a", "b"]), r"states must be \[n_tokens, n_embd\] = \[3, 4\], got 2 "
                                        r"rows"),
        ((np.full((3, 2), np.inf), ["a", "b", "c"]), r"states\[0, 0\] = inf is not finite"),
        ((np.ones((3, 2)), ["a", "b"]), r"3 rows of states for 2 pieces"),
        ({"states": np.ones((3, 2)), "pieces": ["a", "b", "c"], "ids": [1]},
         r"3 rows of states for 1 ids"),
        ((np.ones((3, 2)), ["a", 5, "c"]), r"pieces\[1\]: expected a str, got int"),
        ((np.ones(3), ["a", "b", "c"]), r"states: expected 2 dimensions, got 1"),
        (([["0.5", "1"]] * 3, ["a", "b", "c"]), r"states: expected numbers, got an array of strings"),
    ]:
        r = reader_of(hidden=lambda p, l, answer=answer: answer)
        refused(lambda: r.hidden("a b c", 1), r"MyReader.hidden: " + message)


def test_generate_results_are_checked():
    for answer, message in [
        ("Paris", r"the result: expected a list, got str"),
        ([None], r"result 0 is None"),
        ([{"text": 5}], r"result 0's text: expected a str, got int"),
        ([{"text": "x", "ids": [1, -2]}], r"result 0's ids\[1\]: -2 is out of range "
                                          r"\(0..2147483647\)"),
        ([{"text": "x", "prompt_tokens": -1}], r"result 0's prompt_tokens: -1 is out of range "
                                               r"\(0..2147483647\)"),
        ([{"text": "x", "prompt_tokens": 2.5}], r"result 0's prompt_tokens: expected an integer, "
                                                r"got float"),
        ([{"text": "x", "finish_reason": 1}], r"result 0's finish_reason: expected a str, got "
                                              r"int"),
        # Issue 40, pass 13: any reason was stored as it came.
        ([{"text": "x", "finish_reason": "banana"}], r"result 0's finish_reason: expected 'eos', "
                                                     r"'stop' or 'length', got 'banana'"),
        (["a", "b"], r"2 results for 1 prompts"),
        # Bytes are text too, and must be UTF-8 as text is (issue 40, fourth pass: b"\xff" was
        # stored as U+FFFD with status ok).
        ([b"\xff"], r"result 0: not valid UTF-8 text: invalid UTF-8 at byte offset 0 .*"),
        ([{"text": b"ok\xc3"}], r"result 0's text: not valid UTF-8 text: .*"),
    ]:
        r = reader_of(generate=lambda prompts, params, answer=answer: answer)
        refused(lambda: r._generate("a b"), r"MyReader.generate: " + message)


def test_a_generation_keeps_what_the_request_asked():
    # Issue 40, M7: a text still holding a stop string, and more ids than max_tokens, were taken.
    for answer, kw, message in [
        ([{"text": "Paris. Next", "finish_reason": "stop"}], {"stop": ["."]},
         r"result 0's text holds the stop string '\.': a generation ends before its first stop "
         r"string, which is not part of it"),
        ([{"text": "a b c", "ids": [1, 2, 3]}], {"n_predict": 2},
         r"result 0: 3 ids, more than max_tokens = 2"),
        # Pass 16: without ids, a text for max_tokens 0 was taken.
        (["abc"], {"n_predict": 0}, r"result 0: text of 3 bytes for max_tokens = 0"),
    ]:
        r = reader_of(generate=lambda prompts, params, answer=answer: answer)
        refused(lambda: r._generate("a b", **kw), r"MyReader.generate: " + message)
    # What the request allows passes: the text before the stop, ids within max_tokens.
    r = reader_of(generate=lambda prompts, params: [{"text": "Paris", "ids": [1, 2]}])
    assert r._generate("a b", stop=["."], n_predict=2)["text"] == "Paris"


def test_attention_rows_of_negative_layers_are_labelled_as_an_index():
    # Issue 40, M7: a negative layer counts from the end, so a row's label is the layer's index
    # (or the asked layer itself); a label of -3 for -1 was kept. (Several negative layers in one
    # call must imply one layer count, py_reader_answers.cpp attention_of: a pipeline's call.)
    def labelled(label):
        def attention(prompt, layers, heads, positions):
            n = len(prompt.split())
            return [{"heads": np.full((2, n), 1.0 / n), "layer": label} for _ in layers]
        return reader_of(attention=attention)

    refused(lambda: labelled(-3).attention("a b c", layer=-1),
            r"MyReader.attention: row 0 \(layer -1\) is labelled layer -3: a negative layer "
            r"counts from the end, so its label is the layer's index")
    assert labelled(7).attention("a b c", layer=-1).layer == 7
    assert labelled(-1).attention("a b c", layer=-1).layer == -1
    # A row's query position labelled as asked (-1) is the last one (pass 17: it was refused).
    r = reader_of(attention=lambda p, l, h, q: [{"heads": np.full((2, 3), 1 / 3), "layer": -1,
                                                 "query_position": -1}])
    assert r.attention("a b c", -1, -1).query_position == 2


def test_a_bad_generation_is_an_unmeasured_row_naming_it(tmp_path):
    pairs = [{"id": "q1#0", "instance": "q1", "doc": 0, "perturbation": "format/json",
              "category": "format", "question": "What is the capital of France?",
              "answers": ["Paris"], "title": "T", "original": "Paris is the capital.",
              "perturbed": "{\"text\": \"Paris is the capital.\"}", "embeds_title": False,
              "note": "", "failed": False}]

    class Numbers(Words):
        def generate(self, prompts, params):
            return [{"text": 42} for _ in prompts]

    with pytest.raises(RuntimeError, match=r"Numbers.generate: result 0's text: expected a str, "
                                           r"got int"):
        ragform.sure.evaluate(reader=Numbers(), pairs=pairs, store=tmp_path / "s.sqlite",
                              resamples=10, progress=False)
    rows = ragform.RunStore(tmp_path / "s.sqlite").rows()
    assert rows and all(r["status"] == "unmeasured" for r in rows)
    assert rows[0]["error"] == ("python reader: Numbers.generate: result 0's text: expected a "
                                "str, got int")


# ---------------------------------------------------------------- item 18: lone surrogates


@pytest.mark.parametrize("method, answer, message", [
    ("generate", lambda p, q: ["a\ud800b"], r"generate: result 0: not valid UTF-8 text: a lone "
                                            r"surrogate U\+D800 at index 1"),
    ("generate", lambda p, q: [{"text": "ok\udc80"}], r"generate: result 0's text: not valid "
                                                       r"UTF-8 text: a lone surrogate U\+DC80 at "
                                                       r"index 2"),
    ("generate", lambda p, q: [{"text": "x", "finish_reason": "\ud801"}],
     r"generate: result 0's finish_reason: not valid UTF-8 text: a lone surrogate U\+D801 at "
     r"index 0"),
    ("hidden", lambda p, l: (np.ones((1, 2)), ["\ud800"]),
     r"hidden: pieces\[0\]: not valid UTF-8 text: a lone surrogate U\+D800 at index 0"),
    ("attention", lambda p, l, h, q: [{"heads": np.ones((1, 1)), "pieces": ["\ud800"]}],
     r"attention: pieces\[0\]: not valid UTF-8 text: a lone surrogate U\+D800 at index 0"),
    ("score", lambda p, c: {"tokens": [{"piece": "\ud800", "logprob": -1.0}]},
     r"score: tokens\[0\]'s piece: not valid UTF-8 text: a lone surrogate U\+D800 at index 0"),
])
def test_a_lone_surrogate_in_a_readers_text_is_a_value_error_naming_it(method, answer, message):
    r = reader_of(**{method: answer})
    call = {"generate": lambda: r._generate("x"), "hidden": lambda: r.hidden("x", 1),
            "attention": lambda: r.attention("x"), "score": lambda: r.score("x", " y")}[method]
    with pytest.raises(ValueError, match="^python reader: MyReader." + message + "$") as e:
        call()
    assert "PYBIND11" not in str(e.value)


def test_a_lone_surrogate_in_describe_is_named():
    class Odd(Words):
        def describe(self):
            return "odd\ud800"

    with pytest.raises(ValueError, match=r"^python reader: Odd.describe: the result: not valid "
                                         r"UTF-8 text: a lone surrogate U\+D800 at index 3$"):
        ragform.readers.as_reader(Odd())


@pytest.mark.parametrize("call, name", [
    (lambda m: ragform.bias.document_relevance(m, "Once \ud800 upon", [(0, 4)]), "prompt"),
    (lambda m: ragform.bias.position_bias(m, task="needle\ud800"), "task"),
    (lambda m: ragform.tune(m, "needle", 1, "/tmp/\ud800.sqlite"), "store"),
    (lambda m: ragform.tune(m, "needle", 1, "x.sqlite", delims=["a\udc00"]), r"delims\[0\]"),
    (lambda m: ragform.present({"id": "a"}, "/tmp/p\ud800.json"), "profile"),
    (lambda m: ragform.present({"id": "a\ud800"}, {}), r"record\['id'\]"),
    (lambda m: ragform.RunStore("/tmp/\ud800.sqlite"), "path"),
    (lambda m: ragform.cnorm.apply({"delimiter": "\ud800"}, {}), r"profile\['delimiter'\]"),
])
def test_lone_surrogates_in_the_remaining_text_arguments(model, call, name):
    with pytest.raises(ValueError, match=rf"^{name}: not valid UTF-8 text: a lone surrogate "
                                         rf"U\+D"):
        call(model)


# ---------------------------------------------------------------- item 20: the whole need


class GenerateOnly:
    def __init__(self):
        self.calls = 0

    def generate(self, prompts, params):
        self.calls += 1
        return ["x" for _ in prompts]


class TokenizeOnly(GenerateOnly):
    def tokenize(self, text):
        return text.split()


class AttentionOnly(GenerateOnly):
    def attention(self, prompt, layers, heads, positions):
        return np.ones((1, len(prompt.split())))


RECORDS = [{"id": "r0", "question": "Who wrote it?", "answers": ["Ann"],
            "ctxs": [{"title": "T", "text": "Ann wrote it.", "hasanswer": True},
                     {"title": "U", "text": "Bob read it.", "hasanswer": False}]}]


def profile():
    """A C-NORM profile, calibrated on a reader that has what calibration needs."""
    return ragform.cnorm.calibrate(reader=Words(), records=RECORDS, S=1, k=2,
                                   delims="original,~", progress=False)


def need(verb, methods, cls, has):
    return (rf"^{re.escape(verb)} needs {methods} from the reader {cls}; {has} \(docs/python.md, 'Your own "
            rf"reader': the methods each verb uses\)$")


NEEDS = {  # verb: (its call, the methods it needs beside generate)
    "cnorm.calibrate": (lambda r, tmp: ragform.cnorm.calibrate(reader=r, records=RECORDS, S=1,
                                                               k=2, progress=False),
                        "tokenize and attention"),
    "cnorm.evaluate": (lambda r, tmp: ragform.cnorm.evaluate(
        reader=r, records=RECORDS, store=tmp / "e.sqlite", profile=profile(), k=2,
        progress=False), "tokenize"),
    "sure.attention": (lambda r, tmp: ragform.sure.attention([], tmp / "none.sqlite", reader=r),
                       "tokenize and attention"),
    "sure.oracle": (lambda r, tmp: ragform.sure.oracle(RECORDS, reader=r, progress=False),
                    "score and tokenize"),
    "spotlight.select": (lambda r, tmp: ragform.spotlight.select(RECORDS[0], reader=r), "hidden"),
    "bias.document_relevance": (lambda r, tmp: ragform.bias.document_relevance(
        r, "Ann wrote it.", [(0, 4)]), "attention"),
    "tune with ctx=512": (lambda r, tmp: ragform.tune(r, "needle", 30, tmp / "t.sqlite",
                                                      ctx=512), "tokenize"),
    "tune's ABS filter (abs_filter=True)": (lambda r, tmp: ragform.tune(r, "needle", 30,
                                                                        tmp / "t.sqlite"),
                                            "tokenize"),
}


@pytest.mark.parametrize("verb, cls, has", [
    ("cnorm.calibrate", GenerateOnly, "it has neither"),
    ("cnorm.calibrate", TokenizeOnly, "it has no attention"),
    ("cnorm.evaluate", GenerateOnly, "it has no tokenize method"),
    ("sure.attention", GenerateOnly, "it has neither"),
    ("sure.attention", TokenizeOnly, "it has no attention"),
    ("sure.oracle", GenerateOnly, "it has neither"),
    ("sure.oracle", TokenizeOnly, "it has no score"),
    ("spotlight.select", TokenizeOnly, "it has no hidden method"),
    ("bias.document_relevance", TokenizeOnly, "it has no attention method"),
    ("tune with ctx=512", GenerateOnly, "it has no tokenize method"),
    ("tune's ABS filter (abs_filter=True)", AttentionOnly, "it has no tokenize method"),
])
def test_a_verb_names_every_method_the_reader_lacks_before_it_starts(verb, cls, has, tmp_path):
    # The issue: cnorm.calibrate with a generate-only reader said only "count_tokens is not
    # supported ... no tokenize method", and would have stopped at attention next.
    call, methods = NEEDS[verb]
    r = cls()
    with pytest.raises(NotImplementedError, match=need(verb, methods, cls.__name__, has)):
        call(r, tmp_path)
    assert r.calls == 0  # nothing was asked before the check


def test_a_reader_with_what_the_verb_needs_passes_the_check():
    assert profile()["best"] in ("original", "~")
    assert len(ragform.spotlight.select(RECORDS[0], reader=Words(), K=1)["selected"]) == 1
    got = ragform.bias.document_relevance(Words(), "Ann wrote it. Bob read it.", [(0, 13)])
    assert len(got["documents"]) == 1
