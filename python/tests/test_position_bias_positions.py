"""Issue 43: `position-bias --sweep --positions LIST` sweeps a subset of the gold positions. The
option is declared once (src/pipelines/cnorm/setup.h BiasCurveRequest), so Python's
ragform.bias.position_bias has the keyword too; a curve measures every slot, so there, as on the
CLI without --sweep, it is refused naming the option."""
import inspect
import subprocess

import pytest

import ragform


def test_positions_is_declared_once():
    sig = inspect.signature(ragform.bias.position_bias)
    assert "positions" in sig.parameters
    assert sig.parameters["positions"].default is None  # "" in C++: every position
    decl = {o["key"]: o for o in ragform._ragform.options("bias.position_bias")}
    assert decl["positions"]["flag"] == "--positions"


def test_a_curve_refuses_positions_like_the_cli(model, model_path, ragform_bin):
    with pytest.raises(ValueError, match="positions: goes with the gold-position sweep"):
        ragform.bias.position_bias(model, task="needle", k=3, limit=1, positions="1,3")
    r = subprocess.run([str(ragform_bin), "position-bias", "-m", model_path, "--task", "needle",
                        "-k", "3", "--limit", "1", "--positions", "1,3"], capture_output=True,
                       text=True)
    assert r.returncode == 2
    assert "--positions: goes with the gold-position sweep" in r.stderr


def test_the_cli_subset_sweep_equals_the_full_sweep_there(model_path, cli, tmp_path):
    curve = tmp_path / "curve.json"
    cli("position-bias", "-m", model_path, "--task", "needle", "-k", "4", "--limit", "2", "-o",
        str(curve), json_out=False)
    base = ["position-bias", "-m", model_path, "--task", "needle", "--sweep", "--allocation",
            "top", "--limit", "2", "--bias", str(curve), "--json"]
    full = cli(*base, "--store", tmp_path / "f.sqlite")
    part = cli(*base, "--store", tmp_path / "p.sqlite", "--positions", "1,4")
    assert part["positions"] == [1, 4]
    for vf, vp in zip(full["variants"], part["variants"]):
        assert vp["accuracy"] == [vf["accuracy"][0], vf["accuracy"][3]]
