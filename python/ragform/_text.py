"""Text arguments that are not valid UTF-8: a str holding a lone surrogate (what os.fsdecode or
json.loads make of broken bytes) cannot cross into C++. pybind11 reports that as "incompatible
function arguments" (TypeError) or as a failed cast (a RuntimeError that only suggests defining
PYBIND11_DETAILED_ERROR_MESSAGES), and the JSON bridge as a parse error (ValueError); checked()
turns each into a ValueError naming the argument and the surrogate. Every function of the
package that passes text to C++ is wrapped (the text a Python reader returns is checked on the
C++ side, py_reader.cpp). The arguments are looked at only after a call failed, so a valid call
costs nothing."""
import functools
import inspect
import os
import operator
import re


# Nesting deeper than this is refused by every JSON input (base/json_file.h kMaxJsonDepth).
_MAX_DEPTH = 128


def bad_text(name, value, _depth=0, _top=None):
    """The ValueError for the first lone surrogate inside `value` (a str, or lists, tuples and
    dicts of them), named `name` and its path inside; None when every string is valid. Lists and
    dicts nested deeper than every JSON input accepts are that error instead (a 100,000-level dict
    made json.dumps and this walk raise RecursionError naming no argument)."""
    if _depth > _MAX_DEPTH:
        return ValueError(f"{_top}: nested deeper than {_MAX_DEPTH} levels (lists, tuples and "
                          "dicts; the bound of every JSON input)")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return ValueError(f"{name}: not valid UTF-8 text: a lone surrogate "
                              f"U+{ord(value[e.start]):04X} at index {e.start}")
        return None
    if isinstance(value, (list, tuple)):
        items = enumerate(value)
    elif isinstance(value, dict):
        items = value.items()
    else:
        return None
    top = name if _top is None else _top
    for key, v in items:
        path = f"{name}[{key!r}]" if _depth < 8 else name
        err = bad_text(path, key, _depth + 1, top) or bad_text(path, v, _depth + 1, top)
        if err:
            return err
    return None


def _split_top_level(s):
    """s split at the commas outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    return parts + [cur]


def param_names(fn):
    """The names of fn's positional parameters: from its signature, or for a pybind11 function
    from the first line of its docstring, "name(self: T, prompt: str, layer: int = -1) -> R"."""
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        pass
    head = (getattr(fn, "__doc__", None) or "").lstrip().split("\n", 1)[0]
    open_at = head.find("(")
    close_at = head.rfind(")")
    if open_at < 0 or close_at < open_at:
        return []
    return [p.split(":", 1)[0].split("=", 1)[0].strip()
            for p in _split_top_level(head[open_at + 1:close_at])]


def param_types(fn):
    """{name: annotation} of a pybind11 function's parameters, from its docstring's first line
    ("name: int = 0" -> {"name": "int"}); {} for a Python function or an unreadable docstring."""
    head = (getattr(fn, "__doc__", None) or "").lstrip().split("\n", 1)[0]
    open_at, close_at = head.find("("), head.rfind(")")
    if open_at < 0 or close_at < open_at:
        return {}
    out = {}
    for p in _split_top_level(head[open_at + 1:close_at]):
        name, _, rest = p.partition(":")
        out[name.strip()] = rest.split("=", 1)[0].strip()
    return out


def signature_types(fn):
    """param_types() for a pybind11 function; for a Python wrapper of one, "int" for each parameter
    whose default is an integer (the wrapper passes it on to C++ as one)."""
    types = param_types(fn)
    if types:
        return types
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: "int" for p in params
            if isinstance(p.default, int) and not isinstance(p.default, bool)}


def _is_bool(value):
    """A bool, Python's or numpy's (np.bool_ has __index__, so it passes for an integer)."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy"
                                       and type(value).__name__ in ("bool_", "bool"))


def _as_index(value):
    """The integer of a Python or numpy integer (bools aside), None for anything else."""
    if _is_bool(value) or isinstance(value, float) or not hasattr(value, "__index__"):
        return None
    if type(value).__module__ == "numpy" and getattr(value, "ndim", 0) != 0:
        return None
    return operator.index(value)


def bad_integer(name, value, annotation):
    """For an argument pybind11 refused: the TypeError for a value that is no integer where C++
    takes one (a bool included, Python's or numpy's, also as an item of a list of integers), the
    ValueError for an integer no C++ integer holds (whatever the parameter: no argument C++ takes
    accepts one); None otherwise."""
    if value is None:
        return None
    is_int_param = annotation in ("int", "Optional[int]")
    if annotation in ("List[int]", "list[int]") and isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if _is_bool(v):
                return TypeError(f"{name}[{i}]: expected an integer, got {type(v).__name__}")
        return None
    if _is_bool(value):
        if is_int_param:
            return TypeError(f"{name}: expected an integer, got {type(value).__name__}")
        return None
    if _as_index(value) is None:
        if is_int_param and isinstance(value, float):
            return TypeError(f"{name}: expected an integer, got float {value!r}")
        return None
    value = _as_index(value)  # numpy's np.uint64(2**63) too (pass 11)
    if value >= 2 ** 63:
        return ValueError(f"{name}: {value} is too large")
    if value < -2 ** 63:
        return ValueError(f"{name}: {value} is too small")
    return None


def bad_range(name, value, annotation):
    """The ValueError for an integer C++ may not hold (above 32 bits, or negative where C++ is
    unsigned): asked only when nothing else explains pybind11's refusal."""
    if annotation not in ("int", "Optional[int]") or _as_index(value) is None:
        return None
    value = _as_index(value)
    if value < 0 or value >= 2 ** 31:
        return ValueError(f"{name}: {value} is out of range for this argument")
    return None


