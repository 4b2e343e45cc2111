#!/usr/bin/env python3
"""Compares two logits files (float32 little-endian [n_positions][n_vocab], the layout of
`ragform logits --positions all` and of llama.cpp's logits dumps) over every full row.

    compare-logits.py REFERENCE.f32 OURS.f32 --vocab 262144

prints one JSON line: positions, top-1 agreement (argmax equal), max |dlogit| over every entry,
mean KL(REFERENCE || OURS) of the softmaxes, and mean |dlogit| of the reference's top-1 in the
first 512 positions and in the last quarter (drift with position). Needs numpy only.
"""
import argparse
import json
import sys

import numpy as np


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference")
    ap.add_argument("ours")
    ap.add_argument("--vocab", type=int, required=True)
    a = ap.parse_args()
    ref = np.memmap(a.reference, dtype="<f4", mode="r")
    our = np.memmap(a.ours, dtype="<f4", mode="r")
    if ref.size != our.size or ref.size % a.vocab:
        print(f"compare-logits: sizes differ or are not multiples of --vocab {a.vocab}: "
              f"{ref.size} and {our.size} floats", file=sys.stderr)
        return 2
    T = ref.size // a.vocab
    ref = ref.reshape(T, a.vocab)
    our = our.reshape(T, a.vocab)
    agree, maxd, kl = 0, 0.0, 0.0
    d_top1 = np.zeros(T)
    for lo in range(0, T, 64):
        r = ref[lo:lo + 64].astype(np.float64)
        o = our[lo:lo + 64].astype(np.float64)
        am = r.argmax(axis=1)
        agree += int((am == o.argmax(axis=1)).sum())
        maxd = max(maxd, float(np.abs(r - o).max()))
        lr, lq = log_softmax(r), log_softmax(o)
        kl += float((np.exp(lr) * (lr - lq)).sum())
        rows = np.arange(r.shape[0])
        d_top1[lo:lo + r.shape[0]] = np.abs(r[rows, am] - o[rows, am])
    out = {"positions": T, "top1_agreement": agree / T, "max_abs_dlogit": maxd,
           "mean_kl": kl / T, "mean_dtop1_first512": float(d_top1[:512].mean()),
           "mean_dtop1_last_quarter": float(d_top1[T - T // 4:].mean()) if T >= 4 else None}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
