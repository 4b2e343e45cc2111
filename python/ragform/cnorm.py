"""C-NORM (cnorm-surface-formatting.txt): calibrate a delimiter by attention balance, apply it to
documents. The functions of `ragform cnorm calibrate|apply` (docs/cnorm.md)."""
from . import _ragform
from ._progress import Progress
from ._reader_arg import context_of, pick
from ._text import checked

__all__ = ["calibrate", "evaluate", "apply", "default_delimiters"]


def default_delimiters():
    """The default candidate list (comma-separated), as `ragform cnorm calibrate --delims`."""
    return _ragform._cnorm_default_delimiters()


@checked
def calibrate(model=None, records=None, task="qa", S=6, delims=None, p=0.5, seed=0, k=10,
              layer=-1, heads="mean", context_span=False, template=None, shared=None,
              progress=True, reader=None):
    """Chooses the candidate delimiter whose formatted prompts give the most balanced attention
    (paper 4.2) and returns the profile JSON as a dict, equal to what `ragform cnorm calibrate
    --no-cache` writes with the same arguments (-S S --delims delims -p p --seed seed -k k
    --layer layer --heads heads).

    model (or reader=): a ragform.Model, or any reader that answers attention and tokenize (an
    OpenAIReader of `ragform serve`, a Python reader: docs/python.md, "Your own reader"); k is
    fitted to the reader's `ctx` attribute, 4096 tokens (the CLI's --ctx default) without one.
    records: a list of QA / KV / LongBench record dicts (the JSONL objects), or the path of such
    a file (then the profile's input_sha256 is the file's, as the CLI records it); None for task
    "needle". task: qa, kv, needle or longbench. delims: a comma-separated candidate list (None =
    default_delimiters()). template: a prompt template file (None = the paper's own prompt, built
    in: Appendix D's for qa, Appendix B's for kv, as the CLI's default). shared: accepted for
    compatibility and unused (the prompts are built in). progress: show a progress bar (tqdm if
    importable). Ctrl-C stops between two passes."""
    import os
    model = pick("cnorm.calibrate", model, reader)
    if records is not None and not isinstance(records, (str, os.PathLike)):
        records = list(records)
    with Progress("cnorm calibrate", show=progress) as bar:
        return _ragform._cnorm_calibrate(model, records, task, S, delims, p, seed, k, layer,
                                         str(heads), context_span, template or "", shared or "",
                                         getattr(model, "system", "") or "",
                                         context_of(model), bar)


@checked
def apply(profile, record):
    """The record with its documents reformatted by the profile's delimiter and ratio (paper
    4.3), as `ragform cnorm apply` does to one JSONL line: every ctxs[i].text, or the "text"
    string; other fields unchanged. profile: the dict calibrate() returns (or a profile file
    loaded with json.load)."""
    return _ragform._cnorm_apply(profile, record)


@checked
def evaluate(model=None, records=None, profile=None, store=None, task="qa", k=10, limit=0,
             seeds=None, max_tokens=16, template=None, positions="all", all_candidates=False,
             density=None, force=False, progress=True, reader=None):
    """The gold-position sweep (paper 5.1), as `ragform cnorm eval --store store --profile
    profile`: per question the gold passage and k - 1 distractors, the gold at every position,
    answered greedily by Baseline, C-NORM (the profile's f*) and Min-Token; every prompt and
    answer in the run store `store` (one run per seed; a rerun resumes). Returns the summary
    line the CLI prints (task, analysis, k, items, seeds, variants averaged over the seeds with
    OAA and OPA, per_seed) with "store". task: qa, kv or needle (longbench: the CLI). seeds: a
    list (None = the profile's seed). density: eval's --density list ("0,0.5,1"). profile: the
    dict calibrate() returns; it must come from this Model's file and task unless force=True (for
    other readers, which have no model file, only the task is checked). model (or reader=): any
    reader (a Model, an OpenAIReader, a Python reader; k is fitted to its `ctx` attribute, 4096
    without one). Ctrl-C stops between two batches; every stored answer stays."""
    import os
    model = pick("cnorm.evaluate", model, reader)
    if profile is None or store is None:
        raise ValueError("cnorm.evaluate: profile= and store= are required")
    if records is not None and not isinstance(records, (str, os.PathLike)):
        records = list(records)
    with Progress("cnorm eval", show=progress) as bar:
        return _ragform._cnorm_evaluate(model, records, profile, task, k, limit,
                                        list(seeds or []), max_tokens, template or "",
                                        os.fspath(store), positions, all_candidates, density,
                                        force, context_of(model), bar)
