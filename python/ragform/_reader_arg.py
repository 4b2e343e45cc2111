"""The reader of a pipeline function: `model=` (the historical name) or `reader=`, one of them.
Either may be a ragform.Model, an OpenAIReader or any object of the Python reader protocol
(docs/python.md, "Your own reader"); the C++ side (python/src/py_reader.cpp) tells them apart."""


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


def context_of(r):
    """The context a reader was opened with (Model.ctx), or None: the CLI's --ctx default then."""
    ctx = getattr(r, "ctx", None)
    return ctx if isinstance(ctx, int) and not isinstance(ctx, bool) else None
