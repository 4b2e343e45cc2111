"""A HuggingFace `transformers` causal LM as a ragform reader (docs/python.md, "Your own reader"):

    import ragform, torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(name)
    lm = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16,
                                              attn_implementation="eager").to("cuda")
    reader = ragform.readers.transformers(lm, tok)
    ragform.cnorm.calibrate(reader=reader, records=recs)

generate: the model's own generate(), `batch_size` prompts per call (left-padded), greedy or
sampled; prompt log-probs (score) and attention from one forward pass each; hidden states from
output_hidden_states. Everything runs on the device the model is on. torch and transformers are
imported only when a method runs, so the package needs neither; `torch=` takes a stand-in module
(the package's tests pass a numpy one).

Prompts are tokenised with split_special_tokens=True: a control token's text typed inside a
document or question ("<start_of_turn>", "<eos>", "<bos>") is text, as ragform's own tokenizer
reads it, not the control token transformers' tokenizer makes of it by default; the tokenizer's
own special tokens (Gemma's one BOS) are still added once. (A tokenizer whose __call__ takes
neither split_special_tokens nor **kwargs is called without it.)
"""
import numpy as np

from ._common import cut_at_stop, resolve, score_split


class TransformersReader:
    """The reader protocol over (model, tokenizer); see the module's docstring.

    Sampling (temperature > 0) seeds torch with the seed of each batch's first prompt, so a sampled
    answer depends on the prompts batched with it; exact_seeds=True generates sampled prompts one
    at a time, each with its own seed (ragform's rule: a row's answer does not depend on its batch).
    """

    chat_mode = "raw"

    def __init__(self, model, tokenizer, batch_size=8, exact_seeds=False, name=None, torch=None):
        if batch_size < 1:
            raise ValueError("batch_size: must be >= 1")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.exact_seeds = batch_size, exact_seeds
        self._name = name
        self._torch_module = torch

    # ------------------------------------------------------------------ protocol

    def describe(self):
        """transformers:<model name>: the run store's reader (two models never share a run)."""
        cfg = getattr(self.model, "config", None)
        name = self._name or getattr(cfg, "_name_or_path", None) or type(self.model).__name__
        return f"transformers:{name}"

    def tokenize(self, text):
        """The ids the model is fed for `text` (the tokenizer's special tokens, BOS, included;
        control-token text inside `text` stays text: the module's docstring)."""
        return list(self._encode(text)["input_ids"])

    def generate(self, prompts, params):
        out = []
        sampled = params["temperature"] > 0
        step = 1 if sampled and self.exact_seeds else self.batch_size
        for b in range(0, len(prompts), step):
            out += self._generate_batch(prompts[b:b + step], params, params["seeds"][b])
        return out

    def score(self, prompt, continuation):
        prompt_ids = self.tokenize(prompt)
        ids = self.tokenize(prompt + continuation) if continuation else prompt_ids
        split = score_split(prompt_ids, ids, continuation)
        # Only the rows that predict the scored tokens (positions split - 1 .. n - 2) are needed:
        # the LM head over Gemma's 262k-word vocabulary at every prompt position is most of a
        # forward pass, and their float64 log-softmax gigabytes.
        logits = self._forward(ids, keep=len(ids) - split + 1).logits[0]
        first = len(ids) - logits.shape[0]  # the position of logits' row 0
        logp = _log_softmax(self._numpy(logits[split - 1 - first:len(ids) - 1 - first])
                            .astype(np.float64))
        tokens = [{"id": int(ids[t]), "piece": self._piece(ids[t]),
                   "logprob": float(logp[t - split, ids[t]])} for t in range(split, len(ids))]
        return {"tokens": tokens, "sum": float(sum(t["logprob"] for t in tokens)),
                "prompt_tokens": split}

    def attention(self, prompt, layers, heads, positions):
        ids = self.tokenize(prompt)
        att = self._forward(ids, keep=1, output_attentions=True).attentions
        if att is None or any(a is None for a in att):
            raise RuntimeError("attention: the model returned no attention weights; load it with "
                               "attn_implementation=\"eager\" (SDPA and flash kernels keep none)")
        pieces = [self._piece(i) for i in ids]
        rows = []
        for layer in layers:
            li = resolve(layer, len(att))
            a = self._numpy(att[li][0]).astype(np.float32)  # [heads, queries, keys]
            head_ids = list(heads) if heads else list(range(a.shape[0]))
            for pos in positions:
                q = resolve(pos, len(ids))
                rows.append({"layer": li, "query_position": q, "head_ids": head_ids,
                             "heads": np.ascontiguousarray(a[head_ids, q, :q + 1]),
                             "ids": ids, "pieces": pieces})
        return rows

    def hidden(self, prompt, layer):
        """The residual stream after block `layer` (0-based), n_layer (or -1) the final norm's
        output: the native reader's numbering. transformers' hidden_states[i] is the input of
        block i (0 = the embeddings) and its last entry the final norm's output, so block L's
        output is hidden_states[L + 1], and the last block's (before the norm), which is not
        among them, is taken from that block by a forward hook. (Read as hidden_states[layer],
        every layer was one block early: SpotlightRAG's layer 1 picked other sentences than the
        native reader's; issue 44.)"""
        enc = self._encode(prompt, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        blocks = self._decoder_layers()
        last = []
        hook = None if blocks is None else blocks[-1].register_forward_hook(
            lambda _m, _i, out: last.append(out[0] if isinstance(out, (tuple, list)) else out))
        try:
            hs = self._forward(ids, keep=1, output_hidden_states=True).hidden_states
        finally:
            if hook is not None:
                hook.remove()
        n_layer = len(hs) - 1
        li = resolve(layer, n_layer + 1)
        if li == n_layer:
            t = hs[n_layer]
        elif li < n_layer - 1:
            t = hs[li + 1]
        elif last:
            t = last[-1]
        else:
            raise NotImplementedError(
                f"hidden: layer {li} (the last block's output, before the final norm) is not "
                "among transformers' hidden_states, and the model's decoder layers were not found "
                "to read it from")
        states = self._numpy(t[0]).astype(np.float32)
        # The text each token covers, so SpotlightRAG aligns tokens to words; special tokens
        # cover nothing.
        pieces = [prompt[s:e] for s, e in enc["offset_mapping"]]
        return {"states": states, "pieces": pieces, "ids": ids}

    # ------------------------------------------------------------------ the engine

    @property
    def _torch(self):
        if self._torch_module is None:
            import torch
            self._torch_module = torch
        return self._torch_module

    def _encode(self, text, **kw):
        """The tokenizer over `text` (a string or a list), special-token text split as text."""
        if self._splits_special():
            kw["split_special_tokens"] = True
        return self.tokenizer(text, **kw)

    def _splits_special(self):
        if not hasattr(self, "_split_special"):
            import inspect
            try:
                params = inspect.signature(self.tokenizer.__call__).parameters.values()
            except (TypeError, ValueError):
                params = ()
            self._split_special = any(p.name == "split_special_tokens" or
                                      p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        return self._split_special

    def _device(self):
        return getattr(self.model, "device", None) or next(self.model.parameters()).device

    def _forward(self, ids, keep=None, **kw):
        """One forward pass over `ids`; keep=n asks for the logits of the last n positions only
        (transformers' logits_to_keep, where the model's forward takes it; otherwise all)."""
        torch = self._torch
        if keep is not None and self._keeps_logits():
            kw["logits_to_keep"] = int(keep)
        with torch.no_grad():
            x = torch.tensor([list(ids)], device=self._device())
            return self.model(input_ids=x, **kw)

    def _decoder_layers(self):
        """The model's list of decoder blocks (model.layers in Llama, Gemma, Qwen and most;
        transformer.h in GPT-2's family), or None."""
        for path in ("model.layers", "model.model.layers", "transformer.h", "layers"):
            obj = self.model
            try:
                for part in path.split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            if len(obj) and hasattr(obj[-1], "register_forward_hook"):
                return obj
        return None

    def _keeps_logits(self):
        if not hasattr(self, "_logits_to_keep"):
            import inspect
            fwd = getattr(self.model, "forward", None)
            try:
                self._logits_to_keep = fwd is not None and \
                    "logits_to_keep" in inspect.signature(fwd).parameters
            except (TypeError, ValueError):
                self._logits_to_keep = False
        return self._logits_to_keep

    @staticmethod
    def _numpy(t):
        return t.float().cpu().numpy()

    def _piece(self, token_id):
        return self.tokenizer.decode([int(token_id)])

    def _generate_batch(self, prompts, params, seed):
        torch, tok = self._torch, self.tokenizer
        # Decoder-only models continue from the last position: pad on the left.
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        enc = self._encode(list(prompts), return_tensors="pt", padding=True)
        enc = {k: v.to(self._device()) for k, v in enc.items()}
        kw = {"max_new_tokens": params["max_tokens"], "pad_token_id": tok.pad_token_id}
        if params["temperature"] > 0:
            torch.manual_seed(int(seed))
            kw.update(do_sample=True, temperature=params["temperature"], top_p=params["top_p"],
                      top_k=params["top_k"])
        else:
            kw.update(do_sample=False)
        if params["ignore_eos"]:
            kw["min_new_tokens"] = params["max_tokens"]
        with torch.no_grad():
            out = self.model.generate(**enc, **kw)
        width = enc["input_ids"].shape[1]
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        return [self._result(row[width:].tolist(), params, int(n))
                for row, n in zip(out, prompt_tokens)]

    def _result(self, ids, params, prompt_tokens):
        tok = self.tokenizer
        finish = "length"
        if not params["ignore_eos"] and tok.eos_token_id in ids:
            ids, finish = ids[:ids.index(tok.eos_token_id)], "eos"
        text, stopped = cut_at_stop(tok.decode(ids, skip_special_tokens=True), params["stop"])
        if stopped:
            finish = "stop"
        return {"text": text, "ids": [int(i) for i in ids], "finish_reason": finish,
                "prompt_tokens": prompt_tokens}


def _log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def transformers(model, tokenizer, batch_size=8, exact_seeds=False, name=None, torch=None):
    """A ragform reader over a `transformers` causal LM and its tokenizer (TransformersReader)."""
    return TransformersReader(model, tokenizer, batch_size=batch_size, exact_seeds=exact_seeds,
                              name=name, torch=torch)
