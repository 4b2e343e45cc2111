"""ragform for Python: the GGUF engine's internals as numpy arrays, and the SURE, C-NORM and
SpotlightRAG pipelines, over the same C++ library as the `ragform` command (docs/python.md).
The pipelines take a Model, an OpenAIReader or any Python object with generate(prompts, params)
as their reader (ragform.readers: the protocol, and adapters for transformers and vLLM).

    import ragform
    m = ragform.Model("stories260K.gguf")
    m.generate("Once upon a time", n_predict=12)   # the continuation, as `ragform generate`
    a = m.attention("Once upon a time")           # .heads [heads, positions], .mean, .abs

Errors raise ValueError (bad input, including text that is not valid UTF-8: a str with a lone
surrogate), OSError (files) or RuntimeError (anything else) with the message the CLI prints after
"ragform: ".
"""

import os as _os
import resource as _resource

# OpenBLAS (FAISS's BLAS, loaded with _ragform) starts a worker per core as it loads, each taking a
# 128 MB buffer of address space; under an address-space limit one that cannot get it spins and
# the interpreter never exits (issue 40, pass 15; the CLI restarts itself for the same reason,
# src/cli/main.cpp). The library reads the variable only as it loads: set before the import, and
# only under such a limit (an OpenBLAS that numpy loaded first is already started).
if _resource.getrlimit(_resource.RLIMIT_AS)[0] != _resource.RLIM_INFINITY:
    _os.environ["OPENBLAS_NUM_THREADS"] = "1"

from . import _options, _ragform  # noqa: E402
from ._ragform import Attention, Reader  # noqa: E402
from ._text import check_methods as _check_methods
from ._text import _is_bool
from ._text import fspath as _fspath

__version__ = _ragform.__version__

__all__ = ["Model", "OpenAIReader", "Encoder", "Reader", "Attention", "RunStore",
           "cnorm", "sure", "spotlight", "readers", "present"]


# generate()'s keywords, their order and defaults: declared once with `ragform generate`'s flags
# (src/reader/generate_options.h; ragform._ragform.options("generate")). details= is the
# wrapper's own (--json's dict), and Model's chat= (a second reader of the file in chat mode).
_GENERATE = _options.signature("generate", first=["self", "prompt"],
                               after={"ignore_eos": [("details", False)]})
_MODEL_GENERATE = _options.signature("generate", first=["self", "prompt"],
                                     after={"stop": [("chat", None)],
                                            "ignore_eos": [("details", False)]})


def _flag(name, value, none=False):
    """`value` as a bool flag: True or False (numpy's too), or None where `none` allows it; any
    other object is a TypeError (issue 40, eighth pass: details='no' and chat='false' were read
    by their truthiness, as no other flag is)."""
    if value is None and none:
        return None
    if _is_bool(value):
        return bool(value)
    raise TypeError(f"{name}: expected True or False{' or None' if none else ''}, "
                    f"got {type(value).__name__}")


def _generate(reader, a):
    """One generation of `reader` for the bound arguments `a` of a generate() signature."""
    details = _flag("details", a.pop("details"))
    g = reader._generate(a.pop("prompt"), **a)
    return g if details else g["text"]


# ragform.Model's keyword arguments, their order and defaults: the reader and engine settings
# declared once with the CLI's flags (src/reader/engine_settings.h; ragform._ragform.options("model")).
_MODEL = _options.signature("model", first=["self", "path"])
# Model.logits' keyword (src/reader/prompt_logits.h; ragform._ragform.options("logits")).
_LOGITS = _options.signature("logits", first=["self", "prompt"])


