"""Reader.steering with per-span shares (reallocate:S1,S2,...): the same numbers as the CLI's
--steer reallocate:S1,S2 --steer-spans, and a count of shares other than the spans' is refused."""
import numpy as np
import pytest

P = "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun."
SPANS = [(0, 16), (48, 57)]
FLAGS = ["--steer", "reallocate:0.1,0.6", "--steer-spans", "0:16,48:57"]


def test_per_span_shares_equal_cli(model_path, cli):
    import ragform
    m = ragform.Model(model_path, threads=2)
    m.steering = {"rule": "reallocate:0.1,0.6", "spans": SPANS}
    assert m.steering == "reallocate:0.1,0.6|chars=0:16,48:57|layers=default|heads=all"
    a = m.attention(P)
    want = cli("attention", "-m", model_path, "-p", P, "--json", *FLAGS)
    np.testing.assert_allclose(a.mean, want["mean"], rtol=0, atol=1e-6)
    g = m.generate(P, n_predict=16)
    assert g == cli("generate", "-m", model_path, "-p", P, "-n", "16", "--json", *FLAGS)["text"]


def test_share_count_must_match_spans(model_path):
    import ragform
    m = ragform.Model(model_path, threads=2)
    m.steering = {"rule": "reallocate:0.1,0.6", "spans": [(0, 16)]}
    with pytest.raises(ValueError):
        m.attention(P)
