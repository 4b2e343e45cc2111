"""Issue 40, eleventh pass (K6): numpy values where Python's took their own words. A numpy
integer past an argument's range got pybind11's multi-line "incompatible function arguments", a
2-D or 0-D array for a list of ids numpy's "only size-1 arrays ..." / "len() of unsized object",
and a flat array as doc_spans "'numpy.int64' object is not iterable". Each names its argument in
one line now."""
import numpy as np
import pytest

import ragform
import ragform.bias

from conftest import shared_file

PROMPT = "Once upon a time there was a girl."


@pytest.fixture(scope="module")
def model():
    return ragform.Model(str(shared_file("fixtures/models/stories260K.gguf")), threads=1)


@pytest.mark.parametrize("value, error, words", [
    (np.uint64(2 ** 63), ValueError, "id: 9223372036854775808 is too large"),
    (np.int64(-1), ValueError, "token id -1 out of range 0..511"),
    (np.int64(2 ** 31), ValueError, "id: 2147483648 is out of range"),
])
def test_a_numpy_integer_out_of_range_is_named(model, value, error, words):
    with pytest.raises(error) as e:
        model.token_piece(value)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_numpy_integer_in_range_is_an_integer(model):
    assert model.token_piece(np.int64(5)) == model.token_piece(5)
    assert model.detokenize(np.array([5, 6])) == model.detokenize([5, 6])


@pytest.mark.parametrize("ids, dims", [(np.array([[1, 2]]), 2), (np.array(5), 0),
                                       (np.zeros((1, 1, 1), dtype=np.int64), 3)])
def test_an_array_of_other_than_one_dimension_is_named(model, ids, dims):
    with pytest.raises(TypeError, match=f"^ids: expected a list .*got a {dims}-dimensional array$"):
        model.detokenize(ids)


@pytest.mark.parametrize("spans, words", [
    (np.array([0, 4]), r"doc_spans\[0\]: expected a \(start, end\) pair, got int64"),
    ([(0, 4), (1, 2, 3)], r"doc_spans\[1\]: expected a \(start, end\) pair, got tuple"),
    ([(0, 4), "ab"], r"doc_spans\[1\]: expected a \(start, end\) pair, got str"),
    (5, r"doc_spans: expected a list of \(start, end\) pairs, got int"),
])
def test_doc_spans_are_pairs(model, spans, words):
    with pytest.raises(TypeError, match=words):
        ragform.bias.document_relevance(model, PROMPT, spans)


def test_doc_spans_as_an_array_of_pairs(model):
    as_list = ragform.bias.document_relevance(model, PROMPT, [(0, 4), (5, 9)])
    as_array = ragform.bias.document_relevance(model, PROMPT, np.array([[0, 4], [5, 9]]))
    assert as_list == as_array
