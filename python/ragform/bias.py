"""Positional attention bias and calibrated document relevance (Found in the Middle, Hsieh et
al. 2024): the functions of ``ragform position-bias`` and ``ragform attention --doc-spans
--calibrated --bias`` (docs/steering.md), returning the dicts those commands print."""

from . import _options, _ragform
from ._text import checked, fspath


def _curve(bias):
    """A bias curve given as a dict (``position_bias``'s result) or the path of a curve file, which
    the native reader reads as the CLI's ``--bias`` does (duplicate keys, a BOM, nesting and size
    bounds alike: issue 40, pass 19 found Python's json module reading it otherwise)."""
    if bias is None or isinstance(bias, dict):
        return bias
    return fspath(bias, "bias")


_RELEVANCE = _options.signature("bias.document_relevance",
                                first=["model", "prompt", "doc_spans", ("bias", None)])


def _span_pairs(spans):
    """doc_spans as lists of two, an item that is no (start, end) pair named (a flat array's
    number gave "'numpy.int64' object is not iterable": issue 40, pass 11)."""
    if isinstance(spans, (str, bytes, dict)) or not hasattr(spans, "__iter__"):
        raise TypeError("doc_spans: expected a list of (start, end) pairs, got "
                        f"{type(spans).__name__}")
    out = []
    for i, s in enumerate(spans):
        try:
            pair = None if isinstance(s, (str, bytes, dict)) else list(s)
        except TypeError:
            pair = None
        if pair is None or len(pair) != 2:
            raise TypeError(f"doc_spans[{i}]: expected a (start, end) pair, got "
                            f"{type(s).__name__}")
        out.append(pair)
    return out


def _document_relevance(*args, **kwargs):
    a = _options.bind(_RELEVANCE, args, kwargs)
    return _ragform._document_relevance(a.pop("model"), a.pop("prompt"),
                                        _span_pairs(a.pop("doc_spans")),
                                        _curve(a.pop("bias")), **a)


_document_relevance.__signature__ = _RELEVANCE
_document_relevance.__name__ = _document_relevance.__qualname__ = "document_relevance"
_document_relevance.__doc__ = """Each document's attention (its mass and its mean per token) in one layer's row of the
    ``query`` token, and with ``bias`` (a curve dict or file) its calibrated relevance (Found in
    the Middle's eq. 4): its attention under the curve's measure minus the curve at its slot.

    ``doc_spans`` is a list of (start, end) byte offsets of the prompt. Returns {"documents":
    [{slot, start, end, token_start, token_end, mass, mean[, bias, calibrated]}], "ranking":
    [slots, most relevant first], "layer", "query_position"[, "measure"]}. layer and query
    (negative: from the end) are the CLI's ``ragform attention --layer --query``, declared once
    in src/pipelines/cnorm/position_bias.h (ragform._ragform.options("bias.document_relevance"))."""
document_relevance = checked(_document_relevance)


_POSITION_BIAS = _options.signature("bias.position_bias", first=["model"],
                                    last=[("records", None)])


def _position_bias(*args, **kwargs):
    a = _options.bind(_POSITION_BIAS, args, kwargs)
    return _ragform._position_bias(a.pop("model"), a.pop("records"), **a)


_position_bias.__signature__ = _POSITION_BIAS
_position_bias.__name__ = _position_bias.__qualname__ = "position_bias"
_position_bias.__doc__ = """The model's positional bias curve: a filler document at each of ``k`` slots of ``limit``
    prompts (needle: generated; qa: ``records``, QA record dicts or the path of a JSONL file),
    the attention it gets per layer and over layers, read over its tokens as ``measure`` says
    ("mean" per token, the paper's, or "sum"). Returns the object ``ragform position-bias
    --json`` prints ({"curve", "measure", "layers", ...}). The keywords are the CLI's flags of
    the same meaning, declared once in src/pipelines/cnorm/setup.h
    (ragform._ragform.options("bias.position_bias")): task (qa or needle), k, limit, seed,
    template, measure; positions is the CLI's ``--sweep --positions`` (a subset of the gold
    positions to sweep): a curve measures every slot, so here it is a ValueError."""
position_bias = checked(_position_bias)
