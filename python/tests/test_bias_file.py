"""A bias-curve file given to ``rbias.document_relevance`` is read by the native reader,
the one ``ragform attention --bias`` uses (issue 40, pass 19: Python's json module read it, so a
duplicate "measure" key calibrated under the last one where the CLI refused the file, and a
byte order mark failed only in Python)."""
import json

import pytest

from ragform import bias as rbias

PROMPT = "Lily had a red ball. Tom had a big dog. Sue liked to eat cake. The dog's name was"
SPANS = [(0, 20), (21, 39), (40, 62)]


def test_a_curve_file_reads_as_the_cli_reads_it(model, model_path, cli, tmp_path):
    curve = {"curve": [0.01, 0.02, 0.2], "measure": "sum"}
    good = tmp_path / "curve.json"
    good.write_text(json.dumps(curve), encoding="utf-8")
    from_file = rbias.document_relevance(model, PROMPT, SPANS, str(good))
    from_dict = rbias.document_relevance(model, PROMPT, SPANS, curve)
    assert from_file == from_dict
    printed = cli("attention", "-m", model_path, "-p", PROMPT, "--doc-spans",
                  "0:20,21:39,40:62", "--calibrated", "--bias", str(good), "--json")
    assert printed["documents"] == from_file["documents"]

    # A UTF-8 byte order mark, as the CLI's reader takes it.
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(curve).encode())
    assert rbias.document_relevance(model, PROMPT, SPANS, bom) == from_file

    # A key twice in one object is refused by both, naming the key (a file of settings that is
    # not JSON: the CLI's exit 2, ValueError, as its other faults).
    twice = tmp_path / "twice.json"
    twice.write_text('{"curve": [0.01, 0.02, 0.2], "measure": "sum", "measure": "mean"}',
                     encoding="utf-8")
    with pytest.raises(ValueError, match="'measure' twice"):
        rbias.document_relevance(model, PROMPT, SPANS, twice)


def test_word_vectors_as_a_dict_are_read_as_a_file_is(tmp_path, nq_records):
    """Issue 40, pass 20: a dict of word vectors gave pybind's cast error for None or a number
    as a word, and took true as 1, where the file's reader refuses both naming the word."""
    from ragform import spotlight
    rec = {"question": "Which ball?", "answers": ["red"],
           "ctxs": [{"title": "t", "text": "Lily had a red ball. Tom had a dog."}]}
    ok = spotlight.select(rec, vectors={"red": [1.0, 0.0], "ball": [0.0, 1.0]})
    assert ok
    for bad, says in (({"red": None}, "red"), ({"red": [True, 0.0]}, "red"),
                      ({"red": [1.0, 0.0], "ball": [1.0]}, r"word .(red|ball). has \d values")):
        with pytest.raises(ValueError, match=says):
            spotlight.select(rec, vectors=bad)
