"""What the adapters share: the stop-string rule and the split of a scored continuation."""


def cut_at_stop(text, stop):
    """(text before the earliest stop string, True) when one occurs, else (text, False): the
    native reader's rule (the stop string itself is not part of the answer)."""
    cut = min((i for i in (text.find(s) for s in stop or []) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def common_prefix(a, b):
    """The number of leading ids `a` and `b` share: where a continuation's tokens begin when the
    prompt and prompt + continuation are tokenized apart (as the OpenAI reader splits them)."""
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def score_split(prompt_ids, all_ids, continuation):
    """The first scored position: after the prompt's tokens (at least 1: token 0 has no
    condition), or 1 for an empty continuation (the prompt's own tokens). Raises ValueError when
    the continuation adds no token."""
    if not continuation:
        if not all_ids:
            raise ValueError("score: empty prompt")
        return 1
    split = max(common_prefix(prompt_ids, all_ids), 1)
    if split >= len(all_ids):
        raise ValueError("score: the continuation adds no tokens")
    return split


def resolve(index, n):
    """A possibly negative index (from the end) into n items, checked."""
    i = index + n if index < 0 else index
    if not 0 <= i < n:
        raise IndexError(f"index {index} out of range for {n}")
    return i
