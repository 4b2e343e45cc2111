"""SpotlightRAG: span-level evidence selection with relevance prefix tokens. The function of
`ragform spotlight select` (docs/spotlight.md)."""
from . import _ragform
from ._text import checked

__all__ = ["select"]


@checked
def select(record, vectors=None, encoder=None, K=6, k=None, lam=None, order="doc",
           special_tokens=True, oov="match", layer=1, reader=None):
    """The top-K sentences of a QA record's contexts by SpotlightRAG's token-level score (eqs.
    5-8), annotated with <RelX.XX> and category tokens, and the eq. (10) prompt: the object
    `ragform spotlight select --json` prints for the record ({id, selected: [{title, doc_id,
    sent_id, text, R, R_raw, prefix, category, matches}], prompt}), scores at full precision.

    The token encoder, exactly one of: vectors = word vectors ({word: [floats]} or the path of
    such a JSON file; --encoder static, oov "match" or "skip"); encoder = a ragform.Encoder
    (--encoder model) or a ragform.Model (its hidden states of `layer`, --encoder hidden); or
    reader = any reader with hidden states (a Model, or a Python reader with hidden(prompt,
    layer): docs/python.md, "Your own reader"), as encoder= is.
    k (token top-k, eq. 7) and lam (positional prior weight): None = the CLI's defaults."""
    if encoder is not None and reader is not None:
        raise ValueError("spotlight.select: give encoder= or reader=, not both")
    encoder = encoder if encoder is not None else reader
    return _ragform._spotlight_select(record, vectors, encoder, K, k, lam, order, special_tokens,
                                      oov, layer)
