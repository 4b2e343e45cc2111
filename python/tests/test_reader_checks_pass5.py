"""A Python reader's answers and attributes, fifth pass (issue 40; python/src/py_reader.cpp,
python/src/py_reader_answers.cpp, python/ragform/_reader_arg.py): hidden states whose width
changes between calls, numpy bools as token ids, a `ctx` attribute that is not a positive integer
and a bytearray from generate() were accepted or refused in words that named the wrong thing.
Each is now a ValueError naming the reader, the method (or `ctx`) and what is wrong."""
import json

import numpy as np
import pytest

import ragform


class Words:
    """Words are tokens (ids 1..n); attention is uniform over keys 0..q; hidden states are
    [tokens, width], the width taken from `widths` call after call (the last one repeats)."""

    def __init__(self, widths=(2,)):
        self.widths, self.hidden_calls = list(widths), 0

    def generate(self, prompts, params):
        return [{"text": "Paris", "finish_reason": "stop"} for _ in prompts]

    def tokenize(self, text):
        return list(range(1, len(text.split()) + 1))

    def attention(self, prompt, layers, heads, positions):
        n, rows = len(prompt.split()), []
        for _ in layers:
            for q in positions:
                q = q + n if q < 0 else q
                rows.append(np.full((2, q + 1), 1.0 / (q + 1)))
        return rows

    def hidden(self, prompt, layer):
        width = self.widths[min(self.hidden_calls, len(self.widths) - 1)]
        self.hidden_calls += 1
        words = prompt.split()
        pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
        rng = np.random.default_rng(len(prompt))
        return rng.standard_normal((len(words), width)).astype(np.float32), pieces


def reader_of(**methods):
    """A Words reader whose methods named in `methods` are replaced (staticmethods: no self)."""
    cls = type("MyReader", (Words,), {k: staticmethod(v) for k, v in methods.items()})
    return ragform.readers.as_reader(cls())


def refused(reader_call, message):
    """reader_call() raises ValueError whose message is `message` exactly (a regex)."""
    with pytest.raises(ValueError, match="^python reader: " + message + "$"):
        reader_call()


# ---------------------------------------------------------------- D4: hidden width


def test_hidden_states_keep_the_width_of_the_first_call():
    # Widths 8 then 4 were accepted, and spotlight.select scored the sentences of one width
    # against a question of the other: silently wrong scores.
    r = ragform.readers.as_reader(type("MyReader", (Words,), {})(widths=[8, 4]))
    assert r.hidden("a b c", 1).shape == (3, 8)
    refused(lambda: r.hidden("a b c", 1),
            r"MyReader.hidden: states are 4 wide, an earlier call gave 8")
    # The same width again is fine; the refused call did not replace the first width.
    same = ragform.readers.as_reader(type("MyReader", (Words,), {})(widths=[8, 8, 4, 8]))
    assert same.hidden("a b", 1).shape == (2, 8)
    assert same.hidden("a b c", 1).shape == (3, 8)
    refused(lambda: same.hidden("a", 1), r"MyReader.hidden: states are 4 wide, an earlier call "
                                         r"gave 8")
    assert same.hidden("a", 1).shape == (1, 8)
    # In a pipeline: spotlight.select's encoder.
    record = {"id": "q1", "question": "What did Lily have?", "answers": ["a ball"],
              "ctxs": [{"id": "d0", "title": "Lily", "text": "Lily had a ball. It was red."},
                       {"id": "d1", "title": "Sun", "text": "The sun was hot. A bird sang."}]}
    with pytest.raises(ValueError, match=r"^python reader: Words.hidden: states are 4 wide, an "
                                         r"earlier call gave 8$"):
        ragform.spotlight.select(record, reader=Words(widths=[8, 4]), K=2)


# ---------------------------------------------------------------- D5: numpy bools as token ids


@pytest.mark.parametrize("answer", [
    [True, False, True],
    np.array([True, False, True]),
    [np.bool_(True)] * 3,
], ids=["list of bool", "np.bool_ array", "list of np.bool_"])
def test_tokenize_refuses_bools_of_numpy_too(answer):
    # A list of Python bools was refused, numpy's were counted as three ids.
    r = reader_of(tokenize=lambda t: answer)
    refused(lambda: r.count_tokens("a b c"),
            r"MyReader.tokenize: token 0 is a bool_?, expected an integer id \(a flat list of the "
            r"prompt's tokens\)")


