"""Reader.generate's settings follow the reader's one range rule (reader/generate_params.h
check_generate_params), with the keywords' own names: the first one out of range is named."""
import math

import pytest


@pytest.mark.parametrize("kwargs, message", [
    ({"n_predict": -1}, "n_predict: must be >= 0"),
    ({"temp": 100.5}, r"temp: must be in \[0, 100\]"),
    ({"temp": -0.1}, r"temp: must be in \[0, 100\]"),
    ({"temp": math.nan}, r"temp: must be in \[0, 100\]"),
    ({"top_p": 1.5}, r"top_p: must be in \(0, 1\]"),
    ({"top_p": 0}, r"top_p: must be in \(0, 1\]"),
    ({"top_k": -1}, "top_k: must be >= 0"),
    ({"n_predict": -1, "temp": -1}, "n_predict: must be >= 0"),
])
def test_settings_out_of_range_name_the_keyword(model, kwargs, message):
    with pytest.raises(ValueError, match="^" + message + "$"):
        model.generate("Once", **kwargs)


def test_the_bounds_themselves_are_accepted(model):
    assert isinstance(model.generate("Once", n_predict=0, temp=100, top_p=1e-9, top_k=0, seed=1),
                      str)


def test_sure_evaluate_follows_the_same_rule(model):
    import ragform
    # The declaration's range (sure/evaluate.h), the reader's rule's [0, 100], named by keyword.
    with pytest.raises(ValueError,
                       match=r"^temperature: value too large: 100.5 \(largest accepted: 100\)$"):
        ragform.sure.evaluate(model, [], temperature=100.5, progress=False)
