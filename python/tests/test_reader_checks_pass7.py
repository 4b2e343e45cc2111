"""Readers' answers and Model arguments, seventh pass: a bool inside a list of numbers a Python
reader returned was cast by numpy to 0.0 / 1.0 (python/src/py_reader_answers.cpp); generate()'s
stop= items that are not str were written as their repr and never matched, bools were taken as
integers by attention/hidden/token_piece/detokenize, numpy integers refused by generate()'s
keywords (python/src/options.h, bindings.h, python/ragform/_text.py); OpenAIReader.generate took
the first of the server's choices whatever its index or their number
(src/reader/openai_reader.cpp)."""
import http.server
import json
import threading

import numpy as np
import pytest

import ragform
from ragform import readers

P = "Once upon a time"


class Words:
    def generate(self, prompts, params):
        return ["x" for _ in prompts]

    def tokenize(self, text):
        return list(range(1, len(text.split()) + 1))


def reader(**methods):
    return readers.as_reader(type("R", (Words,), methods)())


# ---------------------------------------------------------------- F3: a bool among numbers


@pytest.mark.parametrize("answer, kind", [
    ([False, -2.25, -0.5], "bool"),
    ((-0.5, True, -0.5), "bool"),
    ([np.bool_(False), -2.25, -0.5], "bool_"),
    ([-0.5, -2.25, np.False_], "bool_"),
])
def test_a_bool_among_score_log_probs_is_refused(answer, kind):
    at = [i for i, v in enumerate(answer) if isinstance(v, (bool, np.bool_))][0]
    r = reader(score=lambda s, p, c: answer)
    with pytest.raises(ValueError, match=rf"R\.score: the log-probs\[{at}\]: expected a number, "
                                         rf"got {kind}$"):
        r.score("a", " b c d")


def test_all_bools_and_numbers_keep_their_behaviour():
    with pytest.raises(ValueError, match=r"the log-probs: expected numbers, got an array of bools"):
        reader(score=lambda s, p, c: [False, False, False]).score("a", " b c d")
    assert list(reader(score=lambda s, p, c: [0, -2.25, np.float32(-0.5)]).score("a", " b c d")) \
        == [0.0, -2.25, -0.5]
    assert list(reader(score=lambda s, p, c: np.array([-1, -2, -3])).score("a", " b c d")) \
        == [-1.0, -2.0, -3.0]


@pytest.mark.parametrize("states, where", [
    ([[True, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], r"states\[0\]\[0\]"),
    ([[0, 1, 2, 3], (4, 5, np.True_, 7), [8, 9, 10, 11]], r"states\[1\]\[2\]"),
])
def test_a_bool_among_hidden_states_is_refused(states, where):
    r = reader(hidden=lambda s, p, layer: {"states": states, "pieces": ["a", " b", " c"]})
    with pytest.raises(ValueError, match=rf"R\.hidden: {where}: expected a number, got bool"):
        r.hidden("a b c", -1)


def test_a_list_of_bool_arrays_among_hidden_states_is_refused():
    states = [np.array([1.0, 2.0]), np.array([True, False]), np.array([3.0, 4.0])]
    r = reader(hidden=lambda s, p, layer: {"states": states, "pieces": ["a", " b", " c"]})
    with pytest.raises(ValueError, match=r"R\.hidden: states\[1\]: expected numbers, got an array "
                                         r"of bools"):
        r.hidden("a b c", -1)


def test_a_bool_among_attention_heads_or_mean_is_refused():
    heads = reader(attention=lambda s, p, L, H, Q: [{"heads": [[True, 0.0, 0.0],
                                                               [0.1, 0.1, 0.8]]}])
    with pytest.raises(ValueError, match=r"R\.attention: a row's heads\[0\]\[0\]: expected a "
                                         r"number, got bool"):
        heads.attention("a b c")
    mean = reader(attention=lambda s, p, L, H, Q: [{"heads": [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]],
                                                    "mean": [0.5, 0.5, False]}])
    with pytest.raises(ValueError, match=r"R\.attention: mean\[2\]: expected a number, got bool"):
        mean.attention("a b c")
    ok = reader(attention=lambda s, p, L, H, Q: [{"heads": [[0.5, 0.5, 0], [0.5, 0.5, 0]],
                                                  "mean": [0.5, 0.5, 0]}])
    assert ok.attention("a b c").mean.tolist() == [0.5, 0.5, 0.0]


