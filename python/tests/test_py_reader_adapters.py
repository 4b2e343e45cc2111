"""The transformers and vLLM adapters (ragform.readers) without either library: numpy stand-ins
for torch, a causal LM, its tokenizer, vllm.LLM and SamplingParams, passed through the adapters'
torch= / sampling_params= parameters and driven through the reader protocol. They check the
adapters' own logic — which logits, rows and layers they read, left padding, seeds, stop and
finish rules, the prompt/continuation split — against values computed here from the stand-ins'
formulas; whether the real libraries behave as the stand-ins do is for a GPU machine to tell."""
import contextlib
import types

import numpy as np
import pytest

import ragform

# ---------------------------------------------------------------- torch and transformers stand-ins


class T(np.ndarray):
    """A numpy array with the few tensor methods the adapter calls."""

    def float(self):
        return self.astype(np.float32).view(T)

    def cpu(self):
        return self

    def numpy(self):
        return np.asarray(self)

    def to(self, device):
        assert device == "fake:0"  # the adapter moves inputs to the model's device
        return self

    def sum(self, dim=None, **kw):
        return np.asarray(self).sum(axis=dim, **kw).view(T)


def tensor(x, device=None):
    if device is not None:
        assert device == "fake:0"
    return np.array(x).view(T)


fake_torch = types.SimpleNamespace(
    no_grad=contextlib.nullcontext, tensor=tensor,
    manual_seed=lambda s: fake_torch.seeds.append(s), seeds=[])

VOCAB = ["<pad>", "<s>", "</s>", "a", "b", "c", "d"]
PAD, BOS, EOS = 0, 1, 2
N_LAYER, N_HEAD = 3, 2


class Tokenizer:
    eos_token_id, eos_token = EOS, "</s>"

    def __init__(self):
        self.pad_token_id = None
        self.padding_side = "right"

    @property
    def pad_token(self):
        return VOCAB[self.pad_token_id] if self.pad_token_id is not None else None

    @pad_token.setter
    def pad_token(self, tok):
        self.pad_token_id = VOCAB.index(tok)

    def encode(self, text):
        return [BOS] + [VOCAB.index(w) for w in text.split()]

    def __call__(self, text, return_tensors=None, padding=False, return_offsets_mapping=False):
        if isinstance(text, list):
            rows = [self.encode(t) for t in text]
            width = max(map(len, rows))
            pad = [[self.pad_token_id] * (width - len(r)) for r in rows]
            left = self.padding_side == "left"
            ids = [p + r if left else r + p for r, p in zip(rows, pad)]
            mask = [[0] * len(p) + [1] * len(r) if left else [1] * len(r) + [0] * len(p)
                    for r, p in zip(rows, pad)]
            return {"input_ids": tensor(ids), "attention_mask": tensor(mask)}
        out = {"input_ids": self.encode(text)}
        if return_offsets_mapping:
            offsets, at = [(0, 0)], 0
            for w in text.split():
                at = text.index(w, at)
                offsets.append((at, at + len(w)))
                at += len(w)
            out["offset_mapping"] = offsets
        return out

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(VOCAB[i] for i in ids if not (skip_special_tokens and i < 3))


def logits_of(ids):
    """The stand-in LM's logits: row t, token v = ((ids[t] + 1) * (v + 1)) % 7 / 3."""
    ids = np.asarray(ids)
    return ((ids[:, None] + 1) * (np.arange(len(VOCAB))[None, :] + 1) % 7) / 3.0


def attention_of(n):
    """[layer][head, query, key] proportional to 1 + 100 l + 10 h + q + key / 10 (each row sums
    to 1, as a softmax does), zero above the diagonal."""
    a = np.zeros((N_LAYER, N_HEAD, n, n))
    for l in range(N_LAYER):
        for h in range(N_HEAD):
            for q in range(n):
                row = 1 + 100 * l + 10 * h + q + np.arange(q + 1) / 10
                a[l, h, q, :q + 1] = row / row.sum()
    return a


class LM:
    device = "fake:0"
    config = types.SimpleNamespace(_name_or_path="fake/lm-1")

    def __init__(self, new_tokens):
        self.new_tokens = new_tokens  # what generate() appends to every row
        self.generate_calls = []

    def __call__(self, input_ids, output_attentions=False, output_hidden_states=False):
        ids = np.asarray(input_ids)[0]
        n = len(ids)
        out = types.SimpleNamespace(logits=tensor(logits_of(ids)[None]), attentions=None,
                                    hidden_states=None)
        if output_attentions:
            out.attentions = tuple(tensor(a[None]) for a in attention_of(n))
        if output_hidden_states:  # [embeddings, after block 1, ...]: 1000 i + 10 t + d
            out.hidden_states = tuple(
                tensor((1000 * i + 10 * np.arange(n)[:, None] + np.arange(4)[None, :])[None])
                for i in range(N_LAYER + 1))
        return out

    def generate(self, input_ids, attention_mask, **kw):
        self.generate_calls.append((np.asarray(input_ids).tolist(), kw))
        new = (self.new_tokens + [PAD] * kw["max_new_tokens"])[:kw["max_new_tokens"]]
        return tensor([list(row) + new for row in np.asarray(input_ids)])


