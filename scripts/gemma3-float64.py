#!/usr/bin/env python3
"""A third opinion for the transformers comparison (docs/engine.md, "Against Hugging Face
transformers"): Gemma 3's forward pass in float64 with numpy, written from the formulas, over an
F32 GGUF, and how far ragform (both numerics) and transformers are from it.

    PYTHONPATH=build/ci/python-transformers $RAGFORM_TRANSFORMERS_PYTHON \\
        scripts/gemma3-float64.py MODEL-F32.gguf PROMPT.txt [--rope exact|ggml|transformers]
        [--gelu exact|table] [--positions 40]

--rope and --gelu round the reference like one of the engines instead of exactly (to show which
rounding explains a difference): ggml = angle of pair i by i repeated float32 products and GELU
read from an F16 table; transformers = one float32 product pos * inv_freq[i]. Prints, per layer,
max |d| of the last token's attention rows (4 heads x T keys) from the reference, and the max |d|
of logits and next-token probabilities at --positions evenly spread positions (the full float64
logits of every position would be T x 262144 x 8 bytes). Runs ~2 minutes per engine on 2 cores
for 1,900 tokens. Needs numpy and gguf; ragform and transformers are compared when importable.
"""
import argparse
import sys

import numpy as np


def load(path):
    import gguf
    r = gguf.GGUFReader(path)
    arch = r.fields["general.architecture"].contents()
    if arch != "gemma3":
        sys.exit(f"gemma3-float64: {path} is '{arch}', not gemma3")

    def meta(key, default=None):
        f = r.fields.get(f"gemma3.{key}")
        return f.contents() if f is not None else default
    hp = dict(E=int(meta("embedding_length")), L=int(meta("block_count")),
              H=int(meta("attention.head_count")), KV=int(meta("attention.head_count_kv")),
              D=int(meta("attention.key_length")),
              eps=float(meta("attention.layer_norm_rms_epsilon")),
              base=float(meta("rope.freq_base")),
              base_swa=float(meta("rope.freq_base_swa", 10000.0)),
              window=int(meta("attention.sliding_window")))
    W = {}
    for t in r.tensors:
        if t.tensor_type != 0:  # GGML_TYPE_F32
            sys.exit(f"gemma3-float64: {t.name} is not F32 (make an F32 copy: ragform quantize)")
        W[t.name] = np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])
    return hp, W


def angles(T, D, base, mode):
    half = D // 2
    pos = np.arange(T)
    if mode == "exact":
        return pos[:, None] * base ** (-np.arange(0, D, 2) / D)
    if mode == "ggml":  # theta_i = theta_{i-1} * base^(-2/D), in float32
        scale = np.float32(np.power(np.float32(base), np.float32(-2.0 / D)))
        out = np.zeros((T, half), np.float32)
        th = pos.astype(np.float32)
        for i in range(half):
            out[:, i] = th
            th = (th * scale).astype(np.float32)
        return out
    inv = (np.float32(1) / np.power(np.float32(base), np.arange(0, D, 2, dtype=np.float32) /
                                    np.float32(D))).astype(np.float32)
    return (pos.astype(np.float32)[:, None] * inv[None, :]).astype(np.float32)


def gelu(x, mode):
    def tanh_form(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
    if mode == "exact":
        return tanh_form(x)
    h = x.astype(np.float16).astype(np.float32)  # the table: half in, GELU of it, half out
    g = tanh_form(h).astype(np.float32).astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, g))


