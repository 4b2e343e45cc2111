"""Reader.steering: the CLI's --steer flags as one property, the same numbers as the CLI; off and
rescale:1 give the unsteered results; bad values are ValueErrors."""
import numpy as np
import pytest

P = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
STEER = {"rule": "reallocate:0.75", "spans": [(48, 57)], "layers": "-2..-1"}
FLAGS = ["--steer", "reallocate:0.75", "--steer-spans", "48:57", "--steer-layers", "-2..-1"]


def test_steering_equals_cli(model_path, cli):
    import ragform
    m = ragform.Model(model_path, threads=2)
    plain = m.attention(P)
    assert m.steering == "off"
    m.steering = STEER
    assert m.steering == "reallocate:0.75|chars=48:57|layers=-2..-1|heads=all"
    a = m.attention(P)
    want = cli("attention", "-m", model_path, "-p", P, "--json", *FLAGS)
    np.testing.assert_allclose(a.mean, want["mean"], rtol=0, atol=1e-6)
    assert np.abs(a.mean - plain.mean).max() > 1e-3
    g = m.generate(P, n_predict=16)
    assert g == cli("generate", "-m", model_path, "-p", P, "-n", "16", "--json", *FLAGS)["text"]
    m.steering = {"rule": "rescale:1", "spans": [(0, 10)]}
    assert m.steering == "off"
    np.testing.assert_array_equal(m.attention(P).mean, plain.mean)
    m.steering = None
    np.testing.assert_array_equal(m.attention(P).mean, plain.mean)


@pytest.mark.parametrize("bad", [
    "rescale:2", {"rule": "boost:2", "spans": [(0, 4)]}, {"rule": "rescale:2"},
    {"rule": "rescale:2", "spans": [(4, 4)]}, {"rule": "rescale:2", "spans": [(0, 4)], "x": 1},
])
def test_bad_steering_is_a_value_error(model, bad):
    with pytest.raises(ValueError):
        model.steering = bad


def test_logits_are_steered(model_path):
    import ragform
    m = ragform.Model(model_path, threads=2)
    plain = m.logits(P, positions="all")
    m.steering = STEER
    steered = m.logits(P, positions="all")
    assert np.abs(steered - plain).max() > 1e-3
    m.steering = {"rule": "rescale:1", "spans": [(0, 10)]}
    np.testing.assert_array_equal(m.logits(P, positions="all"), plain)