def adapter(new_tokens=(3, 4, EOS), **kw):
    fake_torch.seeds.clear()
    lm = LM(list(new_tokens))
    return lm, ragform.readers.transformers(lm, Tokenizer(), torch=fake_torch, **kw)


# ---------------------------------------------------------------- transformers


def test_transformers_generate_batches_left_padded():
    lm, tr = adapter(batch_size=2)
    r = ragform.readers.as_reader(tr)
    assert r.description == "transformers:fake/lm-1"
    out = tr.generate(["a", "a b c", "d"], {"max_tokens": 5, "temperature": 0.0, "top_k": 0,
                                             "top_p": 1.0, "seed": 0, "seeds": [0, 1, 2],
                                             "stop": [], "ignore_eos": False})
    # Two calls (batch_size 2), the shorter prompt padded on the left with EOS as pad.
    assert [c[0] for c in lm.generate_calls] == [[[EOS, EOS, BOS, 3], [BOS, 3, 4, 5]],
                                                 [[BOS, 6]]]
    assert lm.generate_calls[0][1] == {"max_new_tokens": 5, "pad_token_id": EOS,
                                       "do_sample": False}
    assert out[0] == {"text": "a b", "ids": [3, 4], "finish_reason": "eos", "prompt_tokens": 2}
    assert out[1]["prompt_tokens"] == 4 and fake_torch.seeds == []


def test_transformers_sampling_seeds_stop_and_length():
    lm, tr = adapter(new_tokens=(3, 4, 5), exact_seeds=True)
    params = {"max_tokens": 3, "temperature": 0.7, "top_k": 5, "top_p": 0.9, "seed": 9,
              "seeds": [11, 12], "stop": ["c"], "ignore_eos": False}
    out = tr.generate(["a", "b"], params)
    # One prompt per call, each seeded with its own seed; the text cut before the stop string.
    assert fake_torch.seeds == [11, 12] and len(lm.generate_calls) == 2
    assert lm.generate_calls[0][1]["do_sample"] and lm.generate_calls[0][1]["top_k"] == 5
    assert out[0]["text"] == "a b " and out[0]["finish_reason"] == "stop"
    lm, tr = adapter(new_tokens=(3, 4, 5))
    out = tr.generate(["a"], dict(params, stop=[], seeds=[11]))
    assert out[0]["finish_reason"] == "length" and fake_torch.seeds == [11]


def test_transformers_score_attention_hidden_through_the_protocol():
    _, tr = adapter()
    r = ragform.readers.as_reader(tr)
    # score: log-softmax of the logits at t - 1, read at ids[t], for the continuation's tokens.
    ids = [BOS, 3, 4, 5]
    lg = logits_of(ids)
    logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
    d = r.score_details("a", " b c")
    assert [t["id"] for t in d["tokens"]] == [4, 5] and d["prompt_tokens"] == 2
    assert [t["logprob"] for t in d["tokens"]] == pytest.approx([logp[1, 4], logp[2, 5]])
    assert list(r.score("a b c")) == pytest.approx([logp[0, 3], logp[1, 4], logp[2, 5]])
    # attention: layer -1 is the last, query 2 reads keys 0..2 of every head.
    a = r.attention("a b c", layer=-1, query=2)
    want = attention_of(4)[N_LAYER - 1, :, 2, :3]
    assert (a.layer, a.query_position, a.head_ids) == (N_LAYER - 1, 2, [0, 1])
    assert np.allclose(a.heads, want, rtol=1e-6)
    assert a.mean.tolist() == pytest.approx(want.mean(axis=0).tolist())
    assert r.count_tokens("a b c") == 4
    # hidden: the native numbering, block L's output = hidden_states[L + 1], n_layer (and -1) the
    # final norm's output = the last entry; [tokens, n_embd].
    def state(i):
        return (1000 * i + 10 * np.arange(3)[:, None] + np.arange(4)[None, :]).tolist()
    assert r.hidden("a b", 1).tolist() == state(2)
    assert r.hidden("a b", 0).tolist() == state(1)
    assert r.hidden("a b", N_LAYER).tolist() == state(N_LAYER)
    assert r.hidden("a b", -1).tolist() == state(N_LAYER)
    # The last block's output before the norm is no entry of hidden_states; this stand-in has no
    # decoder layers to hook.
    with pytest.raises(NotImplementedError, match="before the final norm"):
        r.hidden("a b", N_LAYER - 1)


