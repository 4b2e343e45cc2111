"""A Python reader's answer is measured before it is read (issue 40, leftovers of the last pass;
python/src/py_reader.cpp): score, tokenize, attention, hidden and generate compare the length
and shape of what the reader returned with what was asked - or, for a reader without tokenize,
with what the prompt can hold (3 tokens per byte and 16 special tokens) - before any value is
converted. A reader returning far too many values fails at once with a message naming the reader
and the method, instead of having every value converted first (50,000,000 log-probs were 400 MB
of conversion before their number was compared with the 4 asked for)."""
import numpy as np
import pytest

import ragform


class Huge:
    """A sequence that claims `n` items and counts how many were read: the answer of a reader that
    returned far too much, whose reading is what the checks must not do."""

    def __init__(self, n, item=-0.5):
        self.n, self.item, self.reads = n, item, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice) or not 0 <= i < self.n:
            raise IndexError(i)
        self.reads += 1
        return self.item


class Words:
    """Words are tokens; log-probs -1 each; uniform attention; hidden states [tokens, 2]."""

    def generate(self, prompts, params):
        return [{"text": "Paris"} for _ in prompts]

    def tokenize(self, text):
        return list(range(1, len(text.split()) + 1))

    def score(self, prompt, continuation):
        n = len(continuation.split()) if continuation else len(prompt.split()) - 1
        return [-1.0] * n

    def attention(self, prompt, layers, heads, positions):
        n = len(prompt.split())
        return [np.full((2, n), 1.0 / n) for _ in layers for _ in positions]

    def hidden(self, prompt, layer):
        words = prompt.split()
        return np.ones((len(words), 2), dtype=np.float32), words


def reader_of(base=Words, **methods):
    """A reader class named MyReader: `base` with the methods in `methods` replaced."""
    cls = type("MyReader", (base,), {k: staticmethod(v) for k, v in methods.items()})
    return ragform.readers.as_reader(cls())


class Untokenized(Words):
    tokenize = None  # no tokenize: the bound comes from the prompt's bytes


def refused(call, message):
    with pytest.raises(ValueError, match="^python reader: " + message):
        call()


# A claimed length far past anything a prompt of a few words can have.
BIG = 50_000_000


@pytest.mark.parametrize("base", [Words, Untokenized])
def test_score_with_far_too_many_values_fails_before_reading_them(base):
    huge = Huge(BIG)
    r = reader_of(base, score=lambda p, c: huge)
    bound = "4 tokens of the prompt and continuation" if base is Words else \
        "37 tokens the prompt and continuation can hold"
    refused(lambda: r.score("a b", " c d"),
            rf"MyReader.score: {BIG} log-probs, more than the {bound}")
    assert huge.reads <= 1  # its first item, to tell a list of lists; not 50,000,000
    # An empty continuation: the exact count is asked for.
    huge = Huge(BIG)
    r = reader_of(base, score=lambda p, c: huge)
    if base is Words:
        refused(lambda: r.score("a b c"), r"MyReader.score: an empty continuation scores the "
                                          rf"prompt's tokens after the first: \[n_tokens - 1\] "
                                          rf"= 2 log-probs, got {BIG}")
    else:
        refused(lambda: r.score("a b c"), rf"MyReader.score: {BIG} log-probs, more than the 31 "
                                          r"tokens")
    assert huge.reads <= 1


def test_score_arrays_and_token_lists_are_measured_first():
    # A 10^9-value view of one number: converting it would take 8 GB.
    view = np.broadcast_to(np.float64(-0.5), (10**9,))
    refused(lambda: reader_of(score=lambda p, c: view).score("a b", " c d"),
            r"MyReader.score: 1000000000 log-probs, more than the 4 tokens")
    wide = np.broadcast_to(np.float64(-0.5), (2, 10**9))
    refused(lambda: reader_of(score=lambda p, c: wide).score("a b", " c d"),
            r"MyReader.score: the log-probs: expected 1 dimensions, got 2$")
    tokens = Huge(BIG, {"id": 1, "piece": " c", "logprob": -0.5})
    refused(lambda: reader_of(score=lambda p, c: {"tokens": tokens}).score("a b", " c d"),
            rf"MyReader.score: {BIG} log-probs, more than the 4 tokens")
    assert tokens.reads == 0
    # A generator has no length: it is read one past the bound, no further.
    seen = []

    def endless():
        while True:
            seen.append(1)
            yield {"logprob": -0.5}

    refused(lambda: reader_of(score=lambda p, c: {"tokens": endless()}).score("a b", " c d"),
            r"MyReader.score: tokens: more than 4 items where at most 4 can be$")
    assert len(seen) == 5
    # What was asked still passes.
    assert list(reader_of().score("a b", " c d")) == [-1.0, -1.0]


