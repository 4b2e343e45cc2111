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
         "sure.evaluate": (lambda: ragform.sure.evaluate, ["sure", "eval"]),
         "cnorm.calibrate": (lambda: ragform.cnorm.calibrate, ["cnorm", "calibrate"]),
         "cnorm.evaluate": (lambda: ragform.cnorm.evaluate, ["cnorm", "eval"]),
         "bias.position_bias": (lambda: ragform.bias.position_bias, ["position-bias"]),
         "sure.attention": (lambda: ragform.sure.attention, ["sure", "attention"]),
         "sure.perturb": (lambda: ragform.sure.perturb, ["sure", "perturb"]),
         "sure.filter": (lambda: ragform.sure.filter, ["sure", "filter"]),
         "sure.oracle": (lambda: ragform.sure.oracle, ["sure", "oracle"])}


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
        elif o["default"] not in (None, False, [], "") and o["kind"] != "on_off":
            want = o["default"] if not isinstance(o["default"], float) else f"{o['default']:g}"
            if isinstance(want, list):
                want = ",".join(want)
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


# verb -> (a Python call with an out-of-range value, the CLI's arguments with the same value, the
# option's Python spelling, its CLI spelling, the reason both give)
REFUSALS = {
    "cnorm.calibrate": (lambda m, d: ragform.cnorm.calibrate(m, None, S=0, progress=False),
                        ["cnorm", "calibrate", "-o", "{d}/p.json", "-S", "0"], "S", "-S",
                        "value out of range: 0 (accepted: 1 or more)"),
    "cnorm.evaluate": (lambda m, d: ragform.cnorm.evaluate(m, None, {}, f"{d}/e.sqlite",
                                                           max_tokens=0, progress=False),
                       ["cnorm", "eval", "--profile", "{d}/p.json", "--store", "{d}/e.sqlite",
                        "--max-tokens", "0"], "max_tokens", "--max-tokens",
                       "value out of range: 0 (accepted: 1 or more)"),
    "bias.position_bias": (lambda m, d: ragform.bias.position_bias(m, "needle", limit=0),
                           ["position-bias", "--task", "needle", "--limit", "0"], "limit",
                           "--limit", "value out of range: 0 (accepted: 1 or more)"),
}


@pytest.mark.parametrize("verb", sorted(REFUSALS))
def test_the_pipeline_verbs_refuse_alike(verb, model, model_path, tmp_path):
    call, argv, key, flag, why = REFUSALS[verb]
    with pytest.raises(ValueError, match="^" + re.escape(f"{key}: {why}")):
        call(model, tmp_path)
    r = subprocess.run([os.environ["RAGFORM_BIN"], *[a.format(d=tmp_path) for a in argv], "-m",
                        model_path], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith(f"ragform: {flag}: {why}"), r.stderr


def test_a_task_error_names_the_option_in_each_spelling(model, model_path, tmp_path):
    """The library's check of a task (one OptionError keyed "task"): task= in Python, --task on
    the command line, for the verbs that share it."""
    with pytest.raises(ValueError, match="^task: expected qa, kv, needle or longbench, got 'xx'"):
        ragform.cnorm.calibrate(model, None, task="xx", progress=False)
    with pytest.raises(ValueError, match="^task: expected qa or needle, got 'kv'"):
        ragform.bias.position_bias(model, "kv")
    for argv, why in ((["cnorm", "calibrate", "-o", str(tmp_path / "p.json"), "--task", "xx"],
                       "expected qa, kv, needle or longbench, got 'xx'"),
                      (["position-bias", "--task", "kv"], "expected qa or needle, got 'kv'")):
        r = subprocess.run([os.environ["RAGFORM_BIN"], *argv, "-m", model_path],
                           capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr == f"ragform: --task: {why}\n", r.stderr
