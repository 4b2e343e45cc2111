"""Reader.steering: the CLI's --steer flags as one property, the same numbers as the CLI; off and
rescale:1 give the unsteered results; bad values are ValueErrors."""
import os
import subprocess

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


def test_refusals_name_the_dicts_keys_as_the_cli_names_its_flags(model):
    """One parser and one set of checks for every front end (reader/steering_object.h): Python
    names the dict's key where the CLI names its flag, with the same words."""
    cases = [
        ({"rule": "rescale:2", "spans": [(0, 4000)]}, "spans", "--steer-spans",
         ["--steer", "rescale:2", "--steer-spans", "0:4000"]),
        ({"rule": "rescale:2", "spans": [(0, 4)], "heads": [99]}, "heads", "--steer-heads",
         ["--steer", "rescale:2", "--steer-spans", "0:4", "--steer-heads", "99"]),
        ({"rule": "rescale:2", "spans": [(0, 4)], "layers": "3..1"}, "layers", "--steer-layers",
         ["--steer", "rescale:2", "--steer-spans", "0:4", "--steer-layers", "3..1"]),
    ]
    for steer, key, flag, flags in cases:
        model.steering = steer
        try:
            with pytest.raises(ValueError) as e:
                model.generate(P, n_predict=2)
        finally:
            model.steering = None
        py = str(e.value)
        assert py.startswith(f"steering['{key}']: "), py
        assert "--steer" not in py, py
        r = subprocess.run([os.environ["RAGFORM_BIN"], "generate", "-m", model.path, "-p", P,
                            "-n", "2", *flags], capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        last = r.stderr.strip().splitlines()[-1]  # after the --ctx note
        assert last == "ragform: " + flag + py[len(f"steering['{key}']"):], r.stderr
    with pytest.raises(ValueError, match=r"^steering: unknown key 'x' \(rule, spans, layers, "
                                         r"heads\)$"):
        model.steering = {"rule": "rescale:2", "spans": [(0, 4)], "x": 1}
    with pytest.raises(ValueError, match=r"^steering\['rule'\]: needs steering\['spans'\]"):
        model.steering = {"rule": "rescale:2"}


def test_accepted_shapes(model):
    """Lists or tuples, numpy integers, layers as a list or a string, None for the defaults; rule
    off without spans, as on the command line."""
    model.steering = {"rule": "rescale:2", "spans": [[np.int64(0), np.int32(4)]],
                      "layers": [np.int64(-1)], "heads": (0,)}
    assert model.steering == "rescale:2|chars=0:4|layers=-1|heads=0|rows=pasta"
    model.steering = {"rule": "rescale:2", "spans": ((0, 4),), "layers": None, "heads": None}
    assert model.steering == "rescale:2|chars=0:4|layers=default|heads=all|rows=pasta"
    model.steering = {"rule": "off"}
    assert model.steering == "off"
    model.steering = None
