"""ragform.Model's keyword arguments come from the one declaration of the reader and engine
settings (src/reader/engine_settings.h) that the CLI's flags come from: every declared setting is
a keyword with the declared default, in the declared order, the CPU tier and the load mode (the
CLI's RAGFORM_CPU and RAGFORM_LOAD) included; ctx=None is the --ctx default of the same function;
the library checks the values once, and the same bad value is refused by Model (naming the
keyword) and by the CLI (naming the flag or the variable) with the same words."""
import inspect

import pytest

import ragform
from ragform import _ragform
from conftest import shared_file


def test_every_declared_setting_is_a_model_keyword():
    settings = _ragform.options("model")
    keys = [s["key"] for s in settings]
    assert {"ctx", "kv", "threads", "f16_gemm", "prefix_cache", "prefix_cache_mb", "cpu",
            "load"} <= set(keys)
    params = inspect.signature(ragform.Model.__init__).parameters
    # path first, then every setting in the declared order, each positional as before
    assert list(params) == ["self", "path"] + keys
    for s in settings:
        p = params[s["key"]]
        assert p.default == s["default"], s
        assert p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD, s
        assert s["flag"] or s["env"], s  # and each is a CLI flag or variable
    # The defaults Model has always had, now the declaration's.
    assert {k: params[k].default for k in keys}.items() >= dict(
        threads=0, ctx=None, kv="f32", chat=False, system="", truncate="error",
        f16_gemm="exact", prefix_cache=True, prefix_cache_mb=0, cpu=None, load=None).items()
    assert "Model(path, threads=0, ctx=None, kv='f32'" in ragform.Model.__doc__
    # The extension type takes the same keywords and no other.
    with pytest.raises(TypeError, match="unexpected keyword argument 'kv_type'"):
        _ragform._Model("x.gguf", kv_type="f16")


def test_the_same_bad_value_is_refused_by_model_and_by_the_cli(model_path, ragform_bin):
    """One check, in the library: Model names the keyword, the CLI the flag or the variable."""
    import os
    import subprocess

    def cli(*flags, env=None):
        r = subprocess.run([ragform_bin, "generate", "-m", model_path, "-p", "x", "-n", "1",
                            *flags], capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})))
        assert r.returncode == 2, r.stderr
        return r.stderr.removeprefix("ragform: ").strip()

    for key, flag, value in [("kv", "--kv", "f8"), ("truncate", "--truncate", "right"),
                             ("f16_gemm", "--f16-gemm", "fast"),
                             ("prefix_cache_mb", "--prefix-cache-mb", 2000000)]:
        with pytest.raises(ValueError) as e:
            ragform.Model(model_path, **{key: value})
        py = str(e.value)
        assert py.startswith(key + ": "), py
        assert cli(flag, str(value)) == flag + py[len(key):]
    for key, var, value in [("load", "RAGFORM_LOAD", "disk"), ("cpu", "RAGFORM_CPU", "avx9000")]:
        with pytest.raises(ValueError) as e:
            ragform.Model(model_path, **{key: value})
        py = str(e.value)
        assert cli(env={var: value}) == var + py[len(key):]
    with pytest.raises(TypeError, match="^threads: expected an integer"):
        ragform.Model(model_path, threads="2")
    # The chat format's name, checked whether chat is on or not (the CLI wants --chat with it).
    with pytest.raises(ValueError) as e:
        ragform.Model(model_path, chat_template="zephyr")
    py = str(e.value)
    assert py.startswith("chat_template: unknown chat format 'zephyr' (expected chatml, "), py
    assert cli("--chat", "--chat-template", "zephyr") == "--chat-template" + py[len("chat_template"):]