class Model(_ragform._Model):
    __doc__ = f"""A GGUF model on ragform's own engine (the reader `ragform generate -m` opens).

    {_options.signature_line("Model", _MODEL, indent=4)}

    threads: the size of this model's own thread pool (0 = all cores). ctx: tokens per sequence;
    None = 4096, or the model's training context when that is smaller (the CLI's --ctx default).
    kv: KV cache type, "f32" or "f16". chat: prompts become the user turn of the model's chat
    template (system: its system message; chat_template: the format's family, "chatml", "llama3",
    "gemma", ..., for a file without a template; "" = the file's). truncate: a prompt longer than ctx is an error
    ("error") or keeps BOS and its end ("left"). f16_gemm: "exact" or "int16" (approximate).
    prefix_cache: reuse the KV rows of prompt prefixes prefilled before (the same numbers; the
    CLI's --prefix-cache), bounded by prefix_cache_mb MiB (0 = an eighth of the memory the
    process may use, at most 2048).
    `prefill` and `prefix_cache_stats` tell how much prompt work it saved. cpu: "scalar", "avx2"
    or "avx512" caps the kernels' CPU tier (the CLI's RAGFORM_CPU; None = what the CPU has).
    load: "mmap" keeps the file mapped, "memory" reads it (the CLI's RAGFORM_LOAD; None = read
    files of 64 MB+ into huge pages where there is room). numerics: "ggml" (llama.cpp's RoPE
    angles and F16 GELU table) or "transformers" (Hugging Face transformers' float RoPE angles and
    exact tanh GELU, to compare with it on the same float weights; the CLI's RAGFORM_NUMERICS).
    Each is the CLI's flag or variable of the same name, with its default and range
    (ragform._ragform.options("model") lists them); a value of the wrong type is a TypeError, one
    out of its range or set a ValueError, both naming the keyword.

    Methods release the GIL for every forward pass: Models in different Python threads run at
    the same time; calls on one Model are serialised.
    """

    def __init__(self, *args, **kwargs):
        a = _options.bind(_MODEL, (self,) + args, kwargs)  # a missing or unknown one: TypeError
        del a["self"]
        path = _fspath(a.pop("path"))
        if a["ctx"] is None:
            a["ctx"] = _ragform._default_context(path)
        super().__init__(path, **a)
        self.ctx, self.kv, self.chat, self.system = a["ctx"], a["kv"], a["chat"], a["system"]
        self._args = {k: v for k, v in a.items() if k not in ("chat", "system")}
        self._chat_model = None

    __init__.__signature__ = _MODEL

    def __repr__(self):
        # A Model whose constructor raised has no engine behind it (its C++ side was never built,
        # and reading it would crash the interpreter): say so instead, e.g. in a traceback's locals.
        if "ctx" not in self.__dict__:
            return "<ragform.Model (not opened)>"
        return f"<ragform.Model {self.description} ctx={self.ctx} chat={self.chat_mode}>"

    def _for_chat(self, chat):
        chat = _flag("chat", chat, none=True)
        if chat is None or chat == self.chat:
            return self
        if not chat:
            raise ValueError("generate: chat=False on a Model opened with chat=True")
        if self._chat_model is None:  # a second reader of the same file, in chat mode
            self._chat_model = Model(self.path, chat=True, system=self.system, **self._args)
        self._copy_steering_to(self._chat_model)  # the steering set on this Model, as it is now
        return self._chat_model

    def generate(self, *args, **kwargs):
        """The continuation of `prompt` (not prompt + continuation), as `ragform generate`'s text:
        greedy unless temp > 0 (then top_k / top_p / seed sampling). stop: a string or list of
        strings to stop before. chat=True: the prompt is the user turn of the model's chat
        template (None: as the Model was opened). details=True returns the dict of
        `ragform generate --json`: {text, ids, finish_reason, prompt_tokens}. chat and details
        are True or False (chat also None), any other object a TypeError. The keywords but
        chat and details are the CLI's flags of the same meaning, declared once in
        src/reader/generate_options.h (ragform._ragform.options("generate"))."""
        a = _options.bind(_MODEL_GENERATE, (self,) + args, kwargs)
        return _generate(a.pop("self")._for_chat(a.pop("chat")), a)

    generate.__signature__ = _MODEL_GENERATE

    def logits(self, *args, **kwargs):
        """Raw logits of the prompt's tokens: numpy float32 [1, n_vocab] for positions="last",
        [n_tokens, n_vocab] for "all" (what `ragform logits` writes; the keyword is declared once
        with its --positions, src/reader/prompt_logits.h)."""
        a = _options.bind(_LOGITS, (self,) + args, kwargs)
        del a["self"]
        return self._logits(a.pop("prompt"), self.kv, **a)

    logits.__signature__ = _LOGITS

    def embed(self, *args, **kwargs):
        """Pooled embeddings belong to encoder models: use ragform.Encoder(path).embed(texts)."""
        raise NotImplementedError(
            "embed: a generative model has no pooled embeddings; open a BERT-family GGUF with "
            "ragform.Encoder(path) (or use Model.hidden for hidden states)")


# OpenAIReader's keyword arguments, declared once with the CLI's --concurrency, --retries and
# --timeout (src/reader/openai_reader.h; ragform._ragform.options("openai_reader")).
_OPENAI = _options.signature("openai_reader", first=["self"])