def test_transformers_needs_eager_attention():
    class SdpaLM(LM):  # SDPA and flash kernels return no attention weights
        def __call__(self, input_ids, output_attentions=False, **kw):
            out = super().__call__(input_ids, **kw)
            out.attentions = (None,) * N_LAYER if output_attentions else None
            return out

    tr = ragform.readers.transformers(SdpaLM([EOS]), Tokenizer(), torch=fake_torch)
    with pytest.raises(RuntimeError, match='attn_implementation="eager"'):
        ragform.readers.as_reader(tr).attention("a b")


# ---------------------------------------------------------------- vLLM


class SamplingParams:
    def __init__(self, **kw):
        self.kw = kw


class LLM:
    llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(model="fake/vllm-1"))

    def __init__(self):
        self.tok = Tokenizer()
        self.calls = []

    def get_tokenizer(self):
        return self.tok

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))
        if isinstance(prompts, dict):  # a scoring request: the prompt's own log-probs
            ids = prompts["prompt_token_ids"]
            lg = logits_of(ids)
            logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
            plp = [None] + [{ids[t]: types.SimpleNamespace(logprob=float(logp[t - 1, ids[t]]),
                                                           decoded_token=VOCAB[ids[t]])}
                            for t in range(1, len(ids))]
            return [types.SimpleNamespace(prompt_logprobs=plp)]
        outs = []
        for i, p in enumerate(prompts):
            stop = "b" if i == 1 else None  # the second answer ends on a stop string
            outs.append(types.SimpleNamespace(
                prompt_token_ids=self.tok.encode(p),
                outputs=[types.SimpleNamespace(text=p.upper(), token_ids=[3, 4],
                                               finish_reason="stop" if i < 2 else "length",
                                               stop_reason=stop)]))
        return outs


def test_vllm_generate_one_sampling_params_per_prompt():
    llm = LLM()
    vr = ragform.readers.vllm(llm, sampling_params=SamplingParams)
    r = ragform.readers.as_reader(vr)
    assert r.description == "vllm:fake/vllm-1"
    assert r.capabilities == {"generate": True, "score": True, "attention": False,
                              "hidden": False}
    out = vr.generate(["a", "b c", "d"], {"max_tokens": 4, "temperature": 0.5, "top_k": 0,
                                          "top_p": 0.8, "seed": 0, "seeds": [5, 6, 7],
                                          "stop": ["x"], "ignore_eos": True})
    prompts, params = llm.calls[0]
    assert prompts == ["a", "b c", "d"] and [p.kw["seed"] for p in params] == [5, 6, 7]
    assert params[0].kw == {"max_tokens": 4, "temperature": 0.5, "top_k": -1, "top_p": 0.8,
                            "seed": 5, "stop": ["x"], "ignore_eos": True}
    # EOS (stop_reason None), a stop string, the length limit.
    assert [o["finish_reason"] for o in out] == ["eos", "stop", "length"]
    assert out[1] == {"text": "B C", "ids": [3, 4], "finish_reason": "stop", "prompt_tokens": 3}


def test_vllm_score_and_missing_attention():
    llm = LLM()
    r = ragform.readers.as_reader(ragform.readers.vllm(llm, sampling_params=SamplingParams))
    ids = [BOS, 3, 4, 5]
    lg = logits_of(ids)
    logp = lg - np.log(np.exp(lg).sum(axis=1, keepdims=True))
    d = r.score_details("a", " b c")
    assert [t["piece"] for t in d["tokens"]] == ["b", "c"] and d["prompt_tokens"] == 2
    assert d["sum"] == pytest.approx(logp[1, 4] + logp[2, 5])
    assert llm.calls[-1][1].kw == {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0}
    with pytest.raises(NotImplementedError, match=r"attention is not supported by this reader "
                                                  r"\(VLLMReader has no attention method\)"):
        r.attention("a b")


def test_adapters_import_their_library_lazily():
    # Neither library is installed: building the readers works, running one says what is missing.
    tr = ragform.readers.transformers(LM([EOS]), Tokenizer())
    with pytest.raises(ImportError):
        tr.score("a", " b")
    vr = ragform.readers.vllm(LLM())
    with pytest.raises(ImportError):
        vr.generate(["a"], {"max_tokens": 1, "temperature": 0.0, "top_k": 0, "top_p": 1.0,
                            "seed": 0, "seeds": [0], "stop": [], "ignore_eos": False})