def test_chat_template_names_the_format_of_chat(model_path, ragform_bin):
    """A file without a template (the trained Gemma GGUF has none) takes chat prompts in the named
    format, as the CLI's --chat --chat-template; generate(chat=True) on a Model opened without
    chat keeps the name."""
    import json
    import subprocess
    m = ragform.Model(model_path, threads=1, chat=True, chat_template="chatml")
    assert m.chat_mode == "chatml"
    got = m.generate("Hi", n_predict=2, details=True)
    r = subprocess.run([ragform_bin, "generate", "-m", model_path, "-t", "1", "--chat",
                        "--chat-template", "chatml", "-p", "Hi", "-n", "2", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert (got["text"], got["prompt_tokens"]) == (cli["text"], cli["prompt_tokens"])
    plain = ragform.Model(model_path, threads=1, chat_template="chatml")
    assert plain.generate("Hi", n_predict=2, chat=True, details=True) == got
    # The steering set on the Model steers its chat generations too (pass 24: generate(chat=True)
    # on a Model opened without chat ran on a second reader that dropped it).
    steer = {"rule": "reallocate:0.9", "spans": [(0, 2)]}
    m.steering = steer
    plain.steering = steer
    steered = m.generate("Hi", n_predict=4, details=True)
    assert plain.generate("Hi", n_predict=4, chat=True, details=True) == steered
    plain.steering = None
    assert plain.generate("Hi", n_predict=4, chat=True, details=True) == \
        ragform.Model(model_path, threads=1, chat=True, chat_template="chatml").generate(
            "Hi", n_predict=4, details=True)


def test_default_ctx_is_the_cli_default(model_path):
    m = ragform.Model(model_path, threads=1)
    assert m.ctx == _ragform._default_context(model_path)
    train = _ragform._training_context(model_path)
    assert m.ctx == (min(4096, train) if train > 0 else 4096)


@pytest.mark.parametrize("cpu", ["scalar", "avx2"])
def test_cpu_tier_and_load_mode_give_the_same_text(model_path, cpu):
    want = ragform.Model(model_path, threads=1).generate("Once upon a time", n_predict=8)
    for load in ["mmap", "memory"]:
        m = ragform.Model(model_path, threads=1, cpu=cpu, load=load)
        assert m.generate("Once upon a time", n_predict=8) == want


def test_bad_cpu_tier_or_load_mode_is_a_value_error(model_path):
    with pytest.raises(ValueError, match="cpu"):
        ragform.Model(model_path, cpu="avx9000")
    with pytest.raises(ValueError, match="load: expected mmap or memory, got 'disk'"):
        ragform.Model(model_path, load="disk")


def test_encoder_takes_the_cpu_tier_and_load_mode():
    path = str(shared_file("fixtures/models/tiny-bert.gguf"))
    want = ragform.Encoder(path, threads=1).embed(["a short passage"])
    got = ragform.Encoder(path, threads=1, cpu="avx2", load="memory").embed(["a short passage"])
    assert (got == want).all()
    with pytest.raises(ValueError, match="load: expected mmap or memory, got 'disk'"):
        ragform.Encoder(path, load="disk")


def test_every_declared_encoder_setting_is_an_encoder_keyword(ragform_bin):
    """ragform.Encoder's keywords are the declaration `ragform embed`'s flags come from
    (src/reader/encoder_settings.h): the same defaults, and the same refusal in each front end's
    spelling."""
    settings = _ragform.options("encoder")
    keys = [s["key"] for s in settings]
    assert keys[:3] == ["threads", "cpu", "load"]  # Encoder(path, threads, cpu, load) as before
    assert {"truncate", "max_tokens", "batch_tokens"} <= set(keys)
    params = inspect.signature(ragform.Encoder.__init__).parameters
    assert list(params) == ["self", "path"] + keys
    for s in settings:
        assert params[s["key"]].default == s["default"], s
        assert s["flag"] or s["env"], s
    assert {k: params[k].default for k in keys}.items() >= dict(
        threads=0, cpu=None, load=None, truncate="right", max_tokens=0,
        batch_tokens=4096).items()
    path = str(shared_file("fixtures/models/tiny-bert.gguf"))
    with pytest.raises(ValueError, match=r"^truncate: expected right or error, got 'left'"):
        ragform.Encoder(path, truncate="left")
    with pytest.raises(ValueError, match=r"^batch_tokens: value out of range: 0"):
        ragform.Encoder(path, batch_tokens=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_len'"):
        ragform.Encoder(path, max_len=8)
    import subprocess
    r = subprocess.run([ragform_bin, "embed", "-m", path, "--file", "/dev/null", "--truncate",
                        "left"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == "ragform: --truncate: expected right or error, got 'left'\n"


def test_encoder_settings_change_what_it_encodes():
    """max_tokens cuts a long input (truncate='right') or refuses it (truncate='error'); a small
    batch_tokens gives the same vectors in more passes."""
    path = str(shared_file("fixtures/models/tiny-bert.gguf"))
    text = " ".join(["passage"] * 40)
    full = ragform.Encoder(path, threads=1).embed([text, "short"])
    cut = ragform.Encoder(path, threads=1, max_tokens=8).embed([text, "short"])
    assert not (cut[0] == full[0]).all()
    assert (cut[1] == full[1]).all()
    with pytest.raises(RuntimeError, match="tokens is longer than the model's 8"):
        ragform.Encoder(path, threads=1, max_tokens=8, truncate="error").embed([text])
    small = ragform.Encoder(path, threads=1, batch_tokens=16).embed([text, "short"])
    assert abs(small - full).max() < 1e-5
