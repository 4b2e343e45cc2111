"""docs/python.md's API reference is what python/gen_api_docs.py generates from the docstrings."""
import sys
from pathlib import Path

import ragform  # noqa: F401  (the installed package, before python/ joins sys.path)

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_is_current():
    sys.path.insert(0, str(ROOT / "python"))
    try:
        import gen_api_docs
    finally:
        sys.path.pop(0)
    doc = (ROOT / "docs/python.md").read_text(encoding="utf-8")
    begin, end = gen_api_docs.BEGIN, gen_api_docs.END
    assert begin in doc and end in doc
    current = doc.split(begin, 1)[1].split(end, 1)[0].strip("\n")
    assert current == gen_api_docs.reference().strip("\n"), (
        "docs/python.md is stale: run build/venv/bin/python python/gen_api_docs.py --write "
        "docs/python.md")
