"""Progress bars for long loops: tqdm when it is importable, else a plain one-line counter on
stderr (only when stderr is a terminal, so logs and notebooks stay clean)."""
import sys
import time


class _Plain:
    def __init__(self, desc, total):
        self.desc, self.total, self.n = desc, total, 0
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()

    def update_to(self, done, total):
        self.n, self.total = done, total or self.total
        if self.tty:
            rate = self.n / max(time.monotonic() - self.t0, 1e-9)
            sys.stderr.write(f"\r{self.desc}: {self.n}/{self.total} ({rate:.1f}/s)")
            sys.stderr.flush()

    def close(self):
        if self.tty:
            sys.stderr.write("\n")


class _Tqdm:
    def __init__(self, desc, total):
        from tqdm.auto import tqdm
        self.bar = tqdm(desc=desc, total=total or None)

    def update_to(self, done, total):
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self):
        self.bar.close()


class Progress:
    """progress(done, total) callable for the C++ loops; a context manager that closes the bar.
    show=False: no bar (the loop still stops on Ctrl-C)."""

    def __init__(self, desc, total=0, show=True):
        self.bar = None
        if show:
            try:
                self.bar = _Tqdm(desc, total)
            except ImportError:
                self.bar = _Plain(desc, total)

    def __call__(self, done, total):
        if self.bar is not None:
            self.bar.update_to(done, total)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