class OpenAIReader(_ragform.OpenAIReader):
    __doc__ = f"""A reader over an OpenAI-compatible server (llama-server, vLLM, `ragform serve`).

    {_options.signature_line("OpenAIReader", _OPENAI, indent=4)}

    base_url may list several servers of one model, comma-separated: requests go to the least
    busy, a server that fails is skipped while another answers, and concurrency is per server
    (docs/scale.md).

    generate() always works; score() where the server returns log-probs. attention() works
    against `ragform serve`, which exposes /v1/attention: it returns the Attention Model.attention
    gives for the same prompt. Other servers (llama-server, vLLM, Ollama, hosted APIs) expose no
    attention: attention() raises NotImplementedError ("attention is not supported by this
    server") without sending the prompt. hidden() always raises NotImplementedError.
    """

    def __init__(self, *args, **kwargs):
        a = _options.bind(_OPENAI, (self,) + args, kwargs)  # a missing or unknown one: TypeError
        del a["self"]
        super().__init__(**a)

    __init__.__signature__ = _OPENAI

    def generate(self, *args, **kwargs):
        """The continuation of `prompt` (see Model.generate)."""
        a = _options.bind(_GENERATE, (self,) + args, kwargs)
        return _generate(a.pop("self"), a)

    generate.__signature__ = _GENERATE


class RunStore:
    """A run store (the SQLite file of `--store`), read-only: runs() and rows(run=None) as lists
    of dicts (the columns of the runs / results tables, JSON columns decoded), counts(run), and
    to_pandas(run=None) when pandas is importable."""

    def __init__(self, path):
        self._s = _ragform._RunStore(_fspath(path))
        self.path = self._s.path

    def __repr__(self):
        return f"<ragform.RunStore {self.path}>"

    def runs(self):
        """Every run: id, created_at, pipeline, config, tool_version, model_path, model_sha256,
        reader, chat_mode, seed, config_key."""
        return self._s.runs()

    def rows(self, run=None):
        """Rows of one run (every run when None) in insertion order: run, instance, variant,
        status, error, prompt, prompt_tokens, output, correct, scores, timings_ms, extra."""
        return self._s.rows(run)

    def counts(self, run):
        """Tallies of one run: rows, ok, unmeasured, correct, wrong, ungraded."""
        return self._s.counts(run)

    def to_pandas(self, run=None):
        """rows(run) as a pandas DataFrame; scores and timings become columns score_<name> and
        ms_<name>. Raises ImportError when pandas is not installed."""
        import pandas as pd
        flat = []
        for r in self.rows(run):
            r = dict(r)
            for k, v in r.pop("scores").items():
                r["score_" + k] = v
            for k, v in r.pop("timings_ms").items():
                r["ms_" + k] = v
            flat.append(r)
        return pd.DataFrame(flat)


# ragform.Encoder's keyword arguments: the encoder settings declared once with `ragform embed`'s
# flags (src/reader/encoder_settings.h; ragform._ragform.options("encoder")).
_ENCODER = _options.signature("encoder", first=["self", "path"])


class Encoder(_ragform._Encoder):
    __doc__ = f"""A BERT-family encoder (BGE, MiniLM, NLI cross-encoders) on ragform's engine
    (the encoder `ragform embed -m` opens; docs/encoders.md).

    {_options.signature_line("Encoder", _ENCODER, indent=4)}

    threads: the size of this encoder's own thread pool (0 = all cores). truncate: an input
    longer than max_tokens loses word-pieces at its end ("right") or is an error ("error").
    max_tokens: the longest input in tokens (0 = the length the model was trained for:
    sentence-transformers' max_seq_length when the file records it, else its position table).
    batch_tokens: tokens per forward pass. cpu, load, numerics and f16_gemm are Model's machine
    settings (the CLI's RAGFORM_* variables). Each is the CLI's flag or variable of the same name,
    with its default and range (ragform._ragform.options("encoder") lists them); a value of the
    wrong type is a TypeError, one out of its range or set a ValueError, both naming the keyword.
    """

    def __init__(self, *args, **kwargs):
        a = _options.bind(_ENCODER, (self,) + args, kwargs)  # a missing or unknown one: TypeError
        del a["self"]
        super().__init__(_fspath(a.pop("path")), **a)

    __init__.__signature__ = _ENCODER


# Text arguments that cannot cross into C++ (lone surrogates) raise ValueError naming them.
for _cls in (_ragform.Reader, _ragform._Model, _ragform.OpenAIReader, _ragform._Encoder, Model,
             OpenAIReader, Encoder, RunStore):
    _check_methods(_cls)

from . import cnorm, readers, spotlight, sure  # noqa: E402  (they use Model / RunStore)
from ._present import present  # noqa: E402  (a tuned profile applied: `ragform present`)
from .tune import tune  # noqa: E402,F811  (the search: `ragform tune`; rebinds the submodule name)
