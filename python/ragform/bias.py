"""Positional attention bias and calibrated document relevance (Found in the Middle, Hsieh et
al. 2024): the functions of ``ragform position-bias`` and ``ragform attention --doc-spans
--calibrated --bias`` (docs/steering.md), returning the dicts those commands print."""

import json as _json
import os as _os

from . import _ragform


def _curve(bias):
    """A bias curve given as a dict (``position_bias``'s result) or the path of a curve file."""
    if bias is None or isinstance(bias, dict):
        return bias
    with open(_os.fspath(bias), encoding="utf-8") as f:
        return _json.load(f)


def document_relevance(model, prompt, doc_spans, bias=None, layer=-1, query=-1):
    """Each document's attention mass in one layer's row of the ``query`` token, and with
    ``bias`` (a curve dict or file) its calibrated relevance, mass minus the curve at its slot.

    ``doc_spans`` is a list of (start, end) byte offsets of the prompt. Returns {"documents":
    [{slot, start, end, token_start, token_end, mass[, bias, calibrated]}], "ranking": [slots,
    most relevant first], "layer", "query_position"}."""
    return _ragform._document_relevance(model, prompt, [list(s) for s in doc_spans],
                                        _curve(bias), layer, query)


def position_bias(model, task="needle", records=None, k=10, limit=10, seed=0):
    """The model's positional bias curve: a filler document at each of ``k`` slots of ``limit``
    prompts (needle: generated; qa: ``records``), the attention mass it gets per layer and over
    layers. Returns the object ``ragform position-bias --json`` prints ({"curve", "layers", ...})."""
    return _ragform._position_bias(model, task, records, k, limit, seed)
