"""ragform.tune: the budgeted search of `ragform tune` over how retrieved context is presented
(docs/tune.md), with any reader."""
import numbers as _numbers
import os as _os

from . import _ragform
from ._progress import Progress
from ._text import checked


def _path(p):
    return _os.fspath(p) if isinstance(p, _os.PathLike) else (p or "")


@checked
def tune(reader, task, budget, store, input=None, holdout=None, *, dev_items=24,
         holdout_items=32, needle_slots=6, objective="accuracy", robust_floor=0.8, deploy="confirmed", space=None,
         delims=None, p=None, formats=None, orders=None, k=None, spotlight=None, template=None,
         max_tokens=12, seed=0, abs_filter=True, abs_prompts=None, abs_keep=None, eta=2,
         finalists=None, robust_items=8, shard=None, ctx=None, output=None, progress=False):
    """Runs (or resumes, from `store`) the search `ragform tune` runs for the same arguments and
    returns the object `ragform tune --json` prints: profile, budget, spent, grid, trajectory,
    main_effects, holdout {original, tuned, diff_ci95, mcnemar_p}, deployed ("tuned" or
    "original"), why, final_n, ...

    reader: a Model, an OpenAIReader or any object of the reader protocol (ragform.readers);
    ABS needs attention (a Model, or an OpenAIReader on `ragform serve`), otherwise the ABS filter
    is skipped with a note. task: "qa", "kv" or "needle". input/holdout: record files (needle:
    generated from independent seeds when None). delims, p, formats, orders, k, spotlight: a
    dimension's values as a list or a comma-separated str (the CLI's --delims, --p, ...); space:
    a space file. shard: (i, n). ctx: the context cap in tokens (the CLI's --ctx; None: a
    Model's file's context_length, no cap for other readers). output: the profile file to write.
    deploy: "confirmed" writes the winner only when the held-out split confirms it (else the
    original presentation), "best" the winner whatever it says. abs_keep, finalists: None lets
    the plan narrow them when the winner would rest on fewer than 20 dev records per finalist.
    progress: a bar per pass (tqdm when installed); with or without it Ctrl-C stops the search
    between two prompts, and a rerun on the same store resumes it.
    Every other argument is the CLI flag of the same name."""
    # A count of prompts: 1.7 is refused, not truncated to 1 (bool is an int in Python: refused).
    if isinstance(budget, bool) or not isinstance(budget, _numbers.Integral):
        raise TypeError(f"budget: expected an integer count of prompts, got {budget!r}")
    dims = {"delimiter": delims, "p": p, "format": formats, "order": orders, "k": k,
            "spotlight": spotlight}
    with Progress("tune", show=progress) as bar:
        return _ragform._tune(reader, task, int(budget), _path(store), input=_path(input),
                              holdout=_path(holdout), dev_items=dev_items,
                              holdout_items=holdout_items, needle_slots=needle_slots,
                              objective=objective, robust_floor=robust_floor, deploy=deploy,
                              space=_path(space),
                              dimensions=dims, template=_path(template), max_tokens=max_tokens,
                              seed=seed, abs_filter=abs_filter, abs_prompts=abs_prompts,
                              abs_keep=abs_keep, eta=eta, finalists=finalists,
                              robust_items=robust_items,
                              shard=tuple(shard) if shard is not None else None, ctx=ctx,
                              output=_path(output), progress=bar)
