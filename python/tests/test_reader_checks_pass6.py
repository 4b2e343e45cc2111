"""A Python reader's exceptions and attributes, sixth pass (python/src/py_reader.cpp,
python/ragform/_reader_arg.py): an exception whose message holds a lone surrogate, or whose
__str__ raises, escaped as a bare RuntimeError ("Unable to cast Python instance to C++ type") and
ended sure.evaluate; a `ctx` property that raises surfaced as the bare exception; a `score`
property that raises was taken as "no score method". Each now names the reader and the method or
attribute, and a failed generate() is an unmeasured row as any other exception is."""
import pytest

import ragform
from ragform import readers

SURROGATE = "cannot read " + b"caf\xe9".decode("utf-8", "surrogateescape")


class Words:
    def generate(self, prompts, params):
        return ["Paris" for _ in prompts]

    def tokenize(self, text):
        return list(range(1, len(text.split()) + 1))


class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("str of exc raised")


def raising(exc):
    def f(self, *args):
        raise exc
    return f


PAIRS = [{"id": "q1#0", "instance": "q1", "doc": 0, "perturbation": "logic/reverse",
          "category": "logic", "question": "What is the capital of France?", "answers": ["Paris"],
          "title": "T", "original": "Paris is the capital. It is big.",
          "perturbed": "It is big. Paris is the capital.", "embeds_title": False, "note": "",
          "failed": False}]


# ---------------------------------------------------------------- E1: the exception's text


@pytest.mark.parametrize("exc, text", [
    (ValueError(SURROGATE), r"ValueError: cannot read caf\\udce9"),
    (ValueError("bad \ud800 x"), r"ValueError: bad \\ud800 x"),
    (BadStr(), r"BadStr \(its message could not be read\)"),
])
def test_an_exception_whose_text_cannot_be_read_names_the_reader(exc, text):
    r = readers.as_reader(type("R", (Words,), {"tokenize": raising(exc)})())
    with pytest.raises(RuntimeError, match=r"^python reader: R.tokenize: " + text + "$"):
        r.count_tokens("a b")


@pytest.mark.parametrize("exc, text", [
    (ValueError(SURROGATE), r"ValueError: cannot read caf\udce9"),
    (BadStr(), "BadStr (its message could not be read)"),
])
def test_a_generate_exception_with_unreadable_text_is_an_unmeasured_row(tmp_path, exc, text):
    # The study ran on: every row is stored, unmeasured, with the reader's error.
    R = type("R", (Words,), {"generate": raising(exc)})
    with pytest.raises(RuntimeError, match=r"python reader: R.generate: "):
        ragform.sure.evaluate(reader=R(), pairs=PAIRS, store=tmp_path / "s.sqlite",
                              resamples=10, progress=False)
    rows = ragform.RunStore(tmp_path / "s.sqlite").rows()
    assert rows and all(r["status"] == "unmeasured" for r in rows)
    assert all(r["error"] == "python reader: R.generate: " + text for r in rows), rows[0]["error"]


# ---------------------------------------------------------------- E6: attributes that raise


def test_a_ctx_property_that_raises_names_the_reader():
    class R(Words):
        @property
        def ctx(self):
            raise RuntimeError("ctx boom")

    with pytest.raises(ValueError, match=r"^python reader: R.ctx: RuntimeError: ctx boom$"):
        ragform.cnorm.calibrate(reader=R(), task="needle", S=1, k=2, delims="original,~",
                                progress=False)


@pytest.mark.parametrize("name", ["score", "attention", "hidden", "tokenize", "describe",
                                  "chat_mode", "generate"])
def test_a_method_property_that_raises_is_refused_not_taken_as_absent(tmp_path, name):
    def prop(self):
        raise RuntimeError("model not loaded")

    S = type("S", (Words,), {name: property(prop)})
    message = r"^python reader: S." + name + r": RuntimeError: model not loaded$"
    with pytest.raises(ValueError, match=message):
        readers.as_reader(S())
    with pytest.raises(ValueError, match=message):
        ragform.sure.evaluate(reader=S(), pairs=PAIRS, store=tmp_path / "s.sqlite",
                              resamples=10, progress=False)


def test_a_method_property_raising_attribute_error_is_absent():
    class S(Words):
        @property
        def score(self):
            raise AttributeError("no score here")

    r = readers.as_reader(S())
    assert not r.capabilities["score"]
    with pytest.raises(NotImplementedError, match=r"S has no score method"):
        r.score("a b", " c")
