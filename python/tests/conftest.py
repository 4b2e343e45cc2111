"""Fixtures of the Python tests: the shared folder (../shared beside the checkout, or
$RAGFORM_SHARED), the stories260K model and the CLI binary the results are compared with
($RAGFORM_BIN, default build/ci/bin/ragform). A missing file fails the test, never skips it."""
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shared_dir():
    return Path(os.environ.get("RAGFORM_SHARED") or ROOT.parent / "shared")


def shared_file(rel):
    p = shared_dir() / rel
    assert p.is_file(), f"missing shared file {p}"
    return p


@pytest.fixture(scope="session")
def model_path():
    return str(shared_file("fixtures/models/stories260K.gguf"))


@pytest.fixture(scope="session")
def ragform_bin():
    b = Path(os.environ.get("RAGFORM_BIN") or ROOT / "build/ci/bin/ragform")
    assert b.is_file(), f"missing CLI binary {b} (set RAGFORM_BIN)"
    return str(b)


@pytest.fixture(scope="session")
def model(model_path):
    import ragform
    return ragform.Model(model_path, threads=2)


@pytest.fixture(scope="session")
def cli(ragform_bin):
    """cli(*args, json_out=True): runs `ragform args...`, returns parsed JSON (or stdout)."""
    def run(*args, json_out=True, input=None):
        env = dict(os.environ, RAGFORM_PROGRESS="never")
        r = subprocess.run([ragform_bin, *map(str, args)], capture_output=True, env=env,
                           input=input)
        assert r.returncode == 0, r.stderr.decode()
        out = r.stdout.decode()
        return json.loads(out) if json_out else out
    return run


@pytest.fixture(scope="session")
def nq_records():
    """The first 12 records of lost-in-the-middle's NQ-open oracle file."""
    out = []
    with gzip.open(shared_file("data/lost-in-the-middle/nq-open-oracle.jsonl.gz"), "rt") as f:
        for line in f:
            out.append(json.loads(line))
            if len(out) == 12:
                break
    return out
