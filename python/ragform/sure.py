"""SURE (sure-spurious-features.txt): spurious-feature perturbations of documents and the
robustness evaluation of a reader. The functions of `ragform sure perturb|eval` (docs/sure.md)."""
import os
import tempfile

from . import _ragform
from ._progress import Progress

__all__ = ["kinds", "perturb", "evaluate"]


def kinds():
    """The fifteen perturbation kinds of Table 1: dicts {name, category, needs_reader}."""
    return _ragform._sure_kinds()


def perturb(record, kinds=None, seed=0, cutoff="2023-10-01", docs=0):
    """Rule-based perturbations of a QA record's documents (or of a list of records), as the pairs
    `ragform sure perturb` prints (one dict per record, document and kind: id, instance, doc,
    perturbation, category, question, answers, title, original, perturbed, embeds_title, note,
    failed). kinds: categories and/or names, comma-separated (None = every rule-based kind);
    kinds that need a reader (style, llm-generated, ...) are left to the CLI. docs: first N
    documents of each record (0 = all)."""
    records = [record] if isinstance(record, dict) else list(record)
    if not isinstance(kinds, (str, type(None))):
        kinds = ",".join(kinds)
    return _ragform._sure_perturb(records, kinds, seed, cutoff, docs)


def evaluate(model, pairs, store=None, temperature=0.1, max_tokens=32, seed=0, batch=8,
             chain_of_note=False, resamples=2000, prompts=None, progress=True):
    """Instance-level robustness of `model` (a Model or OpenAIReader) over pairs (perturb()'s
    dicts), as `ragform sure eval --store store`: closed-book, original and perturbed answers into
    the run store, then the report rows. Returns {run, store, groups: [one dict per (scope, key,
    subset): n, lose/robust/win, LR, RR, WR, ...], stats}. store: the SQLite file (resumable: a
    second call with the same configuration only computes missing rows); None = a temporary file
    removed afterwards. Ctrl-C stops after the batch in flight; every committed row stays."""
    pairs = list(pairs)
    with Progress("sure eval", show=progress) as bar:
        if store is not None:
            return _ragform._sure_evaluate(model, pairs, os.fspath(store), temperature,
                                           max_tokens, seed, batch, chain_of_note, resamples,
                                           prompts or "", bar)
        with tempfile.TemporaryDirectory() as d:
            out = _ragform._sure_evaluate(model, pairs, os.path.join(d, "sure.sqlite"),
                                          temperature, max_tokens, seed, batch, chain_of_note,
                                          resamples, prompts or "", bar)
            out["store"] = None
            return out