def forward(hp, W, ids, rope_mode, gelu_mode):
    """The final normalised hidden states [T, E] and the last token's attention rows per layer."""
    T, E, H, KV, D = len(ids), hp["E"], hp["H"], hp["KV"], hp["D"]
    f64 = lambda name: W[name].astype(np.float64)  # noqa: E731

    def rms(v, w):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + hp["eps"]) * w

    def rope(v, ang):
        c, s = np.cos(ang), np.sin(ang)
        if rope_mode != "exact":  # the engines round cos and sin to float32
            c, s = c.astype(np.float32).astype(np.float64), s.astype(np.float32).astype(np.float64)
        c, s = c[:, None, :], s[:, None, :]
        a, b = v[..., :D // 2], v[..., D // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)
    x = f64("token_embd.weight")[ids] * np.sqrt(E)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    rows = []
    for il in range(hp["L"]):
        p = f"blk.{il}."
        sliding = il % 6 < 5
        h = rms(x, f64(p + "attn_norm.weight"))
        q = rms((h @ f64(p + "attn_q.weight").T).reshape(T, H, D), f64(p + "attn_q_norm.weight"))
        k = rms((h @ f64(p + "attn_k.weight").T).reshape(T, KV, D), f64(p + "attn_k_norm.weight"))
        v = (h @ f64(p + "attn_v.weight").T).reshape(T, KV, D)
        ang = angles(T, D, hp["base_swa"] if sliding else hp["base"], rope_mode)
        q, k = rope(q, ang), rope(k, ang)
        out = np.zeros((T, H, D))
        for hh in range(H):
            g = hh // (H // KV)
            s = q[:, hh] @ k[:, g].T / np.sqrt(D)
            hidden = j > i
            if sliding:
                hidden = hidden | (i - j >= hp["window"])
            s = np.where(hidden, -np.inf, s)
            s = np.exp(s - s.max(-1, keepdims=True))
            a = s / s.sum(-1, keepdims=True)
            if hh == 0:
                rows.append(np.zeros((H, T)))
            rows[-1][hh] = a[-1]
            out[:, hh] = a @ v[:, g]
        o = out.reshape(T, H * D) @ f64(p + "attn_output.weight").T
        x = x + rms(o, f64(p + "post_attention_norm.weight"))
        h = rms(x, f64(p + "ffn_norm.weight"))
        ff = gelu(h @ f64(p + "ffn_gate.weight").T, gelu_mode) * (h @ f64(p + "ffn_up.weight").T)
        x = x + rms(ff @ f64(p + "ffn_down.weight").T, f64(p + "post_ffw_norm.weight"))
        print(f"float64 reference: layer {il} done", file=sys.stderr, flush=True)
    return rms(x, f64("output_norm.weight")), rows


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("prompt_file")
    ap.add_argument("--rope", choices=["exact", "ggml", "transformers"], default="exact")
    ap.add_argument("--gelu", choices=["exact", "table"], default="exact")
    ap.add_argument("--positions", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    prompt = open(a.prompt_file, encoding="utf-8").read()
    hp, W = load(a.model)
    engines = {}
    try:
        import ragform
        for n in ["ggml", "transformers"]:
            engines[f"ragform numerics={n}"] = ragform.Model(a.model, threads=a.threads,
                                                             numerics=n)
        ids = engines["ragform numerics=ggml"].tokenize(prompt)
    except ImportError:
        ragform = None
    hf = tok = None
    try:
        import torch
        import transformers
        from pathlib import Path
        torch.set_num_threads(a.threads)
        p = Path(a.model)
        tok = transformers.AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
        hf = transformers.AutoModelForCausalLM.from_pretrained(
            str(p.parent), gguf_file=p.name, dtype=torch.float32,
            attn_implementation="eager").eval()
        if ragform is None:
            ids = tok(prompt)["input_ids"]
    except ImportError:
        pass
    if ragform is None and hf is None:
        sys.exit("gemma3-float64: needs ragform or transformers to tokenise the prompt")
    T = len(ids)
    xs, ref_rows = forward(hp, W, ids, a.rope, a.gelu)
    pos = sorted(set(np.linspace(0, T - 1, a.positions).astype(int).tolist()))
    ref_logits = xs[pos] @ W["token_embd.weight"].astype(np.float64).T
    ref_probs = softmax(ref_logits)
    print(f"{T} tokens; reference rope={a.rope} gelu={a.gelu}; max |d| from it:")
    results = {}
    for name, m in engines.items():
        logits = m.logits(prompt, "all")[pos]
        rows = [m.attention(prompt, layer).heads for layer in range(hp["L"])]
        results[name] = (logits, rows)
    if hf is not None:
        with torch.inference_mode():
            out = hf(torch.tensor([ids]), output_attentions=True)
        results["transformers"] = (out.logits[0].float().numpy()[pos],
                                   [x[0, :, -1, :].float().numpy() for x in out.attentions])
        del out
    for name, (logits, rows) in results.items():
        att = [float(np.abs(r.astype(np.float64) - ref).max()) for r, ref in zip(rows, ref_rows)]
        print(f"  {name}: logits {np.abs(logits - ref_logits).max():.2e}, probabilities "
              f"{np.abs(softmax(logits.astype(np.float64)) - ref_probs).max():.2e}, attention "
              f"{max(att):.2e} (per layer: {' '.join(f'{d:.1e}' for d in att)})")


if __name__ == "__main__":
    main()
