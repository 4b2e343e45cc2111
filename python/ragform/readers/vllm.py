"""vLLM's offline engine (`vllm.LLM`) as a ragform reader (docs/python.md, "Your own reader"):

    import ragform
    from vllm import LLM
    reader = ragform.readers.vllm(LLM(model=name))
    ragform.sure.evaluate(reader=reader, pairs=pairs, store="sure.sqlite")

generate: one LLM.generate call per batch of prompts, with one SamplingParams per prompt (each
with its own seed, so a row's sample does not depend on its batch); score: prompt log-probs
(prompt_logprobs=0) of prompt + continuation; tokenize: the engine's tokenizer. vLLM exposes no
attention weights or hidden states, so attention() and hidden() are not defined (asking for them
is ragform's NotImplementedError). vllm is imported only when a method runs; `sampling_params=`
takes a stand-in for vllm.SamplingParams (the package's tests pass one).
"""
from ._common import cut_at_stop, score_split


class VLLMReader:
    """The reader protocol over a vllm.LLM; see the module's docstring."""

    chat_mode = "raw"

    def __init__(self, llm, name=None, sampling_params=None):
        self.llm = llm
        self._name = name
        self._sp = sampling_params

    def describe(self):
        """vllm:<model name>: the run store's reader."""
        if self._name:
            return f"vllm:{self._name}"
        cfg = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        return f"vllm:{getattr(cfg, 'model', None) or type(self.llm).__name__}"

    def tokenize(self, text):
        return list(self.llm.get_tokenizer().encode(text))

    def generate(self, prompts, params):
        sp = self._sampling_params
        per_prompt = [sp(max_tokens=params["max_tokens"], temperature=params["temperature"],
                         top_k=params["top_k"] if params["top_k"] > 0 else -1,
                         top_p=params["top_p"], seed=int(seed), stop=list(params["stop"]),
                         ignore_eos=params["ignore_eos"])
                      for seed in params["seeds"]]
        outs = self.llm.generate(list(prompts), per_prompt, use_tqdm=False)
        return [self._result(o) for o in outs]

    def score(self, prompt, continuation):
        prompt_ids = self.tokenize(prompt)
        ids = self.tokenize(prompt + continuation) if continuation else prompt_ids
        split = score_split(prompt_ids, ids, continuation)
        sp = self._sampling_params(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        out = self.llm.generate({"prompt_token_ids": ids}, sp, use_tqdm=False)[0]
        tokens = []
        for t in range(split, len(ids)):
            lp = out.prompt_logprobs[t][ids[t]]  # the prompt's own token is always listed
            tokens.append({"id": int(ids[t]), "piece": getattr(lp, "decoded_token", "") or "",
                           "logprob": float(lp.logprob)})
        return {"tokens": tokens, "sum": float(sum(t["logprob"] for t in tokens)),
                "prompt_tokens": split}

    @property
    def _sampling_params(self):
        if self._sp is None:
            from vllm import SamplingParams
            self._sp = SamplingParams
        return self._sp

    @staticmethod
    def _result(request_output):
        o = request_output.outputs[0]
        # vLLM's "stop" is an EOS (stop_reason None) or a stop string / token (stop_reason set);
        # it already leaves the stop string out of the text, the cut is for other stop tokens.
        finish = o.finish_reason or "length"
        if finish == "stop":
            finish = "eos" if o.stop_reason is None else "stop"
        text, _ = cut_at_stop(o.text, [o.stop_reason] if isinstance(o.stop_reason, str) else [])
        return {"text": text, "ids": [int(i) for i in o.token_ids], "finish_reason": finish,
                "prompt_tokens": len(request_output.prompt_token_ids or [])}


def vllm(llm, name=None, sampling_params=None):
    """A ragform reader over a vllm.LLM (VLLMReader)."""
    return VLLMReader(llm, name=name, sampling_params=sampling_params)
