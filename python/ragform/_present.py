"""ragform.present: a profile from `ragform tune` applied to new records (docs/tune.md)."""
import os as _os

from . import _ragform
from ._text import checked


@checked
def present(record, profile, model=None):
    """The record's prompt under a tuned profile, as `ragform present --json` prints it for one
    JSONL line and the server's /v1/rag/present returns it (one function behind all three):
    {id, prompt, documents, gold_position, task, presentation[, prompt_tokens]}.

    record: a dict, one canonical QA record (key-value records for a kv profile); the profile's
    task only picks the prompt template. profile: the profile file's path or its JSON as a dict.
    model: a Model or OpenAIReader that counts the prompt's tokens (prompt_tokens), or None.
    A bad record or profile raises ValueError naming the reason."""
    if isinstance(profile, _os.PathLike):
        profile = _os.fspath(profile)
    return _ragform._present(record, profile, model)
