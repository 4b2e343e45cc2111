"""C-NORM (cnorm-surface-formatting.txt): calibrate a delimiter by attention balance, apply it to
documents. The functions of `ragform cnorm calibrate|apply` (docs/cnorm.md)."""
import os

from . import _options, _ragform
from ._progress import Progress
from ._reader_arg import attribute_of, context_of, pick
from ._text import checked

__all__ = ["calibrate", "evaluate", "apply", "default_delimiters"]


def default_delimiters():
    """The default candidate list (comma-separated), as `ragform cnorm calibrate --delims`."""
    return _ragform._cnorm_default_delimiters()


_CALIBRATE = _options.signature(
    "cnorm.calibrate", first=[("model", None), ("records", None)],
    last=[("shared", None), ("progress", True), ("reader", None)])


def _calibrate(*args, **kwargs):
    a = _options.bind(_CALIBRATE, args, kwargs)
    model = pick("cnorm.calibrate", a.pop("model"), a.pop("reader"))
    records = a.pop("records")
    a.pop("shared")  # accepted for compatibility: the prompts are built in
    if records is not None and not isinstance(records, (str, os.PathLike)):
        records = list(records)
    with Progress("cnorm calibrate", show=a.pop("progress")) as bar:
        return _ragform._cnorm_calibrate(model, records, attribute_of(model, "system") or "",
                                         context_of(model), bar, **a)


_calibrate.__signature__ = _CALIBRATE
_calibrate.__name__ = _calibrate.__qualname__ = "calibrate"
_calibrate.__doc__ = """Chooses the candidate delimiter whose formatted prompts give the most balanced attention
    (paper 4.2) and returns the profile JSON as a dict, equal to what `ragform cnorm calibrate
    --no-cache` writes with the same arguments. Every keyword after `records` is the CLI flag of
    the same meaning (S: -S, k: -k, p: -p, template: --template, ...), declared once with its
    default and range in src/pipelines/cnorm/setup.h: ragform._ragform.options("cnorm.calibrate")
    lists them.

    model (or reader=): a ragform.Model, or any reader that answers attention and tokenize (an
    OpenAIReader of `ragform serve`, a Python reader: docs/python.md, "Your own reader"); k is
    fitted to the reader's `ctx` attribute, 4096 tokens (the CLI's --ctx default) without one.
    records: a list of QA / KV / LongBench record dicts (the JSONL objects), or the path of such
    a file (then the profile's input_sha256 is the file's, as the CLI records it); None for task
    "needle"; qa records with fewer than k - 1 usable distractors are left out, as the CLI leaves
    them out. task: qa, kv, needle or longbench. delims: a comma-separated candidate list.
    template: a prompt template file ("" = the paper's own prompt, built in: Appendix D's for qa,
    Appendix B's for kv). shared: accepted for compatibility and unused (the prompts are built
    in). progress: show a progress bar (tqdm if importable). Ctrl-C stops between two passes. A
    value of the wrong type is a TypeError, one out of its range a ValueError, both naming the
    keyword."""
calibrate = checked(_calibrate)


@checked
def apply(profile, record):
    """The record with its documents reformatted by the profile's delimiter and ratio (paper
    4.3), as `ragform cnorm apply` does to one JSONL line: every ctxs[i].text, or the "text"
    string; other fields unchanged. profile: the dict calibrate() returns (or a profile file
    loaded with json.load)."""
    return _ragform._cnorm_apply(profile, record)


_EVALUATE = _options.signature(
    "cnorm.evaluate", first=[("model", None), ("records", None), ("profile", None),
                             ("store", None)],
    last=[("progress", True), ("reader", None)])


def _evaluate(*args, **kwargs):
    a = _options.bind(_EVALUATE, args, kwargs)
    model = pick("cnorm.evaluate", a.pop("model"), a.pop("reader"))
    records, profile, store = a.pop("records"), a.pop("profile"), a.pop("store")
    if profile is None or store is None:
        raise ValueError("cnorm.evaluate: profile= and store= are required")
    if records is not None and not isinstance(records, (str, os.PathLike)):
        records = list(records)
    with Progress("cnorm eval", show=a.pop("progress")) as bar:
        return _ragform._cnorm_evaluate(model, records, profile, os.fspath(store),
                                        context_of(model), bar, **a)


_evaluate.__signature__ = _EVALUATE
_evaluate.__name__ = _evaluate.__qualname__ = "evaluate"
_evaluate.__doc__ = """The gold-position sweep (paper 5.1), as `ragform cnorm eval --store store --profile
    profile`: per question the gold passage and k - 1 distractors, the gold at every position,
    answered greedily by Baseline, C-NORM (the profile's f*) and Min-Token; every prompt and
    answer in the run store `store` (one run per seed; a rerun resumes). Returns the summary
    line the CLI prints (task, analysis, k, items, seeds, variants averaged over the seeds with
    OAA and OPA, per_seed) with "store". The keywords after `store` are the CLI's flags of the
    same meaning, declared once in src/pipelines/cnorm/setup.h (ragform._ragform.options(
    "cnorm.evaluate")). task: qa, kv or needle (longbench: the CLI). seeds: a list or a
    comma-separated str (empty = the profile's seed). density: eval's --density list
    ("0,0.5,1"). profile: the dict calibrate() returns; it must come from this Model's file and
    task unless force=True (for other readers, which have no model file, only the task is
    checked). model (or reader=): any reader (a Model, an OpenAIReader, a Python reader; k is
    fitted to its `ctx` attribute, 4096 without one). Ctrl-C stops between two batches; every
    stored answer stays."""
evaluate = checked(_evaluate)
