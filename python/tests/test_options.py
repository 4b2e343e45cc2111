"""Issue 41: a verb's options are declared once (base/options.h). For each declared verb, the
Python wrapper's signature and the CLI's --help derive every option's default and range from the
declaration (ragform._ragform.options), and the same out-of-range value is refused by both with
the option's own spelling."""
import inspect
import os
import re
import subprocess

import pytest

import ragform
import ragform.bias  # not imported by the package itself

# verb -> (the Python wrapper, the CLI command)
VERBS = {"tune": (lambda: ragform.tune, ["tune"]),
         "sure.evaluate": (lambda: ragform.sure.evaluate, ["sure", "eval"]),
         "cnorm.calibrate": (lambda: ragform.cnorm.calibrate, ["cnorm", "calibrate"]),
         "cnorm.evaluate": (lambda: ragform.cnorm.evaluate, ["cnorm", "eval"]),
         "bias.position_bias": (lambda: ragform.bias.position_bias, ["position-bias"]),
         "sure.attention": (lambda: ragform.sure.attention, ["sure", "attention"]),
         "sure.perturb": (lambda: ragform.sure.perturb, ["sure", "perturb"]),
         "sure.filter": (lambda: ragform.sure.filter, ["sure", "filter"]),
         "sure.oracle": (lambda: ragform.sure.oracle, ["sure", "oracle"]),
         "spotlight.select": (lambda: ragform.spotlight.select, ["spotlight", "select"]),
         "generate": (lambda: ragform.Model.generate, ["generate"]),
         "logits": (lambda: ragform.Model.logits, ["logits"]),
         "bias.document_relevance": (lambda: ragform.bias.document_relevance, ["attention"]),
         "present": (lambda: ragform.present, ["present"])}


