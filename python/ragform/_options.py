"""Wrapper signatures from a verb's declared options (base/options.h, ragform._ragform.options):
the keywords, their defaults and which are positional come from the one declaration the CLI's
flags come from; a wrapper adds only the parameters that are its own (a reader, a progress hook)."""
import inspect as _inspect
import textwrap as _textwrap

from . import _ragform

_POS = _inspect.Parameter.POSITIONAL_OR_KEYWORD
_KW = _inspect.Parameter.KEYWORD_ONLY


def signature(verb, first=(), last=(), after=None):
    """The signature of a wrapper of `verb`: `first` (names, or (name, default) pairs) as
    positional-or-keyword parameters, then the declared options (positional-or-keyword where the
    declaration says so, else keyword-only) with their declared defaults, each named by its Python
    spelling (`lam` for the key "lambda"), then `last` ((name, default) pairs) keyword-only.
    `after` ({keyword: [(name, default)]}): the wrapper's own parameters placed right after a
    declared one, of its kind (Model.generate's chat= after stop=)."""
    params = []
    for p in first:
        name, default = (p, _inspect.Parameter.empty) if isinstance(p, str) else p
        params.append(_inspect.Parameter(name, _POS, default=default))
    for o in _ragform.options(verb):
        default = _inspect.Parameter.empty if o["required"] else o["default"]
        kind = _POS if o["positional"] else _KW
        params.append(_inspect.Parameter(o["keyword"], kind, default=default))
        for name, own in (after or {}).get(o["keyword"], ()):
            params.append(_inspect.Parameter(name, kind, default=own))
    for name, default in last:
        params.append(_inspect.Parameter(name, _KW, default=default))
    return _inspect.Signature(params)


def bind(sig, args, kwargs):
    """The arguments of a call as a dict, every default filled in (TypeError for a missing or an
    unknown one, as Python's own binding says it)."""
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def signature_line(name, sig, indent=0, width=96):
    """`name(parameters)` of `sig` without its `self`, wrapped at `width` columns, continuation
    lines under the opening parenthesis: a class docstring's signature line, written at `indent`
    (the first line's indent is the docstring's own, so it is left out)."""
    params = [p for p in sig.parameters.values() if p.name != "self"]
    text = f"{name}{sig.replace(parameters=params)}"
    return _textwrap.fill(text, width=width, initial_indent=" " * indent,
                          subsequent_indent=" " * (indent + len(name) + 1),
                          break_long_words=False, break_on_hyphens=False)[indent:]
