"""Positional attention bias and calibrated document relevance (Found in the Middle, Hsieh et
al. 2024): the functions of ``ragform position-bias`` and ``ragform attention --doc-spans
--calibrated --bias`` (docs/steering.md), returning the dicts those commands print."""

import json as _json
import os as _os

from . import _ragform
from ._text import checked


def _curve(bias):
    """A bias curve given as a dict (``position_bias``'s result) or the path of a curve file."""
    if bias is None or isinstance(bias, dict):
        return bias
    with open(_os.fspath(bias), encoding="utf-8") as f:
        return _json.load(f)


@checked
def document_relevance(model, prompt, doc_spans, bias=None, layer=-1, query=-1):
    """Each document's attention (its mass and its mean per token) in one layer's row of the
    ``query`` token, and with ``bias`` (a curve dict or file) its calibrated relevance (Found in
    the Middle's eq. 4): its attention under the curve's measure minus the curve at its slot.

    ``doc_spans`` is a list of (start, end) byte offsets of the prompt. Returns {"documents":
    [{slot, start, end, token_start, token_end, mass, mean[, bias, calibrated]}], "ranking":
    [slots, most relevant first], "layer", "query_position"[, "measure"]}."""
    return _ragform._document_relevance(model, prompt, [list(s) for s in doc_spans],
                                        _curve(bias), layer, query)


@checked
def position_bias(model, task="needle", records=None, k=10, limit=10, seed=0, measure=None):
    """The model's positional bias curve: a filler document at each of ``k`` slots of ``limit``
    prompts (needle: generated; qa: ``records``), the attention it gets per layer and over layers,
    read over its tokens as ``measure`` says ("mean" per token, the paper's, or "sum"; None: the
    default of ``ragform position-bias --measure``). Returns the object ``ragform position-bias
    --json`` prints ({"curve", "measure", "layers", ...})."""
    return _ragform._position_bias(model, task, records, k, limit, seed, measure)