def test_ids_and_counts_refuse_numpy_bools():
    r = reader_of(generate=lambda p, q: [{"text": "x", "ids": [np.bool_(True)]}])
    refused(lambda: r._generate("a b"), r"MyReader.generate: result 0's ids\[0\]: expected an "
                                        r"integer, got bool_?")
    assert reader_of(tokenize=lambda t: np.array([1, 2, 3])).count_tokens("a b c") == 3


# ---------------------------------------------------------------- D6: the reader's ctx


@pytest.mark.parametrize("ctx, message", [
    (float("nan"), r"expected an integer number of tokens in 1..2147483647, got float"),
    (1.5, r"expected an integer number of tokens in 1..2147483647, got float"),
    ("4096", r"expected an integer number of tokens in 1..2147483647, got str"),
    (True, r"expected an integer number of tokens in 1..2147483647, got bool"),
    (2**70, r"1180591620717411303424 is out of range \(expected an integer number of tokens in "
            r"1..2147483647\)"),
    (-1, r"-1 is out of range \(expected an integer number of tokens in 1..2147483647\)"),
    (0, r"0 is out of range \(expected an integer number of tokens in 1..2147483647\)"),
])
def test_reader_ctx_must_be_a_positive_integer(ctx, message):
    # NaN, 1.5 and "4096" were taken as no ctx, 2**70 was pybind11's argument dump and -1 "n_ctx:
    # must be >= 1", naming neither the reader nor ctx.
    reader = type("WithCtx", (Words,), {"ctx": ctx})()
    with pytest.raises(ValueError, match=r"^python reader: WithCtx.ctx: " + message + "$"):
        ragform.cnorm.calibrate(reader=reader, task="needle", S=1, k=2, delims="original,~",
                                progress=False)
    with pytest.raises(ValueError, match=r"^python reader: WithCtx.ctx: " + message + "$"):
        ragform.cnorm.evaluate(reader=reader, task="needle", profile={}, store="unused.sqlite",
                               progress=False)


def test_reader_ctx_of_numpy_or_none_is_taken():
    # An integer of numpy's is an integer; None is no ctx (4096).
    for ctx in (np.int64(4096), None):
        reader = type("WithCtx", (Words,), {"ctx": ctx})()
        p = ragform.cnorm.calibrate(reader=reader, task="needle", S=1, k=2,
                                    delims="original,~", progress=False)
        assert p["config"]["k"] == 2


# ---------------------------------------------------------------- D7: bytearray text


def test_generate_takes_a_bytearray_as_bytes():
    # A bytearray was refused as "result 0 has no 'text'"; it is bytes, UTF-8 checked as bytes are.
    for answer, message in [
        ([bytearray(b"\xff")], r"result 0: not valid UTF-8 text: invalid UTF-8 at byte "
                                   r"offset 0 .*"),
        ([{"text": bytearray(b"ok\xc3")}], r"result 0's text: not valid UTF-8 text: .*"),
    ]:
        r = reader_of(generate=lambda prompts, params, answer=answer: answer)
        refused(lambda: r._generate("a b"), r"MyReader.generate: " + message)
    r = reader_of(generate=lambda prompts, params: [bytearray("Paris é".encode())])
    assert r._generate("a b")["text"] == "Paris é"


def test_a_bytearray_generation_is_an_unmeasured_row_naming_utf8(tmp_path):
    pairs = [{"id": "q1#0", "instance": "q1", "doc": 0, "perturbation": "format/json",
              "category": "format", "question": "What is the capital of France?",
              "answers": ["Paris"], "title": "T", "original": "Paris is the capital.",
              "perturbed": json.dumps({"text": "Paris is the capital."}), "embeds_title": False,
              "note": "", "failed": False}]

    class Bytes(Words):
        def generate(self, prompts, params):
            return [bytearray(b"\xff\xfe") for _ in prompts]

    with pytest.raises(RuntimeError, match=r"python reader: Bytes.generate: result 0: not valid "
                                           r"UTF-8 text"):
        ragform.sure.evaluate(reader=Bytes(), pairs=pairs, store=tmp_path / "s.sqlite",
                              resamples=10, progress=False)
    rows = ragform.RunStore(tmp_path / "s.sqlite").rows()
    assert rows and all(r["status"] == "unmeasured" for r in rows)
