"""Bad input raises the mapped Python exception with the CLI's one-line message (what the CLI
prints after "ragform: "), and the interpreter survives: ValueError for bad input, OSError (with
errno: FileNotFoundError, ...) for files, RuntimeError otherwise."""
import json
import os
import subprocess

import pytest

import ragform
from conftest import shared_file


def cli_error(ragform_bin, *args):
    r = subprocess.run([ragform_bin, *map(str, args)], capture_output=True, text=True)
    assert r.returncode != 0
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("ragform: ")
    return r.returncode, line[len("ragform: "):]


def test_missing_model_is_file_not_found_with_cli_message(ragform_bin, tmp_path):
    path = tmp_path / "nope.gguf"
    _, msg = cli_error(ragform_bin, "generate", "-m", path, "-p", "x")
    with pytest.raises(FileNotFoundError) as e:
        ragform.Model(path)
    assert e.value.strerror == msg and e.value.errno == 2
    with pytest.raises(IsADirectoryError):
        ragform.Model(tmp_path)


def test_not_a_gguf_is_runtime_error_with_cli_message(ragform_bin, tmp_path):
    path = tmp_path / "bad.gguf"
    path.write_bytes(b"GGUF but not really" * 4)
    code, msg = cli_error(ragform_bin, "generate", "-m", path, "-p", "x")
    assert code == 1
    with pytest.raises(RuntimeError) as e:
        ragform.Model(path)
    assert str(e.value) == msg


def test_bad_arguments_are_value_errors(model, model_path):
    with pytest.raises(ValueError, match="^kv: expected f32 or f16, got 'f8'$"):
        ragform.Model(model_path, kv="f8")
    with pytest.raises(ValueError, match="truncate"):
        ragform.Model(model_path, truncate="right")
    with pytest.raises(ValueError, match="positions: expected last or all"):
        model.logits("x", positions="first")
    with pytest.raises(ValueError, match="out of range"):
        model.detokenize([model.n_vocab])
    with pytest.raises(ValueError, match="n_predict"):
        model.generate("x", n_predict=-1)
    with pytest.raises(ValueError, match="expected mean, per-head"):
        ragform.cnorm.calibrate(model, [], heads="max", progress=False)
    with pytest.raises(ValueError, match="record 1"):
        ragform.sure.perturb({"no": "fields"})
    with pytest.raises(ValueError, match="exactly one of vectors= or encoder="):
        ragform.spotlight.select({"question": "q", "answers": ["a"], "ctxs": []})
    # No word vectors at all: refused, as the CLI refuses an empty --vectors file.
    with pytest.raises(ValueError, match="vectors: expected a non-empty"):
        ragform.spotlight.select({"question": "q", "answers": ["a"], "ctxs": [{"text": "a."}]},
                                 vectors={})


def test_library_parse_errors_are_value_errors(model, ragform_bin, tmp_path, nq_records):
    # Parsers below the front ends that throw the plain ragform::Error (exit code 1 in the CLI):
    # from Python the argument is bad input.
    inp = tmp_path / "nq.jsonl"
    inp.write_text(json.dumps(nq_records[0]) + "\n")
    # A bad date is a bad option (exit 2), named as each front end spells it: --cutoff, cutoff.
    code, msg = cli_error(ragform_bin, "sure", "perturb", "--input", inp, "--cutoff", "2023-13-01")
    with pytest.raises(ValueError) as e:
        ragform.sure.perturb(nq_records[0], cutoff="2023-13-01")
    assert code == 2 and "--" + str(e.value) == msg
    assert msg == "--cutoff: expected a date YYYY-MM-DD, got '2023-13-01'"
    enc = ragform.Encoder(str(shared_file("fixtures/models/tiny-bert.gguf")), threads=1)
    with pytest.raises(ValueError, match="^pooling: unknown pooling 'max'"):
        enc.embed(["x"], pooling="max")
    with pytest.raises(ValueError, match="^kv: expected f32 or f16, got 'f8'$"):
        model._logits("x", "f8")
    with pytest.raises(ValueError, match="token_piece: token id -1 out of range"):
        model.token_piece(-1)


def test_each_error_class(model, tmp_path):
    # ValueError: bad input; OSError (its errno subclass): files; RuntimeError: the rest.
    with pytest.raises(ValueError):
        model.generate("x", n_predict=-1)
    with pytest.raises(FileNotFoundError):
        ragform.Encoder(str(tmp_path / "none.gguf"))
    with pytest.raises(FileNotFoundError):
        ragform.sure.evaluate(model, [], prompts=str(tmp_path / "no-prompts"), progress=False)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(RuntimeError) as e:
        ragform.Encoder(str(bad))
    assert not isinstance(e.value, (ValueError, OSError))


def test_engine_errors_equal_cli(model, model_path, ragform_bin):
    for args, call in [(("--layer", 99), lambda: model.attention("Once upon", layer=99)),
                       (("--query", 50), lambda: model.attention("Once upon", query=50))]:
        code, msg = cli_error(ragform_bin, "attention", "-m", model_path, "-p", "Once upon",
                              *args)
        with pytest.raises(ValueError if code == 2 else RuntimeError) as e:
            call()
        assert str(e.value) == msg
    long = "word " * 5000
    code, msg = cli_error(ragform_bin, "generate", "-m", model_path, "-p", long, "-n", 1)
    with pytest.raises(RuntimeError) as e:
        model.generate(long, n_predict=1)
    assert str(e.value) == msg and code == 1


def test_store_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        ragform.RunStore(tmp_path / "none.sqlite")
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not sqlite")
    with pytest.raises(RuntimeError, match="bad.sqlite"):
        ragform.RunStore(bad)


def test_remote_reader_without_attention(model):
    r = ragform.OpenAIReader("http://127.0.0.1:9", model="m", retries=0, timeout=1)
    assert r.capabilities["attention"] is False
    with pytest.raises(NotImplementedError):
        r.attention("x")
    with pytest.raises(RuntimeError):  # nothing listens on port 9
        r.generate("x", n_predict=1)
    assert os.getpid() > 0 and model.generate("Once", n_predict=2) is not None


def test_a_model_whose_constructor_failed_has_a_repr(model_path):
    """pytest prints a failed constructor's locals: repr() of the half-built Model must not reach
    its engine, which was never built (that crashed the interpreter)."""
    m = ragform.Model.__new__(ragform.Model)
    with pytest.raises(RuntimeError, match="no recognised chat template"):
        m.__init__(model_path, chat=True)  # stories260K has none
    assert repr(m) == "<ragform.Model (not opened)>"
