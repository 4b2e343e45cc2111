"""Model(numerics=...): whose rounding of RoPE angles and GELU the engine follows (docs/engine.md,
"Against Hugging Face transformers"). "ggml" is the default and llama.cpp's numbers;
"transformers" is the CLI's RAGFORM_NUMERICS=transformers, gives other numbers (so another run
identity) and the same ones as the CLI with that variable."""
import json
import os
import subprocess

import numpy as np
import pytest

import ragform
from conftest import shared_file

PROMPT = "Once upon a time there was a little girl who lived by the sea."


@pytest.fixture(scope="module")
def gemma():
    return str(shared_file("fixtures/models/tiny-gemma3.gguf"))


def test_the_default_is_ggml_and_transformers_rounds_otherwise(gemma):
    default = ragform.Model(gemma, threads=1)
    ggml = ragform.Model(gemma, threads=1, numerics="ggml")
    hf = ragform.Model(gemma, threads=1, numerics="transformers")
    assert (default.attention(PROMPT).heads == ggml.attention(PROMPT).heads).all()
    a, b = ggml.attention(PROMPT).heads, hf.attention(PROMPT).heads
    assert not (a == b).all() and np.abs(a - b).max() < 1e-3  # the last bits, not the model
    assert "#numerics" not in ggml.description
    assert hf.description.endswith("#numerics=transformers")


def test_the_same_numbers_as_the_cli_with_the_variable(gemma, ragform_bin):
    m = ragform.Model(gemma, threads=1, numerics="transformers")
    env = dict(os.environ, RAGFORM_NUMERICS="transformers", RAGFORM_PROGRESS="never")
    r = subprocess.run([ragform_bin, "attention", "-m", gemma, "-p", PROMPT, "-t", "1", "--json"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert abs(cli["abs"] - m.attention(PROMPT).abs) < 1e-8


def test_an_unknown_value_is_a_value_error_naming_the_keyword(gemma):
    with pytest.raises(ValueError, match="numerics: expected ggml or transformers, got 'exact'"):
        ragform.Model(gemma, numerics="exact")
