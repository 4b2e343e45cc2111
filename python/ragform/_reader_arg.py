"""The reader of a pipeline function: `model=` (the historical name) or `reader=`, one of them.
Either may be a ragform.Model, an OpenAIReader or any object of the Python reader protocol
(docs/python.md, "Your own reader"); the C++ side (python/src/py_reader.cpp) tells them apart."""
import operator

from . import _ragform


def pick(fn, model, reader, required=True):
    """The one reader given to `fn` (its name, for the message), or None when neither is given and
    the reader is optional."""
    if model is not None and reader is not None:
        raise ValueError(f"{fn}: give model= or reader=, not both")
    r = model if model is not None else reader
    if r is None and required:
        raise ValueError(f"{fn}: no reader: pass model= (a ragform.Model or OpenAIReader) or "
                         f"reader= (any object with generate(prompts, params))")
    return r


def _ctx_range():
    """--ctx's range, from its one declaration (src/reader/engine_settings.h)."""
    d = next(o for o in _ragform.options("model") if o["key"] == "ctx")
    return int(d["min"]), int(d["max"])


def _where(r, name):
    where = f"{type(r).__name__}.{name}"
    return where if isinstance(r, _ragform.Reader) else "python reader: " + where


def _exception_text(e):
    """ "ValueError: message", never failing (a lone surrogate escaped, a __str__ that raises
    replaced by the type's name), as python/src/py_reader.cpp words a reader's exception."""
    kind = type(e).__name__
    try:
        msg = str(e).encode("utf-8", "backslashreplace").decode("utf-8")
    except Exception:  # noqa: BLE001 - its __str__ raised: the type is all there is
        return f"{kind} (its message could not be read)"
    return f"{kind}: {msg}" if msg else kind


def attribute_of(r, name):
    """r.<name>, or None when the reader has no such attribute (AttributeError). Any other exception
    raised reading it (a property that raises) is a ValueError naming the reader and the attribute:
    "python reader: R.ctx: RuntimeError: ctx boom", not the bare exception (pass 6, E6)."""
    try:
        return getattr(r, name, None)
    except Exception as e:  # noqa: BLE001 - KeyboardInterrupt and SystemExit propagate
        raise ValueError(f"{_where(r, name)}: {_exception_text(e)}") from e


def context_of(r):
    """The context a reader was opened with (its `ctx` attribute: Model.ctx), or None when it has
    none (or None): the CLI's --ctx default then. Anything else than an integer in --ctx's range (a
    Python int or anything with __index__, such as numpy's; not a bool) is a ValueError naming
    the reader's class and `ctx`, as its answers' checks are (python/src/py_reader.cpp): NaN, 1.5
    and "4096" were taken as absent, 2**70 and -1 refused in words naming neither."""
    ctx = attribute_of(r, "ctx")
    if ctx is None:
        return None
    where = _where(r, "ctx")
    lo, hi = _ctx_range()
    expected = f"expected an integer number of tokens in {lo}..{hi}"
    if isinstance(ctx, bool) or type(ctx).__name__ in ("bool_", "bool") or \
            not hasattr(type(ctx), "__index__"):
        raise ValueError(f"{where}: {expected}, got {type(ctx).__name__}")
    n = operator.index(ctx)
    if not lo <= n <= hi:
        raise ValueError(f"{where}: {n} is out of range ({expected})")
    return n