# ---------------------------------------------------------------- F4: Model's arguments


@pytest.mark.parametrize("stop, kind", [([b"girl"], "bytes"), ([["girl"]], "list"), ([1], "int"),
                                        (["girl", None], "NoneType"), ((True,), "bool")])
def test_a_stop_item_that_is_not_a_str_is_refused(model, stop, kind):
    at = len(stop) - 1
    with pytest.raises(TypeError, match=rf"^stop\[{at}\]: expected a str, got {kind}$"):
        model.generate(P, n_predict=8, stop=stop)


def test_stop_as_str_or_list_of_str_still_stops(model):
    full = model.generate(P, n_predict=8)
    assert "girl" in full
    assert model.generate(P, n_predict=8, stop=["girl"]) == full[:full.index("girl")]
    assert model.generate(P, n_predict=8, stop="girl") == full[:full.index("girl")]


@pytest.mark.parametrize("call, name", [
    (lambda m: m.attention(P, layer=True), "layer"),
    (lambda m: m.attention(P, query=np.bool_(True)), "query"),
    (lambda m: m.hidden(P, True), "layer"),
    (lambda m: m.token_piece(True), "id"),
    (lambda m: m.token_piece(np.False_), "id"),
    (lambda m: m.detokenize([True, 403]), r"ids\[0\]"),
    (lambda m: m.detokenize([403, np.True_]), r"ids\[1\]"),
    (lambda m: m.generate(P, n_predict=True), "n_predict"),
])
def test_a_bool_is_not_an_integer_argument(model, call, name):
    with pytest.raises(TypeError, match=rf"^{name}: expected an integer, got (bool|True)"):
        call(model)


def test_numpy_integers_are_integer_arguments(model):
    assert model.generate(P, n_predict=np.int64(2)) == model.generate(P, n_predict=2)
    assert model.generate(P, n_predict=np.int32(2), seed=np.uint8(3)) == \
        model.generate(P, n_predict=2, seed=3)
    assert model.attention(P, layer=np.int64(1)).layer == 1
    assert model.hidden(P, np.int16(1)).shape == model.hidden(P, 1).shape
    assert model.token_piece(np.int64(403)) == model.token_piece(403)
    assert model.detokenize([np.int32(403)]) == model.detokenize([403])
    with pytest.raises(TypeError, match=r"^n_predict: expected an integer, got 2\.0$"):
        model.generate(P, n_predict=2.0)


# ---------------------------------------------------------------- F10: OpenAIReader.generate


class _Choices(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server (not ragform) answering generate with `choices`."""
    choices = []

    def _send(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(200, {"choices": _Choices.choices, "usage": {"prompt_tokens": 2}})

    def log_message(self, *args):
        pass


@pytest.fixture
def choices_server():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Choices)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield ragform.OpenAIReader(f"http://127.0.0.1:{srv.server_port}/v1", model="m",
                                   retries=0, timeout=20)
    finally:
        srv.shutdown()
        srv.server_close()


def _c(text, **kw):
    return dict(text=text, finish_reason="length", **kw)


@pytest.mark.parametrize("choices, says", [
    ([_c("WRONG", index=1), _c("right", index=0)], r"choices: expected 1 \(one per prompt\), got 2"),
    ([_c("x", index=1)], r"choices\[0\]\.index: 1 is out of range \(0\.\.0\)"),
    ([_c("x", index=10 ** 12)], r"choices\[0\]\.index: 1000000000000 is out of range \(0\.\.0\)"),
    ([_c("x", index=True)], r"choices\[0\]\.index: expected an integer, got boolean"),
    ([_c("x", index=0)] * 4, r"choices: expected 1 \(one per prompt\), got 4"),
    ([], r"choices: an empty list"),
])
def test_generate_checks_the_choices_as_score_does(choices_server, choices, says):
    _Choices.choices = choices
    with pytest.raises(RuntimeError, match=r"openai reader: generate: " + says):
        choices_server.generate("a b", n_predict=2)


def test_generate_takes_the_choice_of_its_index(choices_server):
    _Choices.choices = [_c("right", index=0)]
    assert choices_server.generate("a b", n_predict=2) == "right"
    _Choices.choices = [_c("right")]  # no index: the first
    assert choices_server.generate("a b", n_predict=2) == "right"
