"""The engine through Python equals the CLI on stories260K: tokens, logits, attention and ABS,
greedy text, log-probs (the issue's acceptance numbers: attention/ABS to 1e-5, log-probs to
1e-4, text exactly)."""
import numpy as np
import pytest

PROMPTS = ["Once upon a time, there was a little girl named Lily.",
           "Tom and his dog went to the park. They"]


@pytest.mark.parametrize("p", PROMPTS)
def test_tokens_equal_cli(model, model_path, cli, p):
    want = cli("tokenize", "-m", model_path, "--text", p, "--no-special", "--json")
    assert model.tokenize(p) == want["ids"]
    assert model.prompt_tokens(p) == want["ids"]
    assert [model.token_piece(i) for i in want["ids"]] == want["pieces"]
    no_bos = cli("tokenize", "-m", model_path, "--text", p, "--no-special", "--no-bos", "--json")
    assert model.tokenize(p, bos=False) == no_bos["ids"]
    assert model.detokenize(model.tokenize(p, bos=False)) == p


@pytest.mark.parametrize("p", PROMPTS)
@pytest.mark.parametrize("layer,query", [(-1, -1), (0, -2)])
def test_attention_equals_cli(model, model_path, cli, p, layer, query):
    want = cli("attention", "-m", model_path, "-p", p, "--layer", layer, "--query", query,
               "--json")
    a = model.attention(p, layer=layer, query=query)
    assert a.layer == want["layer"] and a.query_position == want["query_position"]
    assert a.mean.dtype == np.float32 and a.heads.dtype == np.float32
    assert a.heads.shape == (len(want["heads"]), len(want["mean"]))
    np.testing.assert_allclose(a.mean, want["mean"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(a.heads, np.array(want["heads"]), rtol=0, atol=1e-5)
    assert abs(a.abs - want["abs"]) <= 1e-5
    assert a.ids == want["ids"]
    # ABS = 1 - 2|mu - 0.5| of the mean row, mu its centroid over normalised positions (4.2),
    # computed here independently of the C++ code.
    n = len(a.mean)
    mu = float(np.sum(a.mean / a.mean.sum() * np.arange(n) / (n - 1)))
    assert abs(a.abs - (1 - 2 * abs(mu - 0.5))) <= 1e-5
    # The arrays are views of the engine's buffers (no copy): numpy does not own the memory.
    assert not a.mean.flags.owndata and not a.heads.flags.owndata


@pytest.mark.parametrize("p", PROMPTS)
def test_generate_equals_cli(model, model_path, cli, p):
    want = cli("generate", "-m", model_path, "-p", p, "-n", 12, "--json")
    assert model.generate(p, n_predict=12) == want["text"]
    d = model.generate(p, n_predict=12, details=True)
    assert d["ids"] == want["ids"] and d["finish_reason"] == want["finish_reason"]
    text = cli("generate", "-m", model_path, "-p", p, "-n", 12, json_out=False)
    assert text == want["text"] + "\n"


def test_generate_sampling_and_stop_equal_cli(model, model_path, cli):
    p = PROMPTS[0]
    want = cli("generate", "-m", model_path, "-p", p, "-n", 16, "--temp", 0.8, "--seed", 7,
               "--json")
    assert model.generate(p, n_predict=16, temp=0.8, seed=7) == want["text"]
    want = cli("generate", "-m", model_path, "-p", p, "-n", 30, "--stop", ".", "--json")
    assert model.generate(p, n_predict=30, stop=".") == want["text"]


@pytest.mark.parametrize("p,c", [(PROMPTS[0], " She loved to play outside."),
                                 (PROMPTS[1], "")])
def test_score_equals_cli(model, model_path, cli, p, c):
    args = ["score", "-m", model_path, "-p", p, "--json"] + (["-c", c] if c else [])
    want = cli(*args)
    lp = model.score(p, c)
    assert lp.dtype == np.float64
    np.testing.assert_allclose(lp, [t["logprob"] for t in want["tokens"]], rtol=0, atol=1e-4)
    d = model.score_details(p, c)
    assert [t["id"] for t in d["tokens"]] == [t["id"] for t in want["tokens"]]
    assert d["prompt_tokens"] == want["prompt_tokens"]
    assert abs(d["sum"] - want["sum"]) <= 1e-4


@pytest.mark.parametrize("positions", ["last", "all"])
def test_logits_equal_cli(model, model_path, cli, tmp_path, positions):
    p = PROMPTS[1]
    out = tmp_path / "logits.f32"
    cli("logits", "-m", model_path, "-p", p, "--positions", positions, "-o", out, json_out=False)
    want = np.fromfile(out, dtype="<f4").reshape(-1, model.n_vocab)
    got = model.logits(p, positions=positions)
    assert got.dtype == np.float32
    assert got.shape == (1 if positions == "last" else len(model.tokenize(p)), model.n_vocab)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_hidden_and_log_softmax_agree(model):
    p = PROMPTS[0]
    h = model.hidden(p, model.n_layer)
    assert h.shape == (len(model.tokenize(p)), model.n_embd) and h.dtype == np.float32
    # score() of the prompt's own tokens is the log-softmax of logits(positions="all") at the
    # next token: an independent check of both taps.
    lg = model.logits(p, positions="all").astype(np.float64)
    ids = model.tokenize(p)
    ls = lg - lg.max(axis=1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(axis=1, keepdims=True))
    want = [ls[i, ids[i + 1]] for i in range(len(ids) - 1)]
    np.testing.assert_allclose(model.score(p), want, rtol=0, atol=1e-4)


def test_reader_properties(model, model_path):
    assert model.capabilities == {"generate": True, "score": True, "attention": True,
                                  "hidden": True}
    assert model.description.startswith("native:stories260K.gguf")
    assert model.chat_mode == "raw"
    assert model.count_tokens(PROMPTS[0]) == len(model.tokenize(PROMPTS[0]))


def test_encoder_embed_equals_cli(cli, tmp_path):
    from conftest import shared_file
    import ragform
    path = str(shared_file("fixtures/models/tiny-bert.gguf"))
    texts = ["a small test passage", "Another one, a little longer than the first."]
    enc = ragform.Encoder(path, threads=1)
    got = enc.embed(texts)
    assert got.shape[0] == 2 and got.dtype == np.float32
    for i, t in enumerate(texts):
        f = tmp_path / f"t{i}.txt"
        f.write_text(t)
        want = cli("embed", "-m", path, "-f", f, "--json")
        np.testing.assert_allclose(got[i], want["embedding"], rtol=0, atol=1e-5)
        want = cli("embed", "-m", path, "-f", f, "--pooling", "cls", "--normalize", "--json")
        np.testing.assert_allclose(enc.embed([t], pooling="cls", normalize=True)[0],
                                   want["embedding"], rtol=0, atol=1e-6)


def test_generate_chat_equals_cli(cli):
    from conftest import shared_file
    import ragform
    path = str(shared_file("fixtures/models/tiny-llama31.gguf"))
    m = ragform.Model(path, threads=1)
    want = cli("generate", "-m", path, "--chat", "-p", "hi", "-n", 4, "--json")
    raw = cli("generate", "-m", path, "-p", "hi", "-n", 4, "--json")
    assert m.generate("hi", n_predict=4, chat=True) == want["text"]  # a second, chat reader
    assert m.generate("hi", n_predict=4) == raw["text"]
    assert want["prompt_tokens"] > raw["prompt_tokens"]  # the template's tokens


def test_chat_without_template_is_the_cli_error(model, model_path, ragform_bin):
    import subprocess
    r = subprocess.run([ragform_bin, "generate", "-m", model_path, "--chat", "-p", "x"],
                       capture_output=True, text=True)
    with pytest.raises(RuntimeError) as e:
        model.generate("x", chat=True)
    assert "ragform: " + str(e.value) == r.stderr.strip().splitlines()[-1]


def test_prefix_cache_saves_prompt_work_and_changes_no_number(model_path):
    import ragform
    p = PROMPTS[0] + " She liked to play with her ball in the garden."
    on = ragform.Model(model_path, ctx=256)
    off = ragform.Model(model_path, ctx=256, prefix_cache=False)
    got_on = [on.generate(p, n_predict=8) for _ in range(2)]
    got_off = [off.generate(p, n_predict=8) for _ in range(2)]
    assert got_on == got_off  # the cached rows are the same numbers
    n = len(on.prompt_tokens(p))
    assert on.prefill["submitted"] == off.prefill["submitted"] == 2 * n
    assert off.prefill["computed"] == 2 * n
    assert on.prefill["computed"] <= n + 1  # the second prompt computes at most its last token
    stats = on.prefix_cache_stats
    assert stats["hits"] >= 1 and stats["entries"] >= 1
    assert 0 < stats["bytes"] <= stats["max_bytes"]
    assert off.prefix_cache_stats is None
    assert ragform.Model(model_path, ctx=64, prefix_cache_mb=1).prefix_cache_stats[
        "max_bytes"] == 1 << 20
    with pytest.raises(ValueError, match="prefix_cache_mb"):
        ragform.Model(model_path, ctx=64, prefix_cache_mb=-1)


def test_attention_pieces_of_a_split_utf8_character_are_text(cli):
    # Byte-level BPE splits rare characters into byte tokens; their pieces are partial UTF-8 and
    # read as U+FFFD, the CLI's --json rendering, instead of raising on the attribute.
    from conftest import shared_file
    import ragform
    path = str(shared_file("fixtures/models/tiny-qwen2.gguf"))
    text = "ꙮ 𝔘𝔫 𓀀"
    want = cli("tokenize", "-m", path, "--text", text, "--json")
    assert any("\ufffd" in p for p in want["pieces"])  # the case under test
    a = ragform.Model(path, threads=1).attention(text)
    assert a.pieces[1:] == want["pieces"] or a.pieces == want["pieces"]
    assert len(a.pieces) == len(a.ids)


def test_attention_keywords_are_the_declared_layer_and_query(model, model_path, ragform_bin):
    """Model.attention's layer and query are `ragform attention`'s --layer and --query, declared
    once (cnorm's RelevanceRequest, options("bias.document_relevance")): the same defaults, and
    the same value refused by both front ends."""
    import subprocess
    from ragform import _ragform
    decl = {o["key"]: o for o in _ragform.options("bias.document_relevance")}
    p = PROMPTS[0]
    a = model.attention(p)
    b = model.attention(p, layer=decl["layer"]["default"], query=decl["query"]["default"])
    assert (a.layer, a.query_position) == (b.layer, b.query_position)
    np.testing.assert_array_equal(a.mean, b.mean)
    with pytest.raises(ValueError, match=r"^layer: "):
        model.attention(p, layer=2**31)
    r = subprocess.run([ragform_bin, "attention", "-m", model_path, "-p", p, "--layer",
                        str(2**31)], capture_output=True, text=True)
    assert r.returncode == 2 and "--layer" in r.stderr, r.stderr
