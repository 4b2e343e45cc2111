"""Arguments the module refuses with a ValueError that says why: text that is not valid UTF-8
(lone surrogates, named by argument), thread counts past the CLI's bound, an empty stop string
(the server's words), an unrecognised record (pointing at a doc that describes the formats), a
value that is not a C-NORM profile; and Encoder.embed([]) keeps the vector width."""
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

import ragform

from conftest import shared_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def encoder():
    return ragform.Encoder(str(shared_file("fixtures/models/tiny-bert.gguf")), threads=1)


@pytest.mark.parametrize("call, name", [
    (lambda m: m.generate("Once \ud800 upon"), "prompt"),
    (lambda m: m.generate(prompt="Once \ud800 upon"), "prompt"),
    (lambda m: m.score("Once", continuation=" up\udc00"), "continuation"),
    (lambda m: m.attention("\ud800"), "prompt"),
    (lambda m: m.tokenize("\ud800"), "text"),
    (lambda m: m.generate("Once", stop=["x", "\ud801"]), "stop[1]"),
])
def test_lone_surrogate_is_a_value_error_naming_the_argument(model, call, name):
    with pytest.raises(ValueError) as e:
        call(model)
    assert str(e.value).startswith(f"{name}: not valid UTF-8 text: a lone surrogate U+D"), e.value


def test_lone_surrogate_in_encoder_texts_and_records(encoder, nq_records):
    with pytest.raises(ValueError, match=r"^texts\[1\]: not valid UTF-8 text"):
        encoder.embed(["fine", "bad \udc00"])
    rec = dict(nq_records[0], question="who \ud800?")
    with pytest.raises(ValueError, match=r"^record\['question'\]: not valid UTF-8 text"):
        ragform.sure.perturb(rec, kinds="format/json")


def test_valid_text_is_untouched(model):
    assert model.generate("Once upon a time", n_predict=4) == \
        model.generate(prompt="Once upon a time", n_predict=4)


def test_threads_past_the_cli_bound_fail_at_once(model_path):
    bound = 4 * os.cpu_count()
    for ctor in (lambda: ragform.Model(model_path, threads=100000),
                 lambda: ragform.Encoder(str(shared_file("fixtures/models/tiny-bert.gguf")),
                                         threads=100000),
                 lambda: ragform.Model(model_path, threads=-1)):
        t0 = time.monotonic()
        # The library's check of the declared range, in the CLI's words (issue 41).
        with pytest.raises(ValueError, match=rf"^threads: value (too large: 100000 \(largest "
                                             rf"accepted: {bound}\)|out of range: -1 \(accepted: "
                                             rf"0\.\.4 x the cores\))$"):
            ctor()
        assert time.monotonic() - t0 < 5  # refused before any thread starts
    assert ragform.Model(model_path, threads=bound).generate("Once", n_predict=1) is not None


def test_embed_of_no_text_keeps_the_width(encoder):
    one = encoder.embed(["hello"])
    none = encoder.embed([])
    assert none.shape == (0, one.shape[1]) and none.dtype == np.float32
    assert np.vstack([none, one]).shape == one.shape


def test_empty_stop_string_is_refused_with_the_servers_words(model):
    with pytest.raises(ValueError, match=r"^stop: 'stop' strings must not be empty$"):
        model.generate("Once", stop=[""])
    with pytest.raises(ValueError, match="must not be empty"):
        model.generate("Once", stop="")
    r = ragform.OpenAIReader("http://127.0.0.1:9", retries=0, timeout=1)
    with pytest.raises(ValueError, match="must not be empty"):  # before any request
        r.generate("Once", stop=[""])


def test_unrecognised_record_points_at_a_doc_that_describes_the_formats():
    with pytest.raises(ValueError) as e:
        ragform.sure.perturb({"foo": 1, "bar": 2})
    msg = str(e.value)
    docs = re.findall(r"docs/[\w.-]+\.md", msg)
    assert docs, msg
    for d in docs:
        text = (ROOT / d).read_text(encoding="utf-8")
        for fmt in ("litm-qa", "nq-open", "hotpotqa", "flashrag", "longbench-v2"):
            assert fmt in msg and fmt in text, (fmt, d)


def test_not_a_profile_is_a_value_error_said_once():
    with pytest.raises(ValueError) as e:
        ragform.cnorm.apply("x", {"text": "a b c."})
    assert str(e.value).startswith("profile: not a C-NORM profile: expected the JSON object"), \
        e.value
    with pytest.raises(ValueError) as e:
        ragform.cnorm.apply({"model_sha256": "", "task": "qa"}, {"text": "a b c."})
    assert str(e.value) == "profile: missing field 'p'"


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.generate("Once", n_predict=10**30), ValueError, "n_predict: value too large: 10"),
    (lambda m: m.generate("Once", n_predict=2, seed=2**70), ValueError, "seed: value too large: 1180"),
    (lambda m: m.generate("Once", n_predict=2, seed=-1), ValueError, "seed: value out of range: -1"),
    (lambda m: m.generate("Once", n_predict=2, top_k=10**20), ValueError, "top_k: value too large: 1000"),
    (lambda m: m.generate("Once", n_predict=2.5), TypeError, "n_predict: expected an integer"),
])
def test_an_integer_cpp_cannot_take_is_named(model, call, error, words):
    # pybind11 refuses these with "incompatible function arguments" and the whole signature; the
    # module names the argument instead.
    with pytest.raises(error) as e:
        call(model)
    assert words in str(e.value)
    assert "incompatible" not in str(e.value)


# Model's keywords are checked by the declaration's ranges (reader/engine_settings.h), in the CLI's
# words, quoting the integer as given.
@pytest.mark.parametrize("kwargs, words", [
    ({"ctx": 10**30}, f"ctx: value too large: {10**30} (largest accepted: 2147483647)"),
    ({"threads": 10**30}, f"threads: value too large: {10**30} (largest accepted: "),
])
def test_a_constructor_integer_cpp_cannot_take_is_named(model_path, kwargs, words):
    with pytest.raises(ValueError) as e:
        ragform.Model(model_path, **kwargs)
    assert words in str(e.value)
    assert "incompatible" not in str(e.value)
