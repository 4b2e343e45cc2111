"""Two Models in two Python threads: the same generations as one after the other, and the calls
really overlap (the GIL is released during forward passes)."""
import threading
import time

import ragform

PROMPTS = ["Once upon a time", "Lily and Tom", "The cat sat", "One day, a little bird"]


def generations(m):
    return [m.generate(p, n_predict=24) for p in PROMPTS]


def test_two_models_two_threads_equal_sequence(model_path):
    a = ragform.Model(model_path, threads=1)
    b = ragform.Model(model_path, threads=1)
    alone = [generations(a), generations(b)]
    got = [None, None]

    def run(i, m):
        got[i] = [generations(m) for _ in range(3)]

    ts = [threading.Thread(target=run, args=(i, m)) for i, m in enumerate((a, b))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got[0] == [alone[0]] * 3
    assert got[1] == [alone[1]] * 3
    assert alone[0] == alone[1]


def test_gil_released_during_forward_pass(model_path):
    m = ragform.Model(model_path, threads=1)
    calls = []  # (start, end) of each generate in the worker thread

    def work():
        for _ in range(4):
            t0 = time.monotonic()
            m.generate("Once upon a time", n_predict=256, ignore_eos=True)
            calls.append((t0, time.monotonic()))

    t = threading.Thread(target=work)
    ticks = []
    t.start()
    while t.is_alive():  # the main thread runs Python code while the worker is in C++
        ticks.append(time.monotonic())
    t.join()
    inside = sum(1 for s, e in calls for x in ticks if s + 0.002 < x < e - 0.002)
    assert all(e - s > 0.01 for s, e in calls), calls  # long enough to tell
    # With the GIL held through a call the main thread could not tick inside it at all.
    assert inside > 100, (inside, calls)
