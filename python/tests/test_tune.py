"""ragform.tune: the search of `ragform tune` from Python, the same object as `ragform tune --json`
for the same arguments and store (both build the search with tune::tune_options; docs/tune.md)."""
import ragform

ARGS = dict(dev_items=6, holdout_items=4, needle_slots=4, delims=["original", "-"], p=[1],
            formats=["plain", "json"], orders=["retrieved", "reversed"], k=["all"],
            abs_prompts=2, ctx=512)


def cli_args(model_path, store):
    return ["tune", "-m", model_path, "--task", "needle", "--budget", "30", "--store", store, "--dev-items", "6",
            "--holdout-items", "4", "--needle-slots", "4", "--delims", "original,-", "--p", "1",
            "--formats", "plain,json", "--orders", "retrieved,reversed", "--k", "all",
            "--abs-prompts", "2", "--ctx", "512", "--json"]


def test_tune_equals_cli_json(model, model_path, cli, tmp_path):
    store = str(tmp_path / "py.sqlite")
    got = ragform.tune(model, "needle", 30, store, **ARGS)
    assert got["complete"] is True
    assert isinstance(got["budget"], int) and isinstance(got["spent"], int)
    assert got["spent"] <= 30
    # The deploy decision, as the CLI gives it (the default rule: confirmed).
    assert got["deploy"] == "confirmed"
    assert got["deployed"] in ("tuned", "original")
    assert got["profile"]["deployed"] == got["deployed"] and got["why"]
    assert isinstance(got["final_n"], int)
    # The CLI on the same store runs nothing new and prints the same object.
    want = cli(*cli_args(model_path, store))
    assert got == want
    # The other rule on the same store measures nothing new and writes the search's winner.
    best = ragform.tune(model, "needle", 30, store, deploy="best", **ARGS)
    assert best["deployed"] == "tuned" or best["winner"] == best["control"]
    assert best["holdout"] == got["holdout"] and best["winner"] == got["winner"]
    # And the CLI's search in a fresh store is the same search.
    fresh = cli(*cli_args(model_path, str(tmp_path / "cli.sqlite")))
    for key in ("profile", "trajectory", "spent", "grid", "holdout", "main_effects"):
        if key == "profile":
            assert {**fresh[key], "run": None} == {**got[key], "run": None}
        else:
            assert fresh[key] == got[key], key


def test_tune_with_a_python_reader_skips_abs(model, tmp_path, capfd):
    class Echo:
        """A reader of the protocol without attention: answers what the model answers."""
        def generate(self, prompts, params):
            return [model.generate(p, n_predict=params["max_tokens"], stop=["\n"])
                    for p in prompts]

    store = str(tmp_path / "echo.sqlite")
    got = ragform.tune(Echo(), "needle", 30, store, **{**ARGS, "ctx": None})
    assert got["abs_filter"] == "skipped: no attention"
    assert got["complete"] is True
    assert got["spent"] <= 30
    assert "ABS filter is skipped" in capfd.readouterr().err


def test_tune_checks_the_cli_ranges(model, tmp_path):
    """Issue 40, item 10: the keywords the CLI range-checks are checked in Python too, before any
    prompt, naming the keyword (a negative abs_keep crashed; NaN, 10**9 and -1 were accepted)."""
    import math
    import pytest
    store = str(tmp_path / "bad.sqlite")
    bad = [(dict(abs_keep=-1), "abs_keep: value out of range: -1"),
           (dict(robust_floor=math.nan), "robust_floor: value out of range: nan"),
           (dict(eta=10**9), "eta: value too large: 1000000000 (largest accepted: 16)"),
           (dict(max_tokens=-1), "max_tokens: value out of range: -1 (accepted: 1..4096)"),
           (dict(needle_slots=13), "needle_slots: value too large: 13"),
           (dict(finalists=0), "finalists: value out of range: 0 (accepted: 1..1000)"),
           (dict(deploy="always"), "deploy: confirmed or best, got 'always'"),
           (dict(seed=-1), "seed: value out of range: -1"),
           (dict(shard=(2, 2)), "shard: '2/2' is not i/n")]
    for kw, msg in bad:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")
                           .replace(".", r"\.")):
            ragform.tune(model, "needle", 30, store, **kw)
    with pytest.raises(ValueError, match=r"budget: value out of range: -1 \(accepted: 0 or more\)"):
        ragform.tune(model, "needle", -1, store)
    with pytest.raises(TypeError, match="budget: expected an integer, got 1.7"):
        ragform.tune(model, "needle", 1.7, store)
    with pytest.raises(TypeError, match="abs_filter: expected True or False, got 'on'"):
        ragform.tune(model, "needle", 30, store, abs_filter="on")
    with pytest.raises(TypeError, match="unexpected keyword argument 'budgett'"):
        ragform.tune(model, "needle", 30, store, budgett=30)


def test_the_profile_is_never_written_onto_a_file_the_search_reads(model, tmp_path):
    """Issue 40, passes 11-13: output= naming the store, the space file, the dev or held-out
    split replaced it (after the whole search, or at once for the space); refused before any
    prompt, for every front end (tune::tune_options)."""
    import os
    import pytest
    store = tmp_path / "s.sqlite"
    space = tmp_path / "space.json"
    space.write_text('{"delimiter": ["original", "-"]}')
    os.symlink(store, tmp_path / "link.sqlite")  # dangling: the store is not made yet
    for kw, says in [(dict(output=str(store)), "is the run store itself"),
                     (dict(output=str(tmp_path / "link.sqlite")), "is the run store itself"),
                     (dict(space=str(space), output=str(space)), "is the space file itself")]:
        with pytest.raises(ValueError, match="^output: .*" + says):
            ragform.tune(model, "needle", 30, str(store), **kw)
    assert not store.exists()
    assert space.read_text() == '{"delimiter": ["original", "-"]}'
    # The reader's model file (pass 14: tune(Model(p), output=p) replaced it with the profile).
    with pytest.raises(ValueError, match="^output: .* is the model file itself"):
        ragform.tune(model, "needle", 30, str(store), output=model.path)
    assert not store.exists()


def test_ctrl_c_stops_tune_between_prompts_and_a_rerun_resumes(model, tmp_path):
    """Issue 40, item 14: Ctrl-C on a native Model stopped nothing; the whole search ran, then
    KeyboardInterrupt threw the result away."""
    import signal
    import pytest
    store = str(tmp_path / "int.sqlite")
    calls = []

    class Interrupting:
        def __call__(self, done, total):  # a Ctrl-C once the first prompt of a pass is done
            calls.append(done)
            if done > 0 and len([c for c in calls if c > 0]) == 1:
                signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            ragform._ragform._tune(model, Interrupting(), task="needle", budget=30, store=store,
                                   dev_items=6, holdout_items=4, needle_slots=4,
                                   delims=["original", "-"], p=["1"], formats=["plain", "json"],
                                   orders=["retrieved", "reversed"], k=["all"], abs_prompts=2,
                                   ctx=512)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len([c for c in calls if c > 0]) == 1
    # The rerun on the same store completes the search.
    got = ragform.tune(model, "needle", 30, store, **ARGS)
    assert got["complete"] is True
