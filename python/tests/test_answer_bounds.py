"""Issue 40, third pass: what a Python caller or a Python reader hands ragform is bounded before
it is read whole. An endless iterator of ids, a 200 MB finish reason, a steering object nested
30,000 deep, a 20 MB exception message and a TypeError about a list of 160,000 records each
crashed the interpreter, filled memory or a store, or built a 100 MB message; now each is refused
(or cut) at a stated bound."""
import itertools
import re

import numpy as np
import pytest

import ragform
from conftest import shared_file
from test_py_reader_checks import Words, reader_of, refused


def test_an_endless_ids_iterator_is_refused_at_the_texts_token_bound():
    # "x" is 1 byte: at most 3 * 1 + 16 = 19 tokens (py_reader_answers.cpp, token_bound).
    r = reader_of(generate=lambda prompts, params: [{"text": "x", "ids": itertools.count()}])
    refused(lambda: r._generate("a b"),
            r"MyReader.generate: result 0's ids: more than 19 items where at most 19 can be")


def test_endless_attention_ids_and_head_ids_are_refused():
    def att(ids=None, head_ids=None):
        def attention(prompt, layers, heads, positions):
            row = {"heads": np.full((2, 2), 0.5), "pieces": ["a", " b"]}
            if ids is not None:
                row["ids"] = ids
            if head_ids is not None:
                row["head_ids"] = head_ids
            return [row]
        return attention
    r = reader_of(attention=att(ids=itertools.count()))
    # "a b": 3 bytes, at most 3 * 3 + 16 = 25 tokens.
    refused(lambda: r.attention("a b", 0, -1),
            r"MyReader.attention: ids: more than 25 items where at most 25 can be")
    r = reader_of(attention=att(head_ids=itertools.count()))
    refused(lambda: r.attention("a b", 0, -1),
            r"MyReader.attention: .*head_ids: more than 4096 items where at most 4096 can be")


def test_text_fields_of_an_answer_are_bounded():
    big = "r" * (65 * 1024)
    r = reader_of(generate=lambda prompts, params: [{"text": "x", "finish_reason": big}])
    refused(lambda: r._generate("a b"), r"MyReader.generate: result 0's finish_reason: 66560 "
                                        r"characters, more than the limit of 65536 bytes")
    r = reader_of(hidden=lambda p, l: (np.ones((2, 2), dtype=np.float32), ["a", big]))
    refused(lambda: r.hidden("a b", 0), r"MyReader.hidden: pieces\[1\]: 66560 characters, more "
                                        r"than the limit of 65536 bytes")

    class Described(Words):
        def describe(self):
            return big
    with pytest.raises(ValueError, match=r"66560 characters, more than the limit"):
        ragform.readers.as_reader(Described())


def test_a_steering_object_nested_deeper_than_json_allows_is_a_value_error():
    m = ragform.Model(str(shared_file("fixtures/models/stories260K.gguf")), threads=1)
    deep = [[0, 1]]
    for _ in range(30000):
        deep = [deep]
    with pytest.raises(ValueError, match=r"steering: nested deeper than 128 levels"):
        m.steering = {"rule": "rescale:2", "spans": deep}
    shallow = {"rule": "rescale:2", "spans": [[0, 1]]}
    m.steering = shallow  # a normal object still works
    assert m.steering is not None


def test_a_readers_long_exception_is_cut_before_it_is_stored(tmp_path):
    pairs = [{"id": "q1#0", "instance": "q1", "doc": 0, "perturbation": "format/json",
              "category": "format", "question": "What is the capital of France?",
              "answers": ["Paris"], "title": "T", "original": "Paris is the capital.",
              "perturbed": "{\"text\": \"Paris is the capital.\"}", "embeds_title": False,
              "note": "", "failed": False}]

    class Loud(Words):
        def generate(self, prompts, params):
            raise RuntimeError("boom " + "z" * 2_000_000)

    with pytest.raises(RuntimeError):
        ragform.sure.evaluate(reader=Loud(), pairs=pairs, store=tmp_path / "s.sqlite",
                              resamples=10, progress=False)
    rows = ragform.RunStore(tmp_path / "s.sqlite").rows()
    assert rows and all(len(r["error"]) < 5000 for r in rows), [len(r["error"]) for r in rows]
    assert "(2000005 bytes)" in rows[0]["error"]


def test_a_type_error_names_a_big_value_by_its_type_and_size():
    with pytest.raises(TypeError) as e:
        ragform.sure.evaluate(reader=Words(), pairs=[], temperature=[{"a": 1}] * 160000,
                              progress=False)
    assert len(str(e.value)) < 300, len(str(e.value))
    assert "a list of 160000 items" in str(e.value)


def test_bounded_counts_of_the_encoder_and_the_bootstrap():
    path = str(shared_file("fixtures/models/tiny-bert.gguf"))
    with pytest.raises(ValueError, match=r"^batch_tokens: value too large: 2147483647 "
                                         r"\(largest accepted: 65536\)"):
        ragform.Encoder(path, batch_tokens=2**31 - 1)
    with pytest.raises(ValueError, match=r"^resamples: value too large: 2147483647 "
                                         r"\(largest accepted: 1000000\)"):
        ragform.sure.evaluate(reader=Words(), pairs=[], resamples=2**31 - 1, progress=False)