def bytes_for_text(named, types):
    """The TypeError for bytes where C++ takes text: pybind11 takes bytes for a str parameter,
    and their bytes need not be UTF-8 (generate(b'\\xff') reached the tokenizer: issue 40, pass 9)."""
    for name, v in named:
        t = types.get(name, "")
        if t in ("str", "Optional[str]") and isinstance(v, (bytes, bytearray)):
            return TypeError(f"{name}: expected a str, got {type(v).__name__} (decode it first)")
        if t in ("List[str]", "list[str]") and isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                if isinstance(x, (bytes, bytearray)):
                    return TypeError(f"{name}[{i}]: expected a str, got {type(x).__name__} "
                                     "(decode it first)")
    return None


def _may_hold_bytes(args, kwargs):
    for v in (*args, *kwargs.values()):
        if isinstance(v, (bytes, bytearray, list, tuple)):
            return True
    return False


_TYPE_WORDS = {"str": "a str", "int": "an integer", "float": "a number", "bool": "True or False"}


def _fits(value, t):
    """Whether `value` is what pybind11 takes for the simple type `t` (None: not a simple type)."""
    if t == "str":
        return isinstance(value, str)
    if t == "int":
        return not _is_bool(value) and not isinstance(value, float) and hasattr(value, "__index__")
    if t == "float":
        return not _is_bool(value) and isinstance(value, (int, float))
    if t == "bool":
        return _is_bool(value)
    return None


def bad_type(name, value, annotation):
    """For an argument pybind11 refused: the TypeError naming it when its value is not of its
    parameter's type (str, int, float, bool, or a list of one of them; Optional[...] takes None
    too), or the ValueError for a list's integer past 32 bits; None when it fits. pybind11's own
    "incompatible function arguments" names no argument (generate(None), score(5),
    detokenize([2**31]), embed('a str'): issue 40, pass 9)."""
    t = annotation
    if t.startswith("Optional[") and t.endswith("]"):
        if value is None:
            return None
        t = t[len("Optional["):-1]
    m = re.fullmatch(r"(?:List|list)\[(\w+)\]", t)
    if m is None:
        fits = _fits(value, t)
        if fits is False:
            return TypeError(f"{name}: expected {_TYPE_WORDS[t]}, got {type(value).__name__}")
        return None
    item = m.group(1)
    if item not in _TYPE_WORDS:
        return None
    if isinstance(value, (str, bytes, bytearray, dict)) or not hasattr(value, "__iter__"):
        return TypeError(f"{name}: expected a list of {_TYPE_WORDS[item][2:]}s"
                         f" ({_TYPE_WORDS[item]} each), got {type(value).__name__}")
    for i, v in enumerate(value):
        if _fits(v, item) is False:
            return TypeError(f"{name}[{i}]: expected {_TYPE_WORDS[item]}, got {type(v).__name__}")
        if item == "int" and not -2 ** 31 <= int(v) < 2 ** 31:
            return ValueError(f"{name}[{i}]: {int(v)} is out of range")
    return None


def bad_array(name, value, annotation):
    """The TypeError for a numpy array of other than one dimension where a list goes: numpy's own
    words named no argument ("only size-1 arrays can be converted to Python scalars", "len() of
    unsized object": issue 40, pass 11); None otherwise."""
    if type(value).__module__ != "numpy" or not hasattr(value, "ndim") or value.ndim == 1:
        return None
    if not re.fullmatch(r"(?:Optional\[)?(?:List|list)\[\w+\]\]?", annotation):
        return None
    return TypeError(f"{name}: expected a list (a one-dimensional array), got a "
                     f"{value.ndim}-dimensional array")


def fspath(value, name="path"):
    """os.fspath(value), its TypeError naming the argument."""
    try:
        return os.fspath(value)
    except TypeError:
        raise TypeError(f"{name}: expected a str or an os.PathLike, got "
                        f"{type(value).__name__}") from None


def checked(fn):
    """fn, raising ValueError (see above) in place of the TypeError, RuntimeError or JSON parse
    error (ValueError) a bad text argument causes, and TypeError for bytes where text goes."""
    names = None
    types = None

    @functools.wraps(fn)
    def call(*args, **kwargs):
        nonlocal names, types
        if _may_hold_bytes(args, kwargs):  # (looked at before the call: bytes would be accepted)
            if names is None:
                names = param_names(fn)
            if types is None:
                types = param_types(fn)
            if types:
                err = bytes_for_text([(names[i] if i < len(names) else "", v)
                                      for i, v in enumerate(args)] + list(kwargs.items()), types)
                if err:
                    raise err
        try:
            return fn(*args, **kwargs)
        except (TypeError, RuntimeError, ValueError) as e:
            if names is None:
                names = param_names(fn)
            named = [(names[i] if i < len(names) else f"argument {i + 1}", v)
                     for i, v in enumerate(args)] + list(kwargs.items())
            for name, v in named:
                err = bad_text(name, v)
                if err:
                    raise err from None
            sig = signature_types(fn)
            for name, v in named:
                err = bad_array(name, v, sig.get(name, ""))
                if err:
                    raise err from None
            # pybind11's "incompatible function arguments" for a number C++ cannot take: name the
            # argument (a float where an integer goes, a value past 64 bits, then one past 32 bits
            # or negative) instead of listing the signature.
            if "incompatible" in str(e):
                for check in (bad_integer, bad_range, bad_type):
                    for name, v in named:
                        err = check(name, v, sig.get(name, ""))
                        if err:
                            raise err from None
            raise
    return call


def check_methods(cls):
    """Every method defined on cls (its constructor included) wrapped by checked()."""
    for name, attr in list(vars(cls).items()):
        if callable(attr) and (name == "__init__" or not name.startswith("__")):
            setattr(cls, name, checked(attr))
    return cls
