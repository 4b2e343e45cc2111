"""SpotlightRAG: span-level evidence selection with relevance prefix tokens. The function of
`ragform spotlight select` (docs/spotlight.md)."""
from . import _options, _ragform
from ._text import checked

__all__ = ["select"]

# record, the encoder (vectors= or encoder=), then the declared options in their order (K, k,
# lam, order, special_tokens, oov, layer: src/pipelines/spotlight/select_options.h), then reader=.
_SELECT = _options.signature("spotlight.select",
                             first=["record", ("vectors", None), ("encoder", None)],
                             after={"layer": [("reader", None)]})


def _select(*args, **kwargs):
    a = _options.bind(_SELECT, args, kwargs)
    encoder, reader = a.pop("encoder"), a.pop("reader")
    if encoder is not None and reader is not None:
        raise ValueError("spotlight.select: give encoder= or reader=, not both")
    encoder = encoder if encoder is not None else reader
    return _ragform._spotlight_select(a.pop("record"), a.pop("vectors"), encoder, **a)


_select.__signature__ = _SELECT
_select.__name__ = _select.__qualname__ = "select"
_select.__doc__ = """The top-K sentences of a QA record's contexts by SpotlightRAG's token-level score (eqs.
    5-8), annotated with <RelX.XX> and category tokens, and the eq. (10) prompt: the object
    `ragform spotlight select --json` prints for the record ({id, selected: [{title, doc_id,
    sent_id, text, R, R_raw, prefix, category, matches}], prompt}), scores at full precision.

    The token encoder, exactly one of: vectors = word vectors ({word: [floats]} or the path of
    such a JSON file; --encoder static, oov "match" or "skip"); encoder = a ragform.Encoder
    (--encoder model) or a ragform.Model (its hidden states of `layer`, --encoder hidden); or
    reader = any reader with hidden states (a Model, or a Python reader with hidden(prompt,
    layer): docs/python.md, "Your own reader"), as encoder= is.
    The keywords after `encoder` are the CLI's flags of the same meaning (lam: --lambda, a
    reserved word in Python), declared once in src/pipelines/spotlight/select_options.h
    (ragform._ragform.options("spotlight.select")); k (token top-k, eq. 7) and lam (positional
    prior weight) None: the ranker's defaults, as the CLI's."""
select = checked(_select)
