"""Reader.generate's settings follow their one declaration (reader/generate_options.h, checked
by generate_params), with the keywords' own names: the first one out of range is named, in the
words the CLI uses for its flags."""
import math

import pytest


@pytest.mark.parametrize("kwargs, message", [
    ({"n_predict": -1}, r"n_predict: value out of range: -1 \(accepted: 0 or more\)"),
    ({"temp": 100.5}, r"temp: value too large: 100.5 \(largest accepted: 100\)"),
    ({"temp": -0.1}, r"temp: value out of range: -0.1 \(accepted: 0..100\)"),
    ({"temp": math.nan}, r"temp: value out of range: nan \(accepted: 0..100\)"),
    ({"top_p": 1.5}, r"top_p: value too large: 1.5 \(largest accepted: 1\)"),
    ({"top_p": 0}, r"top_p: must be above 0: an empty nucleus holds no token"),
    ({"top_k": -1}, r"top_k: value out of range: -1 \(accepted: 0 or more\)"),
    ({"n_predict": -1, "temp": -1}, r"n_predict: value out of range: -1 \(accepted: 0 or more\)"),
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
