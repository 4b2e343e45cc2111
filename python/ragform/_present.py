"""ragform.present: a profile from `ragform tune` applied to new records (docs/tune.md). Its
`profile` is the declaration of src/tune/present.h (ragform._ragform.options("present")), the one
the CLI's --profile comes from."""
import os as _os

from . import _options, _ragform
from ._text import checked

# record, the declared profile, then the reader that counts tokens.
_PRESENT = _options.signature("present", first=["record"], after={"profile": [("model", None)]})


def _present(*args, **kwargs):
    a = _options.bind(_PRESENT, args, kwargs)  # a missing or unknown argument is a TypeError here
    profile = a["profile"]
    if isinstance(profile, _os.PathLike):
        profile = _os.fspath(profile)
    return _ragform._present(a["record"], profile, a["model"])


_present.__signature__ = _PRESENT
_present.__name__ = _present.__qualname__ = "present"
_present.__doc__ = """The record's prompt under a tuned profile, as `ragform present --json` prints it for one
    JSONL line and the server's /v1/rag/present returns it (one function behind all three):
    {id, prompt, documents, gold_position, task, presentation[, prompt_tokens]}.

    record: a dict, one canonical QA record (key-value records for a kv profile); the profile's
    task only picks the prompt template. profile: the profile file's path or its JSON as a dict.
    model: a Model or OpenAIReader that counts the prompt's tokens (prompt_tokens), or None.
    A bad record or profile raises ValueError naming the reason."""

present = checked(_present)