def test_tokenize_attention_hidden_and_generate_are_measured_first():
    huge = Huge(BIG, 1)
    refused(lambda: reader_of(tokenize=lambda t: huge).count_tokens("a b c"),
            rf"MyReader.tokenize: {BIG} tokens for a text of which at most 31 can be")
    assert huge.reads == 0
    # Attention: rows, then each row's keys and heads.
    rows = Huge(BIG, np.full((2, 3), 1 / 3))
    refused(lambda: reader_of(attention=lambda p, l, h, q: rows).attention("a b c"),
            rf"MyReader.attention: expected 1 rows \(layers x positions\), got {BIG}$")
    assert rows.reads == 0
    keys = np.broadcast_to(np.float32(1e-9), (2, 10**9))
    refused(lambda: reader_of(attention=lambda p, l, h, q: [keys]).attention("a b c"),
            r"MyReader.attention: rows must be \[n_tokens\] = 3 long, got 1000000000$")
    refused(lambda: reader_of(Untokenized, attention=lambda p, l, h, q: [keys]).attention("a b c"),
            r"MyReader.attention: a row of 1000000000 keys, more than the 31 tokens the prompt "
            r"can hold")
    heads = np.broadcast_to(np.float32(1 / 3), (10**6, 3))
    refused(lambda: reader_of(attention=lambda p, l, h, q: [heads]).attention("a b c"),
            r"MyReader.attention: 1000000 heads in a row, more than the limit of 4096$")
    row = Huge(BIG, 0.0)
    refused(lambda: reader_of(attention=lambda p, l, h, q: [{"heads": row}]).attention("a b c"),
            rf"MyReader.attention: rows must be \[n_tokens\] = 3 long, got {BIG}$")
    assert row.reads <= 1
    mean = Huge(BIG, 0.0)
    answer = [{"heads": np.full((2, 3), 1 / 3), "mean": mean}]
    refused(lambda: reader_of(attention=lambda p, l, h, q: answer).attention("a b c"),
            r"MyReader.attention: mean and heads differ in length$")
    assert mean.reads == 0
    # Hidden states: rows, then width.
    tall = np.broadcast_to(np.float32(1), (10**9, 2))
    refused(lambda: reader_of(hidden=lambda p, l: (tall, ["a"])).hidden("a b c", 1),
            r"MyReader.hidden: states must be \[n_tokens, n_embd\], got 1000000000 rows, more "
            r"than the 3 tokens of the prompt$")
    wide = np.broadcast_to(np.float32(1), (3, 10**8))
    refused(lambda: reader_of(hidden=lambda p, l: (wide, ["a", "b", "c"])).hidden("a b c", 1),
            r"MyReader.hidden: states must be \[n_tokens, n_embd\], got 100000000 columns, more "
            r"than the limit of 65536$")
    pieces = Huge(BIG, "a")
    refused(lambda: reader_of(hidden=lambda p, l: (np.ones((3, 2)), pieces)).hidden("a b c", 1),
            rf"MyReader.hidden: 3 rows of states for {BIG} pieces$")
    assert pieces.reads == 0
    # Generate: the number of results, then each text's size.
    results = Huge(BIG, "x")
    refused(lambda: reader_of(generate=lambda p, q: results)._generate("a b"),
            rf"MyReader.generate: {BIG} results for 1 prompts$")
    assert results.reads == 0
    text = "x" * (65 << 20)
    refused(lambda: reader_of(generate=lambda p, q: [{"text": text}])._generate("a b"),
            r"MyReader.generate: result 0's text: 68157440 characters, more than the limit of "
            r"67108864 bytes$")
    # What was asked still passes.
    good = reader_of()
    assert good.count_tokens("a b c") == 3
    assert np.asarray(good.hidden("a b c", 1)).shape[0] == 3


# ---------------------------------------------------------------- arguments nested too deep


def nested(depth, leaf=1):
    for _ in range(depth):
        leaf = {"a": leaf}
    return leaf


@pytest.mark.parametrize("depth", [200, 100_000])
def test_arguments_nested_deeper_than_json_allows_are_named(depth):
    # Second pass: a 100,000-level dict raised "RecursionError: maximum recursion depth exceeded
    # in __instancecheck__", naming nothing; every JSON input's bound is 128 levels.
    with pytest.raises(ValueError, match=r"^profile: nested deeper than 128 levels"):
        ragform.cnorm.apply(nested(depth), {"id": "d", "text": "a b c."})
    record = {"id": "d", "text": "a b c.", "extra": nested(depth)}
    with pytest.raises(ValueError, match=r"^record: nested deeper than 128 levels"):
        ragform.cnorm.apply({"delimiter": "-", "p": 1.0}, record)
