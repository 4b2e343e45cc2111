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
    # The CLI on the same store runs nothing new and prints the same object.
    want = cli(*cli_args(model_path, store))
    assert got == want
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