def cli_help(command):
    return subprocess.run([os.environ["RAGFORM_BIN"], *command, "--help"], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_wrapper_and_the_cli_derive_from_the_declaration(verb):
    wrapper, command = VERBS[verb]
    decl = ragform._ragform.options(verb)
    sig = inspect.signature(wrapper())
    for o in decl:
        p = sig.parameters[o["keyword"]]
        assert (p.default is inspect.Parameter.empty) == o["required"], o["key"]
        if not o["required"]:
            assert p.default == o["default"], o["key"]
    text = cli_help(command)
    for o in decl:
        if not o["flag"]:
            continue
        line = next(l for l in text.splitlines()
                    if re.match(r"\s+" + re.escape(o["flag"].replace(",", ", ")) + r"\b", l))
        if o["required"]:
            assert "(required)" in line, line
        elif o["unset"]:
            assert f"[default: {o['unset']}" in line, line
        elif o["default"] not in (None, False, [], "") and o["kind"] not in ("on_off", "switch"):
            want = o["default"] if not isinstance(o["default"], float) else f"{o['default']:g}"
            if isinstance(want, list):
                want = ",".join(want)
            assert f"[default: {want}" in line, line
        if o["min"] is not None and o["max"] is not None and o["max"] < 2147483647:
            lo, hi = (f"{v:.0f}" if v == int(v) else f"{v:g}" for v in (o["min"], o["max"]))
            assert f"{lo}..{hi}]" in line, line


def test_an_out_of_range_value_is_refused_by_both_front_ends(model, model_path, tmp_path):
    """The same value, each front end's spelling: --temp for the CLI, temperature= for Python."""
    with pytest.raises(ValueError, match=r"^temperature: value too large: 101 \(largest accepted: 100\)"):
        ragform.sure.evaluate(model, [], temperature=101, progress=False)
    r = subprocess.run([os.environ["RAGFORM_BIN"], "sure", "eval", "-m", model_path, "--store",
                        str(tmp_path / "s.sqlite"), "--temp", "101"], capture_output=True,
                       text=True, input="")
    assert r.returncode == 2 and r.stderr.startswith("ragform: --temp: value too large: 101 (largest accepted: 100)")
    with pytest.raises(ValueError, match=r"^eta: value too large: 17 \(largest accepted: 16\)"):
        ragform.tune(model, "needle", 30, str(tmp_path / "t.sqlite"), eta=17)
    r = subprocess.run([os.environ["RAGFORM_BIN"], "tune", "-m", model_path, "--task", "needle",
                        "--budget", "30", "--store", str(tmp_path / "t.sqlite"), "--eta", "17"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("ragform: --eta: value too large: 17 (largest accepted: 16)")


def test_an_undeclared_verb_is_named():
    with pytest.raises(ValueError, match="no declared verb 'nope'"):
        ragform._ragform.options("nope")


# verb -> (a Python call with an out-of-range value, the CLI's arguments with the same value, the
# option's Python spelling, its CLI spelling, the reason both give)
REFUSALS = {
    "cnorm.calibrate": (lambda m, d: ragform.cnorm.calibrate(m, None, S=0, progress=False),
                        ["cnorm", "calibrate", "-o", "{d}/p.json", "-S", "0"], "S", "-S",
                        "value out of range: 0 (accepted: 1 or more)"),
    "cnorm.evaluate": (lambda m, d: ragform.cnorm.evaluate(m, None, {}, f"{d}/e.sqlite",
                                                           max_tokens=0, progress=False),
                       ["cnorm", "eval", "--profile", "{d}/p.json", "--store", "{d}/e.sqlite",
                        "--max-tokens", "0"], "max_tokens", "--max-tokens",
                       "value out of range: 0 (accepted: 1 or more)"),
    "bias.position_bias": (lambda m, d: ragform.bias.position_bias(m, "needle", limit=0),
                           ["position-bias", "--task", "needle", "--limit", "0"], "limit",
                           "--limit", "value out of range: 0 (accepted: 1 or more)"),
    "generate": (lambda m, d: m.generate("Once", temp=101),
                 ["generate", "-p", "Once", "--temp", "101"], "temp", "--temp",
                 "value too large: 101 (largest accepted: 100)"),
    "generate.stop": (lambda m, d: m.generate("Once", stop=""),
                      ["generate", "-p", "Once", "--stop", ""], "stop", "--stop",
                      "'stop' strings must not be empty"),
    "bias.document_relevance": (lambda m, d: ragform.bias.document_relevance(
                                    m, "a b", [(0, 1)], layer=2**31),
                                ["attention", "-p", "a b", "--layer", "2147483648"], "layer",
                                "--layer", "value too large: 2147483648 (largest accepted: "
                                "2147483647)"),
}


@pytest.mark.parametrize("verb", sorted(REFUSALS))
def test_the_pipeline_verbs_refuse_alike(verb, model, model_path, tmp_path):
    call, argv, key, flag, why = REFUSALS[verb]
    with pytest.raises(ValueError, match="^" + re.escape(f"{key}: {why}")):
        call(model, tmp_path)
    r = subprocess.run([os.environ["RAGFORM_BIN"], *[a.format(d=tmp_path) for a in argv], "-m",
                        model_path], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith(f"ragform: {flag}: {why}"), r.stderr


def test_a_task_error_names_the_option_in_each_spelling(model, model_path, tmp_path):
    """The library's check of a task (one OptionError keyed "task"): task= in Python, --task on
    the command line, for the verbs that share it."""
    with pytest.raises(ValueError, match="^task: expected qa, kv, needle or longbench, got 'xx'"):
        ragform.cnorm.calibrate(model, None, task="xx", progress=False)
    with pytest.raises(ValueError, match="^task: expected qa or needle, got 'kv'"):
        ragform.bias.position_bias(model, "kv")
    for argv, why in ((["cnorm", "calibrate", "-o", str(tmp_path / "p.json"), "--task", "xx"],
                       "expected qa, kv, needle or longbench, got 'xx'"),
                      (["position-bias", "--task", "kv"], "expected qa or needle, got 'kv'")):
        r = subprocess.run([os.environ["RAGFORM_BIN"], *argv, "-m", model_path],
                           capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr == f"ragform: --task: {why}\n", r.stderr


def test_a_key_python_spells_otherwise_is_its_keyword():
    """"lambda" is a reserved word in Python: the declaration spells it lam= there, the CLI's flag
    and the server's field keep the key."""
    (o,) = [o for o in ragform._ragform.options("spotlight.select") if o["key"] == "lambda"]
    assert o["keyword"] == "lam" and o["flag"] == "--lambda"
    params = inspect.signature(ragform.spotlight.select).parameters
    assert "lam" in params and "lambda" not in params
    with pytest.raises(TypeError, match="unexpected keyword argument 'lambda'"):
        ragform.spotlight.select({"question": "q", "ctxs": [{"text": "a."}]}, vectors={},
                                 **{"lambda": 0.5})


# spotlight.select: (Python's keywords, the CLI's flags, the request's fields, Python's message,
# the CLI's message, the server's message) for the same out-of-range or unknown value.
SPOTLIGHT_REFUSALS = [
    ({"lam": 2}, ["--lambda", "2"], {"lambda": 2}, "lam: value too large: 2 (largest accepted: 1)",
     "--lambda: value too large: 2 (largest accepted: 1)", "'lambda' = 2 is outside [0, 1]"),
    ({"K": 0}, ["-K", "0"], {"K": 0}, "K: value out of range: 0 (accepted: 1 or more)",
     "-K: value out of range: 0 (accepted: 1 or more)", "'K' = 0 is outside [1, "),
    ({"k": 0}, ["-k", "0"], {"k": 0}, "k: value out of range: 0 (accepted: 1 or more)",
     "-k: value out of range: 0 (accepted: 1 or more)", "'k' = 0 is outside [1, "),
    ({"order": "best"}, ["--order", "best"], {"order": "best"},
     "order: expected doc or score, got 'best'", "--order: expected doc or score, got 'best'",
     "'order': expected doc or score, got 'best'"),
]


@pytest.fixture(scope="module")
def bare_server(ragform_bin, model_path):
    from test_remote import Served
    s = Served(ragform_bin, model_path, "--ctx", "256")
    yield s
    s.close()


@pytest.mark.parametrize("case", range(len(SPOTLIGHT_REFUSALS)))
def test_spotlight_select_refuses_alike_in_every_front_end(case, tmp_path, bare_server):
    import json
    import urllib.error
    import urllib.request
    kw, flags, fields, py_why, cli_why, http_why = SPOTLIGHT_REFUSALS[case]
    record = {"id": "q", "question": "Where?", "answers": ["x"],
              "ctxs": [{"title": "T", "text": "Here it is. There it was."}]}
    with pytest.raises(ValueError, match="^" + re.escape(py_why)):
        ragform.spotlight.select(record, vectors={}, **kw)
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "v.json").write_text("{}")
    r = subprocess.run([os.environ["RAGFORM_BIN"], "spotlight", "select", "--input",
                        str(tmp_path / "r.jsonl"), "--vectors", str(tmp_path / "v.json"), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith(f"ragform: {cli_why}"), r.stderr
    body = json.dumps({"question": "Where?", "documents": [{"text": "Here it is."}], **fields})
    req = urllib.request.Request(bare_server.url + "/rag/spotlight", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=60)
    assert e.value.code == 400
    assert http_why in json.loads(e.value.read())["error"]["message"]


def test_spotlight_select_no_special_tokens_is_special_tokens_false(cli, tmp_path):
    """The negated switch: --no-special-tokens is special_tokens=False, the flag's absence True."""
    import json
    record = {"id": "q", "question": "Where is Nessie?", "answers": ["x"],
              "ctxs": [{"title": "N", "text": "Nessie lives in Loch Ness. Tokyo is far."}]}
    vectors = {"nessie": [1.0, 0.0]}
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "v.json").write_text(json.dumps(vectors))
    for flags, special in (([], True), (["--no-special-tokens"], False)):
        want = cli("spotlight", "select", "--input", tmp_path / "r.jsonl", "--vectors",
                   tmp_path / "v.json", "--json", *flags)
        got = ragform.spotlight.select(record, vectors=vectors, special_tokens=special)
        assert got["prompt"] == want["prompt"]
        assert ("<Rel" in got["prompt"]) == special


def test_every_generate_shares_the_declaration():
    """Model.generate and OpenAIReader.generate: the declared keywords in the declared order, with
    the wrappers' own chat= (Model) and details= placed after the declared ones they follow."""
    keys = [o["keyword"] for o in ragform._ragform.options("generate")]
    model = list(inspect.signature(ragform.Model.generate).parameters)
    remote = list(inspect.signature(ragform.OpenAIReader.generate).parameters)
    assert [k for k in model if k not in ("self", "prompt", "chat", "details")] == keys
    assert [k for k in remote if k not in ("self", "prompt", "details")] == keys
    assert model.index("chat") == model.index("stop") + 1
    assert remote[-1] == model[-1] == "details"
    for p in inspect.signature(ragform.OpenAIReader.generate).parameters.values():
        want = next((o["default"] for o in ragform._ragform.options("generate")
                     if o["keyword"] == p.name), p.default)
        assert p.default == want, p.name


def test_a_stop_string_is_one_value_in_every_front_end(model, model_path):
    """stop="a,b" is one stop string, as one --stop a,b is (a repeated declaration: never split)."""
    got = model.generate("Once upon a time", n_predict=8, stop="a,b", details=True)
    r = subprocess.run([os.environ["RAGFORM_BIN"], "generate", "-m", model_path, "-p",
                        "Once upon a time", "-n", "8", "--stop", "a,b", "--json"],
                       capture_output=True, text=True, check=True)
    import json
    assert json.loads(r.stdout) == got


# The verbs with an endpoint and the part of their declaration the endpoint reads: (verb, path,
# keys; None = all of them). The server's fields are read from the declaration (api_json.h
# read_declared) and described by it (/openapi.json), so their ranges and defaults are its own.
SERVED = [("spotlight.select", "/v1/rag/spotlight",
           ["K", "k", "lambda", "order", "special_tokens"]),
          ("generate", "/v1/completions", ["top_k", "top_p"]),
          ("generate", "/v1/chat/completions", ["top_k", "top_p"]),
          ("present", "/v1/rag/present", None)]


def _post(server, path, body):
    """(status, the reply's JSON) of POST `path` with `body` on `server`."""
    import json
    import urllib.error
    import urllib.request
    req = urllib.request.Request(server.url[:-len("/v1")] + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("verb, path, keys", SERVED, ids=[p for _, p, _ in SERVED])
def test_the_servers_fields_are_the_declaration(bare_server, verb, path, keys):
    """A running server's own API document (GET /openapi.json) gives each declared field the
    declaration's type, range and default: the server keeps no copy of them."""
    import json
    import urllib.request
    with urllib.request.urlopen(bare_server.url[:-len("/v1")] + "/openapi.json", timeout=60) as r:
        doc = json.loads(r.read())
    schema = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    decl = [o for o in ragform._ragform.options(verb) if keys is None or o["key"] in keys]
    assert len(decl) == len(keys or decl)
    for o in decl:
        if o["required"]:
            assert o["key"] in schema["required"], o["key"]
            continue
        f = schema["properties"][o["key"]]
        assert f["description"].startswith(o["help"]), o["key"]
        if o["min"] is not None:
            assert f["minimum"] == o["min"], o["key"]
        if o["max"] is not None:
            assert f["maximum"] == min(o["max"], 2**31 - 1), o["key"]
        if o["optional"]:
            assert "default" not in f, o["key"]
        else:
            assert f["default"] == o["default"], o["key"]


def test_the_served_spotlight_defaults_are_the_declaration(ragform_bin, model_path, tmp_path):
    """A request without K selects the declared K sentences, as the CLI and Python do."""
    import json
    from test_remote import Served
    (tmp_path / "v.json").write_text(json.dumps({"nessie": [1.0, 0.0], "loch": [0.0, 1.0]}))
    text = " ".join(f"Sentence {i} is about Nessie." for i in range(12))
    record = {"id": "q", "question": "Where is Nessie?", "answers": ["x"],
              "ctxs": [{"title": "N", "text": text}]}
    (K,) = [o["default"] for o in ragform._ragform.options("spotlight.select") if o["key"] == "K"]
    got = ragform.spotlight.select(record, vectors=str(tmp_path / "v.json"))
    assert len(got["selected"]) == K
    s = Served(ragform_bin, model_path, "--ctx", "256", "--vectors", str(tmp_path / "v.json"))
    try:
        status, reply = _post(s, "/v1/rag/spotlight",
                              {"id": "q", "question": "Where is Nessie?",
                               "documents": [{"title": "N", "text": text}]})
    finally:
        s.close()
    assert status == 200, reply
    assert [x["text"] for x in reply["selected"]] == [x["text"] for x in got["selected"]]
    assert reply["prompt"] == got["prompt"]


# The verbs with an endpoint besides spotlight select (SPOTLIGHT_REFUSALS): the same bad value in
# each front end's spelling: (a Python call, the CLI's arguments, the request (path, body), the
# exception and message Python gives, the CLI's message, the server's message). /v1/completions
# keeps the OpenAI API's max_tokens and temperature and takes top_k and top_p from generate's
# declaration, the empty nucleus refused as generate() refuses it.
SERVED_REFUSALS = {
    "generate.top_p": (lambda m, d: m.generate("Once", top_p=0),
                       ["generate", "-m", "{m}", "-p", "Once", "--top-p", "0"],
                       ("/v1/completions", {"prompt": "Once", "max_tokens": 1, "top_p": 0}),
                       ValueError, "top_p: must be above 0: an empty nucleus holds no token",
                       "--top-p: must be above 0: an empty nucleus holds no token",
                       "'top_p': must be above 0: an empty nucleus holds no token"),
    "generate.top_p_range": (lambda m, d: m.generate("Once", top_p=1.5),
                             ["generate", "-m", "{m}", "-p", "Once", "--top-p", "1.5"],
                             ("/v1/completions",
                              {"prompt": "Once", "max_tokens": 1, "top_p": 1.5}),
                             ValueError, "top_p: value too large: 1.5 (largest accepted: 1)",
                             "--top-p: value too large: 1.5 (largest accepted: 1)",
                             "'top_p' = 1.5 is outside [0, 1]"),
    "generate.top_k": (lambda m, d: m.generate("Once", top_k=-1),
                       ["generate", "-m", "{m}", "-p", "Once", "--top-k", "-1"],
                       ("/v1/completions", {"prompt": "Once", "max_tokens": 1, "top_k": -1}),
                       ValueError, "top_k: value out of range: -1 (accepted: 0 or more)",
                       "--top-k: value out of range: -1 (accepted: 0 or more)",
                       "'top_k' = -1 is outside [0, 2147483647]"),
    # present's one declared option is required: left out, each front end names it.
    "present.profile": (lambda m, d: ragform.present({"id": "a"}),
                        ["present", "--input", "{d}/r.jsonl"],
                        ("/v1/rag/present", {"record": {"id": "a"}}),
                        TypeError, "missing a required argument: 'profile'",
                        "present: missing required option --profile",
                        "'profile' must be the object of a profile file from `ragform tune`"),
}


@pytest.mark.parametrize("case", sorted(SERVED_REFUSALS))
def test_the_served_verbs_refuse_alike_in_every_front_end(case, model, model_path, tmp_path,
                                                          bare_server):
    call, argv, (path, body), exc, py_why, cli_why, http_why = SERVED_REFUSALS[case]
    with pytest.raises(exc, match="^" + re.escape(py_why)):
        call(model, tmp_path)
    (tmp_path / "r.jsonl").write_text('{"id": "a"}\n')
    r = subprocess.run([os.environ["RAGFORM_BIN"], *[a.format(d=tmp_path, m=model_path)
                                                     for a in argv]],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith(f"ragform: {cli_why}"), r.stderr
    status, reply = _post(bare_server, path, body)
    assert status == 400, reply
    assert http_why in reply["error"]["message"], reply


def test_the_openai_readers_settings_are_refused_alike(tmp_path):
    """concurrency, retries and timeout are declared once (reader/openai_reader.h) and checked by
    the reader whichever front end built it: the same value out of range is refused by the CLI's
    flag and by Python's keyword, each in its spelling, before any request is sent."""
    url = "http://127.0.0.1:9/v1"
    for key, flag, value, why in (("retries", "--retries", 101,
                                   "value too large: 101 (largest accepted: 100)"),
                                  ("concurrency", "--concurrency", 1025,
                                   "value too large: 1025 (largest accepted: 1024)")):
        with pytest.raises(ValueError, match="^" + re.escape(f"{key}: {why}")):
            ragform.OpenAIReader(url, **{key: value})
        r = subprocess.run([os.environ["RAGFORM_BIN"], "sure", "eval", "--store",
                            str(tmp_path / "s.sqlite"), "--reader", "openai", "--base-url", url,
                            flag, str(value)], capture_output=True, text=True, input="")
        assert r.returncode == 2 and r.stderr.startswith(f"ragform: {flag}: {why}"), r.stderr
