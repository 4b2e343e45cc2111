"""ragform.tune: the budgeted search of `ragform tune` over how retrieved context is presented
(docs/tune.md), with any reader. Its keywords, their defaults and ranges are the declaration of
src/tune/args.h (ragform._ragform.options("tune")), the one the CLI's flags come from; this module
holds none of its own."""
from . import _options, _ragform
from ._progress import Progress
from ._text import checked


_TUNE = _options.signature("tune", first=["reader"])


def _tune(*args, **kwargs):
    a = _options.bind(_TUNE, args, kwargs)  # a missing or unknown argument is a TypeError here
    reader = a.pop("reader")
    shard = a.get("shard")
    if isinstance(shard, (tuple, list)):  # (i, n), the CLI's "i/n"
        if len(shard) != 2:
            raise ValueError(f"shard: (i, n) with 0 <= i < n, got {shard!r}")
        a["shard"] = f"{shard[0]}/{shard[1]}"
    with Progress("tune", show=a.pop("progress")) as bar:
        return _ragform._tune(reader, bar, **a)


_tune.__signature__ = _TUNE
_tune.__name__ = _tune.__qualname__ = "tune"
_tune.__doc__ = """Runs (or resumes, from `store`) the search `ragform tune` runs for the same arguments and
    returns the object `ragform tune --json` prints: profile, budget, spent, grid, trajectory,
    main_effects, holdout {original, tuned, diff_ci95, mcnemar_p}, deployed ("tuned" or
    "original"), why, final_n, ...

    reader: a Model, an OpenAIReader or any object of the reader protocol (ragform.readers);
    ABS needs attention (a Model, or an OpenAIReader on `ragform serve`), otherwise the ABS filter
    is skipped with a note. Every other argument is the CLI flag of the same name (`ragform tune
    --help`, docs/cli.md), declared once with its default and range in src/tune/args.h:
    ragform._ragform.options("tune") lists them. task: "qa", "kv" or "needle". input/holdout:
    record files (needle: generated from independent seeds when None). delims, p, formats, orders,
    k, spotlight: a dimension's values as a list or a comma-separated str; space: a space file.
    shard: (i, n) or "i/n". ctx: the context cap in tokens (None: a Model's file's context_length,
    no cap for other readers). output: the profile file to write. deploy: "confirmed" writes the
    winner only when the held-out split confirms it (else the original presentation), "best" the
    winner whatever it says. abs_keep, finalists: None lets the plan narrow them when the winner
    would rest on fewer than 20 dev records per finalist. progress: a bar per pass (tqdm when
    installed); with or without it Ctrl-C stops the search between two prompts, and a rerun on the
    same store resumes it. A value of the wrong type is a TypeError, one out of its range a
    ValueError, both naming the keyword."""

tune = checked(_tune)
