"""Issue 41: a verb's options are declared once (base/options.h). For each declared verb, the
Python wrapper's signature and the CLI's --help derive every option's default and range from the
declaration (ragform._ragform.options), and the same out-of-range value is refused by both with
the option's own spelling."""
import inspect
import os
import re
import subprocess

import pytest

import ragform

# verb -> (the Python wrapper, the CLI command)
VERBS = {"tune": (lambda: ragform.tune, ["tune"]),
         "sure.evaluate": (lambda: ragform.sure.evaluate, ["sure", "eval"])}


def cli_help(command):
    return subprocess.run([os.environ["RAGFORM_BIN"], *command, "--help"], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_wrapper_and_the_cli_derive_from_the_declaration(verb):
    wrapper, command = VERBS[verb]
    decl = ragform._ragform.options(verb)
    sig = inspect.signature(wrapper())
    for o in decl:
        p = sig.parameters[o["key"]]
        assert (p.default is inspect.Parameter.empty) == o["required"], o["key"]
        if not o["required"]:
            assert p.default == o["default"], o["key"]
    text = cli_help(command)
    for o in decl:
        if not o["flag"]:
            continue
        line = next(l for l in text.splitlines()
                    if re.match(r"\s+" + re.escape(o["flag"].replace(",", ", ")) + r"\b", l))
        if o["required"]:
            assert "(required)" in line, line
        elif o["unset"]:
            assert f"[default: {o['unset']}" in line, line
        elif o["default"] not in (None, False) and o["kind"] != "on_off":
            want = o["default"] if not isinstance(o["default"], float) else f"{o['default']:g}"
            assert f"[default: {want}" in line, line
        if o["min"] is not None and o["max"] is not None and o["max"] < 2147483647:
            lo, hi = (f"{v:.0f}" if v == int(v) else f"{v:g}" for v in (o["min"], o["max"]))
            assert f"{lo}..{hi}]" in line, line


def test_an_out_of_range_value_is_refused_by_both_front_ends(model, model_path, tmp_path):
    """The same value, each front end's spelling: --temp for the CLI, temperature= for Python."""
    with pytest.raises(ValueError, match=r"^temperature: value too large: 101 \(largest accepted: 100\)"):
        ragform.sure.evaluate(model, [], temperature=101, progress=False)
    r = subprocess.run([os.environ["RAGFORM_BIN"], "sure", "eval", "-m", model_path, "--store",
                        str(tmp_path / "s.sqlite"), "--temp", "101"], capture_output=True,
                       text=True, input="")
    assert r.returncode == 2 and r.stderr.startswith("ragform: --temp: value too large: 101 (largest accepted: 100)")
    with pytest.raises(ValueError, match=r"^eta: value too large: 17 \(largest accepted: 16\)"):
        ragform.tune(model, "needle", 30, str(tmp_path / "t.sqlite"), eta=17)
    r = subprocess.run([os.environ["RAGFORM_BIN"], "tune", "-m", model_path, "--task", "needle",
                        "--budget", "30", "--store", str(tmp_path / "t.sqlite"), "--eta", "17"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("ragform: --eta: value too large: 17 (largest accepted: 16)")


def test_an_undeclared_verb_is_named():
    with pytest.raises(ValueError, match="no declared verb 'nope'"):
        ragform._ragform.options("nope")
