"""ragform.Model's keyword arguments come from the one declaration of the reader and engine
settings (src/reader/engine_settings.h) that the CLI's flags come from: every declared setting is
a keyword, the CPU tier and the load mode (the CLI's RAGFORM_CPU and RAGFORM_LOAD) included, and
ctx=None is the --ctx default of the same function."""
import inspect

import pytest

import ragform
from ragform import _ragform
from conftest import shared_file


def test_every_declared_setting_is_a_model_keyword():
    settings = _ragform._engine_settings()
    keys = [s["key"] for s in settings]
    assert {"ctx", "kv", "threads", "f16_gemm", "prefix_cache", "prefix_cache_mb", "cpu",
            "load"} <= set(keys)
    params = inspect.signature(ragform.Model.__init__).parameters
    for s in settings:
        assert s["key"] in params, s
        assert s["flag"] or s["env"], s  # and each is a CLI flag or variable
    # The extension type takes them too (the wrapper passes each one on).
    doc = _ragform._Model.__init__.__doc__
    for k in keys:
        assert f"{k}:" in doc, k


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
